package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// The lifecycle transcripts: testdata/machine/*.txt, one scenario a file,
// in the datadriven format etcd raft uses for its interaction tests. Each
// directive is an event (or a query) built the way a parent would build
// it, with arguments that bend it; below "----" is what the machine made
// of it: the new state and the effects, or the refusal and proof that the
// state did not change.
//
//	create [plans=N] [criteria=N] [runs=N] [tokens=N] [wall=N] [bad=NAME]
//	explore [evidence=N] [COMPLETION]
//	implement [outcome=accepted|rejected] [patch=NAME|prior] [base=frozen|other] [files=N] [COMPLETION]
//	test [results=(passed,failed,error,…)] [patch=current|other] [plan=unknown] [COMPLETION]
//	review [patch=current|other] [by=reviewer|verifier] [criteria=frozen|partial] [COMPLETION]
//	verify [outcome=…] [criteria=(met,unmet,…)] [tests=current|other|review] [by=verifier|reviewer|implementer]
//	       [patch=current|prior] [artifact=review] [COMPLETION]   (input: the repair instructions, if any)
//	fail [failure=crashed|…] [phase=NAME] [COMPLETION]
//	approve [patch=current|prior|other] [verification=current|prior|other] [lifecycle=current|seq:N|other]
//	apply-start [patch=current|other] [approval=current|other] [files=N]
//	apply-conflict [paths=(…)]
//	apply-done [intent=current|other] [files=N] [recovered]
//	apply-rollback [intent=current|other] [cause=drift|crash_recovered|io]
//	cancel                    (input: the note)
//	matrix                    every kind of well-formed event tried here, nothing committed
//	state                     the canonical state, indented
//	replay                    the journal replayed from nothing, digests compared
//
// COMPLETION is [invocation=current|previous|other-lifecycle|PHASE]
// [tokens=N] [wall=N] [workers=N] (workers: the worker runs the run counts
// for, cost.runs). Content ids print as their first 12 hex digits.
// NEEDLE_UPDATE=1 rewrites the expected output.

// transcriptCoverage is every pair of state class and event kind the
// transcripts tried, and every transition they made (class, kind and the
// class or status:reason it led to).
var transcriptCoverage = struct {
	pairs map[[2]string]bool
	edges map[string]bool
}{map[[2]string]bool{}, map[string]bool{}}

func TestTranscripts(t *testing.T) {
	if os.Getenv("NEEDLE_UPDATE") == "1" {
		if err := flag.Set("rewrite", "true"); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "machine", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata/machine (%v)", err)
	}
	ran := 0
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			ran++
			d := &transcriptDriver{run: newRun(t)}
			datadriven.RunTest(t, path, d.do)
		})
	}
	if ran != len(files) || t.Failed() {
		return // a filtered run cannot judge coverage
	}
	for _, class := range allClasses {
		for _, kind := range eventKinds {
			if !transcriptCoverage.pairs[[2]string{class, string(kind)}] {
				t.Errorf("no transcript tries %s in %s", kind, class)
			}
		}
	}
	for _, edge := range requiredEdges {
		if !transcriptCoverage.edges[edge] {
			t.Errorf("no transcript makes the transition %s", edge)
		}
	}
}

// requiredEdges is every legal transition with every outcome it can have,
// written down from the design: the transcripts must make each of them.
var requiredEdges = []string{
	"none created explore",
	"explore explore_completed implement/1",
	"explore phase_failed explore",
	"explore phase_failed failed:worker_failed",
	"explore phase_failed failed:fail_closed",
	"explore phase_failed failed:budget_exhausted",
	"explore cancel_requested cancelled:cancelled",
	"explore explore_completed failed:budget_exhausted",
	"implement/1 implement_completed test/1",
	"implement/1 implement_completed rejected:patch_rejected",
	"implement/1 implement_completed failed:budget_exhausted",
	"implement/1 phase_failed implement/1",
	"implement/1 cancel_requested cancelled:cancelled",
	"test/1 test_completed review/1",
	"test/1 test_completed failed:test_evidence_missing",
	"test/1 test_completed failed:test_evidence_unavailable",
	"test/1 phase_failed failed:fail_closed",
	"review/1 review_completed verify/1",
	"review/1 review_completed failed:budget_exhausted",
	"review/1 phase_failed review/1",
	"verify/1 verify_completed awaiting_approval",
	"verify/1 verify_completed rejected:verification_rejected",
	"verify/1 verify_completed inconclusive:verification_inconclusive",
	"verify/1 verify_completed implement/2",
	"verify/1 verify_completed failed:budget_exhausted",
	"verify/1 phase_failed failed:worker_failed",
	"implement/2 implement_completed test/2",
	"implement/2 implement_completed rejected:repair_rejected",
	"implement/2 phase_failed implement/2",
	"test/2 test_completed review/2",
	"review/2 review_completed verify/2",
	"verify/2 verify_completed awaiting_approval",
	"verify/2 verify_completed rejected:repair_exhausted",
	"verify/2 verify_completed inconclusive:verification_inconclusive",
	"verify/2 cancel_requested cancelled:cancelled",
	"awaiting_approval approval_granted approved",
	"awaiting_approval cancel_requested cancelled:cancelled",
	"approved apply_conflicted approved",
	"approved apply_started applying",
	"approved cancel_requested cancelled:cancelled",
	"applying apply_completed applied:applied",
	"applying apply_rolled_back approved",
}

