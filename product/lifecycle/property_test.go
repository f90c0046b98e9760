package lifecycle

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Property tests of the lifecycle machine: event sequences drawn from
// seeded random bytes (and, under go test -fuzz, from the fuzzer), checked
// step by step and replayed from their journal.

// run plays events through Step the way a kernel would,
// keeping the journal of accepted events, and checks the machine's
// properties at every step.
type run struct {
	tb          testing.TB
	state       State
	journal     []journalRow
	invocations map[string]bool
	history     []State
}

// journalRow is an accepted event in its journal form.
type journalRow struct {
	kind    EventKind
	payload []byte
	digest  string
}

func newRun(tb testing.TB) *run {
	return &run{tb: tb, invocations: map[string]bool{}, history: []State{{}}}
}

// step applies ev and checks: a refusal changes nothing and is typed; an
// accepted event yields a state that holds every invariant, survives its
// canonical encoding, moves Seq by one, returns exactly the transactional
// effects and then Pending of the new state with at most one
// invocation (never one issued before), and steps the same from its
// journal form.
func (r *run) step(ev Event) ([]Effect, error) {
	tb := r.tb
	tb.Helper()
	prev := r.state
	saved := prev.clone()
	next, fx, err := Step(prev, ev)
	if !cmp.Equal(prev, saved) {
		tb.Fatalf("Step changed its input state")
	}
	if err != nil {
		var se *StepError
		if !errors.As(err, &se) || fx != nil || !cmp.Equal(next, saved) {
			tb.Fatalf("refusal %v: not typed, or it returned effects %v or another state", err, fx)
		}
		if prev.Status.Terminal() && se.Code != RefusalTerminal && se.Code != RefusalInvalidPayload {
			tb.Fatalf("a terminal state refused with %s", se.Code)
		}
		return nil, err
	}
	if prev.Status.Terminal() {
		tb.Fatalf("a terminal state accepted %s", ev.Kind())
	}
	nextDigest := next.Digest()
	if err := next.check(); err != nil {
		tb.Fatalf("after %s in %s: invalid state: %v\n%s", ev.Kind(), prev.Where(), err, next.Canonical())
	}
	if next.Seq != prev.Seq+1 || next.RepairsUsed < prev.RepairsUsed {
		tb.Fatalf("seq %d -> %d, repairs %d -> %d", prev.Seq, next.Seq, prev.RepairsUsed, next.RepairsUsed)
	}
	decoded, err := DecodeState(next.Canonical())
	if err != nil || decoded.Digest() != nextDigest {
		tb.Fatalf("the canonical state does not decode to itself: %v", err)
	}
	pending := Pending(next)
	var tx []Effect
	for _, e := range fx {
		if _, ok := e.(ConsumeRepair); ok {
			tx = append(tx, e)
		}
	}
	if !slices.Equal(fx, append(tx, pending...)) || len(tx) > 1 || len(pending) != 1 {
		tb.Fatalf("effects %v; want the transactional ones, then pending %v", fx, pending)
	}
	if len(tx) == 1 && (next.RepairsUsed != 1 || prev.RepairsUsed != 0) {
		tb.Fatalf("consume-repair without consuming the reservation")
	}
	if inv, ok := pending[0].(Invoke); ok {
		if r.invocations[inv.Invocation] {
			tb.Fatalf("invocation %s issued twice", inv.Invocation)
		}
		r.invocations[inv.Invocation] = true
	}
	kind, payload, digest := EncodeEvent(ev)
	again, err := DecodeEvent(string(kind), payload)
	if err != nil || EventDigest(again) != digest {
		tb.Fatalf("the journal form of %s does not decode to itself: %v\n%s", kind, err, payload)
	}
	if replayed, _, err := Step(prev, again); err != nil || replayed.Digest() != nextDigest {
		tb.Fatalf("the decoded %s steps differently: %v", kind, err)
	}
	r.state = next
	r.journal = append(r.journal, journalRow{kind, payload, digest})
	r.history = append(r.history, next)
	return fx, nil
}

