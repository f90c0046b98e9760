package product

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

// lifecycleRun plays events through StepLifecycle the way a kernel would,
// keeping the journal of accepted events, and checks the machine's
// properties at every step.
type lifecycleRun struct {
	tb          testing.TB
	state       LifecycleState
	journal     []journalRow
	invocations map[string]bool
	history     []LifecycleState
}

// journalRow is an accepted event in its journal form.
type journalRow struct {
	kind    LifecycleEventKind
	payload []byte
	digest  string
}

func newLifecycleRun(tb testing.TB) *lifecycleRun {
	return &lifecycleRun{tb: tb, invocations: map[string]bool{}, history: []LifecycleState{{}}}
}

// step applies ev and checks: a refusal changes nothing and is typed; an
// accepted event yields a state that holds every invariant, survives its
// canonical encoding, moves Seq by one, returns exactly the transactional
// effects and then LifecyclePending of the new state with at most one
// invocation (never one issued before), and steps the same from its
// journal form.
func (r *lifecycleRun) step(ev LifecycleEvent) ([]LifecycleEffect, error) {
	tb := r.tb
	tb.Helper()
	prev := r.state
	saved := prev.clone()
	next, fx, err := StepLifecycle(prev, ev)
	if !cmp.Equal(prev, saved) {
		tb.Fatalf("StepLifecycle changed its input state")
	}
	if err != nil {
		var se *LifecycleStepError
		if !errors.As(err, &se) || KindOf(err) != se.Code.kind() || fx != nil || !cmp.Equal(next, saved) {
			tb.Fatalf("refusal %v: not typed, or it returned effects %v or another state", err, fx)
		}
		if prev.Status.Terminal() && se.Code != LifecycleRefusalTerminal && se.Code != LifecycleRefusalInvalidPayload {
			tb.Fatalf("a terminal state refused with %s", se.Code)
		}
		return nil, err
	}
	if prev.Status.Terminal() {
		tb.Fatalf("a terminal state accepted %s", ev.Kind())
	}
	nextDigest := next.Digest()
	if err := next.check(); err != nil {
		tb.Fatalf("after %s in %s: invalid state: %v\n%s", ev.Kind(), prev.where(), err, next.Canonical())
	}
	if next.Seq != prev.Seq+1 || next.RepairsUsed < prev.RepairsUsed {
		tb.Fatalf("seq %d -> %d, repairs %d -> %d", prev.Seq, next.Seq, prev.RepairsUsed, next.RepairsUsed)
	}
	decoded, err := DecodeLifecycleState(next.Canonical())
	if err != nil || decoded.Digest() != nextDigest {
		tb.Fatalf("the canonical state does not decode to itself: %v", err)
	}
	pending := LifecyclePending(next)
	var tx []LifecycleEffect
	for _, e := range fx {
		if _, ok := e.(LifecycleConsumeRepair); ok {
			tx = append(tx, e)
		}
	}
	if !slices.Equal(fx, append(tx, pending...)) || len(tx) > 1 || len(pending) != 1 {
		tb.Fatalf("effects %v; want the transactional ones, then pending %v", fx, pending)
	}
	if len(tx) == 1 && (next.RepairsUsed != 1 || prev.RepairsUsed != 0) {
		tb.Fatalf("consume-repair without consuming the reservation")
	}
	if inv, ok := pending[0].(LifecycleInvoke); ok {
		if r.invocations[inv.Invocation] {
			tb.Fatalf("invocation %s issued twice", inv.Invocation)
		}
		r.invocations[inv.Invocation] = true
	}
	kind, payload, digest := EncodeLifecycleEvent(ev)
	again, err := DecodeLifecycleEvent(string(kind), payload)
	if err != nil || LifecycleEventDigest(again) != digest {
		tb.Fatalf("the journal form of %s does not decode to itself: %v\n%s", kind, err, payload)
	}
	if replayed, _, err := StepLifecycle(prev, again); err != nil || replayed.Digest() != nextDigest {
		tb.Fatalf("the decoded %s steps differently: %v", kind, err)
	}
	r.state = next
	r.journal = append(r.journal, journalRow{kind, payload, digest})
	r.history = append(r.history, next)
	return fx, nil
}