// transcriptDriver plays one transcript.
type transcriptDriver struct {
	run    *run
	review ReviewArtifact // the last accepted review
}

func (d *transcriptDriver) do(t *testing.T, td *datadriven.TestData) string {
	s := d.run.state
	switch td.Cmd {
	case "matrix":
		return d.matrix()
	case "state":
		var b bytes.Buffer
		if err := json.Indent(&b, s.Canonical(), "", "  "); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("digest %s\n%s\n", s.Digest(), b.String())
	case "replay":
		got := d.run.replay()
		if got.Digest() != s.Digest() {
			t.Fatalf("replay reached %s, the transcript %s", got.Digest(), s.Digest())
		}
		return fmt.Sprintf("replayed %d events: digest %s matches the state\n", len(d.run.journal), short(got.Digest()))
	}
	ev := d.event(t, td, s)
	return d.step(ev)
}

// step applies ev, records coverage and renders the outcome.
func (d *transcriptDriver) step(ev Event) string {
	prev := d.run.state
	class := classOf(prev)
	transcriptCoverage.pairs[[2]string{class, string(ev.Kind())}] = true
	fx, err := d.run.step(ev)
	if err != nil {
		return fmt.Sprintf("refused: %s\nunchanged: %s\n", refusalText(err), describe(prev))
	}
	next := d.run.state
	transcriptCoverage.edges[class+" "+string(ev.Kind())+" "+edgeTarget(next)] = true
	if r, ok := ev.(ReviewCompleted); ok {
		d.review = r.Review
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", describe(next))
	for _, e := range fx {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return shortIDs(b.String())
}

// matrix tries the well-formed event of every kind in the current state
// without committing any.
func (d *transcriptDriver) matrix() string {
	s := d.run.state
	var b strings.Builder
	for _, kind := range eventKinds {
		transcriptCoverage.pairs[[2]string{classOf(s), string(kind)}] = true
		next, _, err := Step(s, WellFormed(s, kind))
		if err != nil {
			var se *StepError
			_ = errors.As(err, &se)
			fmt.Fprintf(&b, "%-20s refused %s\n", kind, se.Code)
			continue
		}
		if err := next.check(); err != nil {
			fmt.Fprintf(&b, "%-20s INVALID STATE %v\n", kind, err)
			continue
		}
		transcriptCoverage.edges[classOf(s)+" "+string(kind)+" "+edgeTarget(next)] = true
		fmt.Fprintf(&b, "%-20s -> %s\n", kind, edgeTarget(next))
	}
	return b.String()
}

func edgeTarget(s State) string {
	if s.Status.Terminal() {
		return string(s.Status) + ":" + string(s.Reason)
	}
	return classOf(s)
}

func describe(s State) string {
	if s.Status == "" {
		return "no lifecycle"
	}
	out := s.Where()
	if s.Reason != "" {
		out += " reason=" + string(s.Reason)
	}
	u, b := s.Usage, s.Freeze.Budget
	return out + fmt.Sprintf(" round=%d seq=%d repairs=%d/%d retries=%d runs=%d/%d tokens=%d/%d wall_ms=%d/%d",
		s.Round, s.Seq, s.RepairsUsed, RepairReservations, s.Retries, u.WorkerRuns, b.WorkerRuns,
		u.Tokens, b.Tokens, u.WallMs, b.WallMs)
}

func refusalText(err error) string {
	var se *StepError
	if !errors.As(err, &se) {
		return "UNTYPED " + err.Error()
	}
	return shortIDs(fmt.Sprintf("%s: %s", se.Code, se.Detail))
}

var longID = regexp.MustCompile(`b3:([0-9a-f]{12})[0-9a-f]{52}`)

// shortIDs shortens content ids for the transcripts.
func shortIDs(s string) string { return longID.ReplaceAllString(s, "b3:$1") }

func short(id string) string { return shortIDs(id) }

// event builds the event a directive names.
func (d *transcriptDriver) event(t *testing.T, td *datadriven.TestData, s State) Event {
	a := transcriptArgs{t: t, td: td}
	switch td.Cmd {
	case "create":
		f := SampleFreeze(a.int("plans", 2), a.int("criteria", 2))
		f.Budget = Budget{Tokens: int64(a.int("tokens", 1_000_000)), WallMs: int64(a.int("wall", 3_600_000)), WorkerRuns: a.int("runs", 16)}
		if name := a.str("bad", ""); name != "" {
			i := slices.IndexFunc(badFreezes(), func(b struct {
				name   string
				freeze Freeze
			}) bool {
				return b.name == name
			})
			if i < 0 {
				t.Fatalf("no bad freeze %q", name)
			}
			f = badFreezes()[i].freeze
		}
		return Created{Lifecycle: SampleLifecycleID, Freeze: f}
	case "explore":
		ev := WellFormed(s, EventExploreCompleted).(ExploreCompleted)
		ev.Evidence = []string{}
		for i := range a.int("evidence", 1) {
			ev.Evidence = append(ev.Evidence, SampleID(fmt.Sprintf("evidence %d", i)))
		}
		slices.Sort(ev.Evidence)
		ev.Invocation, ev.Cost = a.invocation(s), a.cost(ev.Cost)
		return ev
	case "implement":
		ev := WellFormed(s, EventImplementCompleted).(ImplementCompleted)
		ev.Invocation, ev.Cost = a.invocation(s), a.cost(ev.Cost)
		ev.Files = a.int("files", 2)
		switch p := a.str("patch", ""); p {
		case "":
		case "prior":
			ev.Patch = s.Prior.Patch
		default:
			ev.Patch = SampleID("patch " + p)
		}
		if a.str("base", "frozen") != "frozen" {
			ev.Base = SampleID("another snapshot")
		}
		if a.str("outcome", "accepted") == "rejected" {
			ev.Outcome, ev.Patch, ev.Files, ev.Bytes = PatchRejected, "", 0, 0
			ev.Reasons = []string{orString(strings.TrimSpace(td.Input), "cmd/x.go: outside the declared scopes")}
		}
		return ev
	case "test":
		ev := WellFormed(s, EventTestCompleted).(TestCompleted)
		ev.Invocation, ev.Cost = a.invocation(s), a.cost(ev.Cost)
		patch := ev.Evidence.Patch
		if a.str("patch", "current") != "current" {
			patch = SampleID("another patch")
		}
		var outcomes []TestOutcome
		results := a.list("results", nil)
		for _, r := range results {
			outcomes = append(outcomes, TestOutcome(r))
		}
		ev.Evidence = testEvidence(s.Freeze, patch, outcomes)
		if results != nil {
			ev.Evidence.Results = ev.Evidence.Results[:min(len(results), len(ev.Evidence.Results))]
		}
		if a.str("plan", "") == "unknown" {
			ev.Evidence.Results[0].Plan = "b3:" + strings.Repeat("0", 64)
		}
		return ev
	case "review":
		ev := WellFormed(s, EventReviewCompleted).(ReviewCompleted)
		ev.Invocation, ev.Cost = a.invocation(s), a.cost(ev.Cost)
		if a.str("patch", "current") != "current" {
			ev.Review.Patch = SampleID("another patch")
		}
		if a.str("by", "reviewer") == "verifier" {
			ev.Review.Reviewer = s.Freeze.Profile(RoleVerifier)
		}
		if a.str("criteria", "frozen") == "partial" {
			ev.Review.Criteria = ev.Review.Criteria[:1]
		}
		return ev
	case "verify":
		return d.verifyEvent(a, s)
	case "fail":
		ev := WellFormed(s, EventPhaseFailed).(PhaseFailed)
		ev.Invocation, ev.Cost = a.invocation(s), a.cost(ev.Cost)
		ev.Failure = Failure(a.str("failure", string(FailureCrashed)))
		if p := a.str("phase", ""); p != "" {
			ev.Phase = Phase(p)
		}
		return ev
	case "approve":
		b := s.Binding()
		b.Patch = a.pick("patch", map[string]string{"current": b.Patch, "prior": s.Prior.Patch, "other": SampleID("another patch")})
		b.Verification = a.pick("verification", map[string]string{"current": b.Verification, "prior": s.Prior.Verification,
			"other": SampleID("another verification")})
		switch l := a.str("lifecycle", "current"); {
		case l == "other":
			b.Lifecycle = SampleID("another lifecycle")
		case strings.HasPrefix(l, "seq:"):
			n, err := strconv.Atoi(strings.TrimPrefix(l, "seq:"))
			if err != nil || n < 0 || n >= len(d.run.history) {
				t.Fatalf("no state %s", l)
			}
			b.Lifecycle = d.run.history[n].Digest()
		}
		return ApprovalGranted{Binding: b}
	case "apply-start":
		patch := a.pick("patch", map[string]string{"current": s.Patch.ID, "other": SampleID("another patch")})
		approval := a.pick("approval", map[string]string{"current": orID(s.Approval, "no approval yet"), "other": SampleID("another approval")})
		return ApplyStarted{Intent: applyIntent(patch, approval, a.int("files", s.Patch.Files))}
	case "apply-conflict":
		return ApplyConflicted{Paths: a.list("paths", []string{"grep.go"})}
	case "apply-done":
		intent := a.pick("intent", map[string]string{"current": orID(s.ApplyIntent, "no intent yet"), "other": SampleID("another intent")})
		return ApplyCompleted{Intent: intent, Files: a.int("files", s.Patch.Files), Recovered: td.HasArg("recovered")}
	case "apply-rollback":
		intent := a.pick("intent", map[string]string{"current": orID(s.ApplyIntent, "no intent yet"), "other": SampleID("another intent")})
		return ApplyRolledBack{Intent: intent, Cause: RollbackCause(a.str("cause", string(RollbackDrift)))}
	case "cancel":
		return CancelRequested{Note: strings.TrimSpace(td.Input)}
	}
	t.Fatalf("unknown directive %q", td.Cmd)
	return nil
}

func (d *transcriptDriver) verifyEvent(a transcriptArgs, s State) Event {
	outcome := Verdict(a.str("outcome", string(VerdictVerified)))
	ev := VerifyCompleted{Invocation: a.invocation(s), Cost: a.cost(Cost{Tokens: 400, WallMs: 4000}),
		Verification: verification(s, s.Freeze, s.Patch.ID, outcome)}
	v := &ev.Verification
	v.Repair = strings.TrimSpace(a.td.Input)
	if cs := a.list("criteria", nil); cs != nil {
		v.Criteria = v.Criteria[:min(len(cs), len(v.Criteria))]
		for i := range v.Criteria {
			v.Criteria[i].Status = CriterionStatus(cs[i])
		}
	}
	v.TestEvidence = a.pick("tests", map[string]string{"current": v.TestEvidence, "other": SampleID("other test evidence"), "review": s.Review})
	v.Patch = a.pick("patch", map[string]string{"current": v.Patch, "prior": s.Prior.Patch})
	role := map[string]Role{"verifier": RoleVerifier, "reviewer": RoleReviewer, "implementer": RoleImplementer}[a.str("by", "verifier")]
	v.Verifier = s.Freeze.Profile(role)
	if a.str("artifact", "") == "review" {
		// The review artifact standing for the verification: its patch,
		// its reviewer, its criterion digests and no judgement of its own.
		r := d.review
		v.Patch, v.Verifier, v.TestEvidence = r.Patch, r.Reviewer, s.Review
	}
	return ev
}

// transcriptArgs reads a directive's arguments.
type transcriptArgs struct {
	t  *testing.T
	td *datadriven.TestData
}

func (a transcriptArgs) str(key, def string) string {
	if arg, ok := a.td.Arg(key); ok {
		return arg.SingleVal(a.t)
	}
	return def
}

func (a transcriptArgs) int(key string, def int) int {
	v := a.str(key, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil {
		a.t.Fatalf("%s=%s: %v", key, v, err)
	}
	return n
}

func (a transcriptArgs) list(key string, def []string) []string {
	if arg, ok := a.td.Arg(key); ok {
		return arg.Vals
	}
	return def
}

func (a transcriptArgs) pick(key string, choices map[string]string) string {
	name := a.str(key, "current")
	v, ok := choices[name]
	if !ok {
		a.t.Fatalf("%s=%s: not one of the choices", key, name)
	}
	return v
}

func (a transcriptArgs) cost(c Cost) Cost {
	return Cost{Tokens: int64(a.int("tokens", int(c.Tokens))), WallMs: int64(a.int("wall", int(c.WallMs))),
		Runs: a.int("workers", c.Runs)}
}

// invocation is the completion's invocation id: the current one, the
// previous attempt's, another lifecycle's, or another phase's first.
func (a transcriptArgs) invocation(s State) string {
	switch v := a.str("invocation", "current"); v {
	case "current":
		return currentInvocation(s)
	case "previous":
		return InvocationID(s.Lifecycle, s.Phase, *s.Attempts.of(s.Phase)-1)
	case "other-lifecycle":
		return InvocationID("lcy_ffffffffffffffffffffffff", s.Phase, *s.Attempts.of(s.Phase))
	default:
		p, ok := ParsePhase(v)
		if !ok {
			a.t.Fatalf("invocation=%s: not a phase", v)
		}
		return InvocationID(s.Lifecycle, p, 1)
	}
}