// replay rebuilds the state from the journal alone, checking each payload
// digest as a reader of change_events would.
func (r *run) replay() State {
	r.tb.Helper()
	s := State{}
	for i, row := range r.journal {
		ev, err := DecodeEvent(string(row.kind), row.payload)
		if err != nil {
			r.tb.Fatalf("journal row %d: %v", i+1, err)
		}
		if EventDigest(ev) != row.digest {
			r.tb.Fatalf("journal row %d: payload digest mismatch", i+1)
		}
		if s, _, err = Step(s, ev); err != nil {
			r.tb.Fatalf("journal row %d does not replay: %v", i+1, err)
		}
	}
	return s
}

// entropy is a deterministic source of choices read from bytes; past the
// end it returns zeros. Fuzzing and the seeded random walks share it.
type entropy struct {
	data []byte
	i    int
}

func (e *entropy) byte() byte {
	if e.i >= len(e.data) {
		return 0
	}
	e.i++
	return e.data[e.i-1]
}

func (e *entropy) intn(n int) int { return int(e.byte()) % n }

// chance is true with probability about k/256.
func (e *entropy) chance(k int) bool { return int(e.byte()) < k }

// genEvent draws an event for s: mostly what a parent would send for the
// state's phase (with outcomes drawn at random), sometimes a well-formed
// event of any kind, sometimes a stale or mis-bound one, sometimes a
// malformed one. It reads the state's fields, never the machine's
// transition logic.
func genEvent(e *entropy, s State, history []State) Event {
	kind := eventKinds[e.intn(len(eventKinds))]
	if !e.chance(48) {
		kind = plausibleKind(e, s)
	}
	ev := WellFormed(s, kind)
	switch ev := ev.(type) {
	case ExploreCompleted:
		ev.Evidence = ev.Evidence[:e.intn(2)]
		ev.Cost = genCost(e)
		if e.chance(48) {
			ev.Cost.Runs = 2 + e.intn(MaxRunsPerPhase-1) // evidence workers
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case ImplementCompleted:
		ev.Cost = genCost(e)
		ev.Files = 1 + e.intn(MaxPatchFiles)
		switch e.intn(8) {
		case 0:
			ev.Outcome, ev.Patch, ev.Files, ev.Bytes, ev.Reasons = PatchRejected, "", 0, 0, []string{"x.go: outside the declared scopes"}
		case 1:
			ev.Patch = orID(s.Prior.Patch, "prior")
		case 2:
			ev.Base = SampleID("drifted")
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case TestCompleted:
		ev.Cost = genCost(e)
		outcomes := make([]TestOutcome, len(ev.Evidence.Results))
		for i := range outcomes {
			outcomes[i] = []TestOutcome{TestPassed, TestPassed, TestFailed, TestError}[e.intn(4)]
		}
		ev.Evidence = testEvidence(s.Freeze, ev.Evidence.Patch, outcomes)
		if e.chance(16) && len(ev.Evidence.Results) > 0 {
			ev.Evidence.Results = ev.Evidence.Results[1:]
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case ReviewCompleted:
		ev.Cost = genCost(e)
		if e.chance(16) {
			ev.Review.Reviewer = s.Freeze.Profile(RoleVerifier)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case VerifyCompleted:
		ev.Cost = genCost(e)
		outcome := Verdicts[e.intn(len(Verdicts))]
		ev.Verification = verification(s, s.Freeze, ev.Verification.Patch, outcome)
		if e.chance(16) {
			ev.Verification.Verifier = s.Freeze.Profile(RoleReviewer)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case PhaseFailed:
		ev.Failure = failures[e.intn(len(failures))]
		ev.Cost = genCost(e)
		if ev.Phase == PhaseExplore && e.chance(48) {
			ev.Cost.Runs = 2 + e.intn(MaxRunsPerPhase-1)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case ApprovalGranted:
		if e.chance(48) && len(history) > 1 {
			ev.Binding.Lifecycle = history[e.intn(len(history))].Digest()
		}
		if e.chance(24) {
			ev.Binding.Patch = orID(s.Prior.Patch, "prior")
		}
		return ev
	case ApplyRolledBack:
		ev.Cause = rollbackCauses[e.intn(len(rollbackCauses))]
		return ev
	case Created:
		if e.chance(64) {
			bad := badFreezes()
			ev.Freeze = bad[e.intn(len(bad))].freeze
		}
		if e.chance(128) {
			ev.Freeze.Budget = Budget{Tokens: int64(1 + e.intn(5000)), WallMs: int64(1 + e.intn(50000)), WorkerRuns: 1 + e.intn(12)}
		}
		return ev
	}
	return ev
}

// plausibleKind is the kind a parent would most likely send in s.
func plausibleKind(e *entropy, s State) EventKind {
	switch s.Status {
	case "":
		return EventCreated
	case StatusRunning:
		switch {
		case e.chance(20):
			return EventPhaseFailed
		case e.chance(4):
			return EventCancelRequested
		}
		return map[Phase]EventKind{PhaseExplore: EventExploreCompleted, PhaseImplement: EventImplementCompleted,
			PhaseTest: EventTestCompleted, PhaseReview: EventReviewCompleted, PhaseVerify: EventVerifyCompleted}[s.Phase]
	case StatusAwaitingApproval:
		return EventApprovalGranted
	case StatusApproved:
		if e.chance(64) {
			return EventApplyConflicted
		}
		return EventApplyStarted
	case StatusApplying:
		if e.chance(64) {
			return EventApplyRolledBack
		}
		return EventApplyCompleted
	}
	return EventCancelRequested
}

func genCost(e *entropy) Cost {
	c := Cost{Tokens: int64(e.intn(4)) * 250, WallMs: int64(e.intn(4)) * 2500}
	if e.chance(4) {
		c.Tokens = MaxTokens
	}
	return c
}

// maybeStale sometimes points a completion at an earlier attempt or
// breaks its invocation id.
func maybeStale(e *entropy, s State, inv string) string {
	switch e.intn(16) {
	case 0:
		return InvocationID(orString(s.Lifecycle, SampleLifecycleID), s.Phase, max(*s.Attempts.of(s.Phase)-1, 0))
	case 1:
		return "b3:not-an-id"
	}
	return inv
}

// walk plays events drawn from data and checks that the journal
// of accepted events replays to the same state digest.
func walk(tb testing.TB, data []byte) *run {
	r := newRun(tb)
	e := &entropy{data: data}
	// A few events after the end are enough to see a terminal state refuse
	// them all.
	for steps, after := 0, 0; e.i < len(e.data) && steps < 120 && after < 4; steps++ {
		_, _ = r.step(genEvent(e, r.state, r.history))
		if r.state.Status.Terminal() {
			after++
		}
	}
	if got, want := r.replay().Digest(), r.state.Digest(); got != want {
		tb.Fatalf("the journal replays to %s, the run ended in %s", got, want)
	}
	return r
}

// TestStep_RandomWalks plays seeded random event sequences: no
// step panics or leaves an invalid state, and every journal replays to the
// digest of the state it ended in. It also checks that the walks reach
// every class, so the properties were checked where it matters.
func TestStep_RandomWalks(t *testing.T) {
	walks := 400
	if testing.Short() {
		walks = 50
	}
	reached := map[string]bool{}
	rng := rand.New(rand.NewPCG(14, 2026))
	for range walks {
		data := make([]byte, 64+rng.IntN(2048))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		r := walk(t, data)
		for _, s := range r.history {
			reached[classOf(s)] = true
		}
	}
	if testing.Short() {
		return // too few walks to promise every class
	}
	for _, c := range allClasses {
		if !reached[c] {
			t.Errorf("no walk reached %s", c)
		}
	}
}

// BenchmarkStep measures the pure machine over a whole lifecycle
// with one repair (16 events, each with its state digest), the floor
// under any durable transition.
func BenchmarkStep(b *testing.B) {
	var events []Event
	s := State{}
	for _, kind := range []EventKind{EventCreated, EventExploreCompleted,
		EventImplementCompleted, EventTestCompleted, EventReviewCompleted} {
		ev := WellFormed(s, kind)
		events = append(events, ev)
		s = mustStep(b, s, ev)
	}
	ev := VerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, VerdictRepairable)}
	events = append(events, ev)
	s = mustStep(b, s, ev)
	for _, kind := range []EventKind{EventImplementCompleted, EventTestCompleted,
		EventReviewCompleted, EventVerifyCompleted, EventApprovalGranted,
		EventApplyConflicted, EventApplyStarted, EventApplyCompleted} {
		ev := WellFormed(s, kind)
		events = append(events, ev)
		s = mustStep(b, s, ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := State{}
		for _, ev := range events {
			var err error
			if s, _, err = Step(s, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(events)), "events/op")
}