// replay rebuilds the state from the journal alone, checking each payload
// digest as a reader of change_events would.
func (r *lifecycleRun) replay() LifecycleState {
	r.tb.Helper()
	s := LifecycleState{}
	for i, row := range r.journal {
		ev, err := DecodeLifecycleEvent(string(row.kind), row.payload)
		if err != nil {
			r.tb.Fatalf("journal row %d: %v", i+1, err)
		}
		if LifecycleEventDigest(ev) != row.digest {
			r.tb.Fatalf("journal row %d: payload digest mismatch", i+1)
		}
		if s, _, err = StepLifecycle(s, ev); err != nil {
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
func genEvent(e *entropy, s LifecycleState, history []LifecycleState) LifecycleEvent {
	kind := lifecycleEventKinds[e.intn(len(lifecycleEventKinds))]
	if !e.chance(48) {
		kind = plausibleKind(e, s)
	}
	ev := wellFormed(s, kind)
	switch ev := ev.(type) {
	case LifecycleExploreCompleted:
		ev.Evidence = ev.Evidence[:e.intn(2)]
		ev.Cost = genCost(e)
		if e.chance(48) {
			ev.Cost.Runs = 2 + e.intn(LifecycleMaxRunsPerPhase-1) // evidence workers
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecycleImplementCompleted:
		ev.Cost = genCost(e)
		ev.Files = 1 + e.intn(MaxPatchFiles)
		switch e.intn(8) {
		case 0:
			ev.Outcome, ev.Patch, ev.Files, ev.Bytes, ev.Reasons = LifecyclePatchRejected, "", 0, 0, []string{"x.go: outside the declared scopes"}
		case 1:
			ev.Patch = orID(s.Prior.Patch, "prior")
		case 2:
			ev.Base = testID("drifted")
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecycleTestCompleted:
		ev.Cost = genCost(e)
		outcomes := make([]LifecycleTestOutcome, len(ev.Evidence.Results))
		for i := range outcomes {
			outcomes[i] = []LifecycleTestOutcome{LifecycleTestPassed, LifecycleTestPassed, LifecycleTestFailed, LifecycleTestError}[e.intn(4)]
		}
		ev.Evidence = testEvidence(s.Freeze, ev.Evidence.Patch, outcomes)
		if e.chance(16) && len(ev.Evidence.Results) > 0 {
			ev.Evidence.Results = ev.Evidence.Results[1:]
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecycleReviewCompleted:
		ev.Cost = genCost(e)
		if e.chance(16) {
			ev.Review.Reviewer = s.Freeze.profile(LifecycleRoleVerifier)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecycleVerifyCompleted:
		ev.Cost = genCost(e)
		outcome := allVerdicts[e.intn(len(allVerdicts))]
		ev.Verification = verification(s, s.Freeze, ev.Verification.Patch, outcome)
		if e.chance(16) {
			ev.Verification.Verifier = s.Freeze.profile(LifecycleRoleReviewer)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecyclePhaseFailed:
		ev.Failure = lifecycleFailures[e.intn(len(lifecycleFailures))]
		ev.Cost = genCost(e)
		if ev.Phase == PhaseExplore && e.chance(48) {
			ev.Cost.Runs = 2 + e.intn(LifecycleMaxRunsPerPhase-1)
		}
		ev.Invocation = maybeStale(e, s, ev.Invocation)
		return ev
	case LifecycleApprovalGranted:
		if e.chance(48) && len(history) > 1 {
			ev.Binding.Lifecycle = history[e.intn(len(history))].Digest()
		}
		if e.chance(24) {
			ev.Binding.Patch = orID(s.Prior.Patch, "prior")
		}
		return ev
	case LifecycleApplyRolledBack:
		ev.Cause = lifecycleRollbackCauses[e.intn(len(lifecycleRollbackCauses))]
		return ev
	case LifecycleCreated:
		if e.chance(64) {
			bad := badFreezes()
			ev.Freeze = bad[e.intn(len(bad))].freeze
		}
		if e.chance(128) {
			ev.Freeze.Budget = LifecycleBudget{Tokens: int64(1 + e.intn(5000)), WallMs: int64(1 + e.intn(50000)), WorkerRuns: 1 + e.intn(12)}
		}
		return ev
	}
	return ev
}

// plausibleKind is the kind a parent would most likely send in s.
func plausibleKind(e *entropy, s LifecycleState) LifecycleEventKind {
	switch s.Status {
	case "":
		return LifecycleEventCreated
	case LifecycleStatusRunning:
		switch {
		case e.chance(20):
			return LifecycleEventPhaseFailed
		case e.chance(4):
			return LifecycleEventCancelRequested
		}
		return map[Phase]LifecycleEventKind{PhaseExplore: LifecycleEventExploreCompleted, PhaseImplement: LifecycleEventImplementCompleted,
			PhaseTest: LifecycleEventTestCompleted, PhaseReview: LifecycleEventReviewCompleted, PhaseVerify: LifecycleEventVerifyCompleted}[s.Phase]
	case LifecycleStatusAwaitingApproval:
		return LifecycleEventApprovalGranted
	case LifecycleStatusApproved:
		if e.chance(64) {
			return LifecycleEventApplyConflicted
		}
		return LifecycleEventApplyStarted
	case LifecycleStatusApplying:
		if e.chance(64) {
			return LifecycleEventApplyRolledBack
		}
		return LifecycleEventApplyCompleted
	}
	return LifecycleEventCancelRequested
}

func genCost(e *entropy) LifecycleCost {
	c := LifecycleCost{Tokens: int64(e.intn(4)) * 250, WallMs: int64(e.intn(4)) * 2500}
	if e.chance(4) {
		c.Tokens = LifecycleMaxTokens
	}
	return c
}

// maybeStale sometimes points a completion at an earlier attempt or
// breaks its invocation id.
func maybeStale(e *entropy, s LifecycleState, inv string) string {
	switch e.intn(16) {
	case 0:
		return LifecycleInvocationID(orString(s.Lifecycle, testLifecycleID), s.Phase, max(*s.Attempts.of(s.Phase)-1, 0))
	case 1:
		return "b3:not-an-id"
	}
	return inv
}

// walkLifecycle plays events drawn from data and checks that the journal
// of accepted events replays to the same state digest.
func walkLifecycle(tb testing.TB, data []byte) *lifecycleRun {
	r := newLifecycleRun(tb)
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

// TestStepLifecycle_RandomWalks plays seeded random event sequences: no
// step panics or leaves an invalid state, and every journal replays to the
// digest of the state it ended in. It also checks that the walks reach
// every class, so the properties were checked where it matters.
func TestStepLifecycle_RandomWalks(t *testing.T) {
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
		r := walkLifecycle(t, data)
		for _, s := range r.history {
			reached[lifecycleClass(s)] = true
		}
	}
	if testing.Short() {
		return // too few walks to promise every class
	}
	for _, c := range allLifecycleClasses {
		if !reached[c] {
			t.Errorf("no walk reached %s", c)
		}
	}
}

// BenchmarkStepLifecycle measures the pure machine over a whole lifecycle
// with one repair (16 events, each with its state digest), the floor
// under any durable transition.
func BenchmarkStepLifecycle(b *testing.B) {
	var events []LifecycleEvent
	s := LifecycleState{}
	for _, kind := range []LifecycleEventKind{LifecycleEventCreated, LifecycleEventExploreCompleted,
		LifecycleEventImplementCompleted, LifecycleEventTestCompleted, LifecycleEventReviewCompleted} {
		ev := wellFormed(s, kind)
		events = append(events, ev)
		s = mustStep(b, s, ev)
	}
	ev := LifecycleVerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, VerdictRepairable)}
	events = append(events, ev)
	s = mustStep(b, s, ev)
	for _, kind := range []LifecycleEventKind{LifecycleEventImplementCompleted, LifecycleEventTestCompleted,
		LifecycleEventReviewCompleted, LifecycleEventVerifyCompleted, LifecycleEventApprovalGranted,
		LifecycleEventApplyConflicted, LifecycleEventApplyStarted, LifecycleEventApplyCompleted} {
		ev := wellFormed(s, kind)
		events = append(events, ev)
		s = mustStep(b, s, ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := LifecycleState{}
		for _, ev := range events {
			var err error
			if s, _, err = StepLifecycle(s, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(events)), "events/op")
}
