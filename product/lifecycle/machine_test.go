package lifecycle

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// mustStep steps a well-formed or given event and fails the test on a
// refusal.
func mustStep(tb testing.TB, s State, ev Event) State {
	tb.Helper()
	next, _, err := Step(s, ev)
	if err != nil {
		tb.Fatalf("step %s in %s: %v", ev.Kind(), s.Where(), err)
	}
	return next
}

// classOf is the coarse class of a state that the transition table
// is written in: the phase and the round while running, the status
// otherwise.
func classOf(s State) string {
	switch {
	case s.Status == "":
		return "none"
	case s.Status == StatusRunning && s.Phase == PhaseExplore:
		return "explore"
	case s.Status == StatusRunning:
		return fmt.Sprintf("%s/%d", s.Phase, s.Round)
	}
	return string(s.Status)
}

// allClasses lists every class; every class meets every kind of
// event in the transcripts (TestTranscripts checks it).
var allClasses = []string{"none", "explore", "implement/1", "test/1", "review/1", "verify/1",
	"implement/2", "test/2", "review/2", "verify/2", "awaiting_approval", "approved", "applying",
	"applied", "rejected", "inconclusive", "failed", "cancelled"}

// statesByClass reaches one state of every class by a fixed script of
// well-formed events.
func statesByClass(tb testing.TB) map[string]State {
	tb.Helper()
	out := map[string]State{"none": {}}
	s := State{}
	step := func(kind EventKind) { s = mustStep(tb, s, WellFormed(s, kind)) }
	verify := func(o Verdict) State {
		return mustStep(tb, s, VerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, o)})
	}
	step(EventCreated)
	out["explore"] = s
	out["cancelled"] = mustStep(tb, s, CancelRequested{})
	out["failed"] = mustStep(tb, s, PhaseFailed{Phase: PhaseExplore, Invocation: currentInvocation(s), Failure: FailureFailClosed})
	for _, kind := range []EventKind{EventExploreCompleted, EventImplementCompleted,
		EventTestCompleted, EventReviewCompleted} {
		step(kind)
		out[classOf(s)] = s
	}
	out["rejected"] = verify(VerdictRejected)
	out["inconclusive"] = verify(VerdictInconclusive)
	verified := verify(VerdictVerified)
	s = verify(VerdictRepairable)
	out[classOf(s)] = s
	for _, kind := range []EventKind{EventImplementCompleted, EventTestCompleted, EventReviewCompleted} {
		step(kind)
		out[classOf(s)] = s
	}
	s = verified
	out["awaiting_approval"] = s
	for _, kind := range []EventKind{EventApprovalGranted, EventApplyStarted, EventApplyCompleted} {
		step(kind)
		out[classOf(s)] = s
	}
	for _, c := range allClasses {
		if _, ok := out[c]; !ok {
			tb.Fatalf("the script reaches no state of class %s", c)
		}
	}
	return out
}

// legalTransitions is the transition table written down independently of
// the machine: for each class, the kinds it accepts and the class the
// well-formed event of that kind leads to. Every other pair is refused, as
// terminal for the five terminal classes and as an illegal transition
// everywhere else.
var legalTransitions = map[string]map[EventKind]string{
	"none": {EventCreated: "explore"},
	"explore": {EventExploreCompleted: "implement/1", EventPhaseFailed: "explore",
		EventCancelRequested: "cancelled"},
	"implement/1": {EventImplementCompleted: "test/1", EventPhaseFailed: "implement/1",
		EventCancelRequested: "cancelled"},
	"test/1": {EventTestCompleted: "review/1", EventPhaseFailed: "test/1",
		EventCancelRequested: "cancelled"},
	"review/1": {EventReviewCompleted: "verify/1", EventPhaseFailed: "review/1",
		EventCancelRequested: "cancelled"},
	"verify/1": {EventVerifyCompleted: "awaiting_approval", EventPhaseFailed: "verify/1",
		EventCancelRequested: "cancelled"},
	"implement/2": {EventImplementCompleted: "test/2", EventPhaseFailed: "implement/2",
		EventCancelRequested: "cancelled"},
	"test/2": {EventTestCompleted: "review/2", EventPhaseFailed: "test/2",
		EventCancelRequested: "cancelled"},
	"review/2": {EventReviewCompleted: "verify/2", EventPhaseFailed: "review/2",
		EventCancelRequested: "cancelled"},
	"verify/2": {EventVerifyCompleted: "awaiting_approval", EventPhaseFailed: "verify/2",
		EventCancelRequested: "cancelled"},
	"awaiting_approval": {EventApprovalGranted: "approved", EventCancelRequested: "cancelled"},
	"approved": {EventApplyStarted: "applying", EventApplyConflicted: "approved",
		EventCancelRequested: "cancelled"},
	"applying": {EventApplyCompleted: "applied", EventApplyRolledBack: "approved"},
}

var terminalClasses = []string{"applied", "rejected", "inconclusive", "failed", "cancelled"}

// TestStep_TransitionTable checks every pair of state class and
// event kind against the hand-written table.
func TestStep_TransitionTable(t *testing.T) {
	states := statesByClass(t)
	for _, class := range allClasses {
		s := states[class]
		for _, kind := range eventKinds {
			t.Run(class+"/"+string(kind), func(t *testing.T) {
				next, fx, err := Step(s, WellFormed(s, kind))
				want, legal := legalTransitions[class][kind]
				if legal {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if got := classOf(next); got != want {
						t.Fatalf("went to %s, want %s", got, want)
					}
					if len(fx) == 0 {
						t.Fatal("a transition with no effect")
					}
					return
				}
				wantCode := RefusalIllegalTransition
				if slices.Contains(terminalClasses, class) {
					wantCode = RefusalTerminal
				}
				checkRefusal(t, s, next, fx, err, wantCode)
			})
		}
	}
}

// checkRefusal asserts a refusal with code that left the state as it was.
func checkRefusal(t *testing.T, before, after State, fx []Effect, err error, code Refusal) {
	t.Helper()
	var se *StepError
	switch {
	case err == nil:
		t.Fatalf("accepted; want a %s refusal (now %s)", code, after.Where())
	case !errors.As(err, &se):
		t.Fatalf("refusal %v is not a *StepError", err)
	case se.Code != code:
		t.Fatalf("refused with %s, want %s: %v", se.Code, code, err)
	case fx != nil:
		t.Fatalf("a refusal returned effects %v", fx)
	case after.Digest() != before.Digest():
		t.Fatal("a refusal changed the state")
	}
}

// TestStep_Refusals covers the refusals a table of well-formed
// events cannot reach: stale invocations, artifacts bound to something
// else, inconsistent verdicts, stale approvals and bad freezes.
func TestStep_Refusals(t *testing.T) {
	states := statesByClass(t)
	verifyIn := func(class string, edit func(*VerificationArtifact)) (State, Event) {
		s := states[class]
		v := verification(s, s.Freeze, s.Patch.ID, VerdictVerified)
		edit(&v)
		return s, VerifyCompleted{Invocation: currentInvocation(s), Verification: v}
	}
	failedTests := func() State {
		s := states["test/1"]
		return mustStep(t, s, TestCompleted{Invocation: currentInvocation(s),
			Evidence: testEvidence(s.Freeze, s.Patch.ID, []TestOutcome{TestFailed})})
	}
	tests := []struct {
		name  string
		state func() (State, Event)
		code  Refusal
	}{
		{"StaleInvocationOfEarlierPhase", func() (State, Event) {
			s := states["implement/1"]
			return s, ImplementCompleted{Invocation: InvocationID(s.Lifecycle, PhaseExplore, 1), Outcome: PatchAccepted,
				Patch: SampleID("p"), Base: s.Freeze.Snapshot, Files: 1, Bytes: 1}
		}, RefusalStaleInvocation},
		{"StaleInvocationOfOtherLifecycle", func() (State, Event) {
			s := states["explore"]
			return s, ExploreCompleted{Invocation: InvocationID("lcy_ffffffffffffffffffffffff", PhaseExplore, 1), Evidence: []string{}}
		}, RefusalStaleInvocation},
		{"FailureOfAnotherPhase", func() (State, Event) {
			s := states["test/1"]
			return s, PhaseFailed{Phase: PhaseImplement, Invocation: currentInvocation(s), Failure: FailureCrashed}
		}, RefusalStaleInvocation},
		{"PatchOnOtherSnapshot", func() (State, Event) {
			s := states["implement/1"]
			ev := WellFormed(s, EventImplementCompleted).(ImplementCompleted)
			ev.Base = SampleID("another snapshot")
			return s, ev
		}, RefusalWrongArtifact},
		{"RepairPatchIsThePatchRepaired", func() (State, Event) {
			s := states["implement/2"]
			ev := WellFormed(s, EventImplementCompleted).(ImplementCompleted)
			ev.Patch = s.Prior.Patch
			return s, ev
		}, RefusalWrongArtifact},
		{"TestsOfOtherPatch", func() (State, Event) {
			s := states["test/1"]
			return s, TestCompleted{Invocation: currentInvocation(s), Evidence: testEvidence(s.Freeze, SampleID("other"), nil)}
		}, RefusalWrongArtifact},
		{"TestOfUnfrozenPlan", func() (State, Event) {
			s := states["test/1"]
			e := testEvidence(s.Freeze, s.Patch.ID, nil)
			e.Results[0].Plan = "b3:" + "0000000000000000000000000000000000000000000000000000000000000000"
			return s, TestCompleted{Invocation: currentInvocation(s), Evidence: e}
		}, RefusalWrongArtifact},
		{"ReviewByVerifier", func() (State, Event) {
			s := states["review/1"]
			ev := WellFormed(s, EventReviewCompleted).(ReviewCompleted)
			ev.Review.Reviewer = s.Freeze.Profile(RoleVerifier)
			return s, ev
		}, RefusalWrongArtifact},
		{"ReviewWithoutFrozenCriteria", func() (State, Event) {
			s := states["review/1"]
			ev := WellFormed(s, EventReviewCompleted).(ReviewCompleted)
			ev.Review.Criteria = ev.Review.Criteria[:1]
			return s, ev
		}, RefusalWrongArtifact},
		{"VerificationByReviewer", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Verifier = states["verify/1"].Freeze.Profile(RoleReviewer) })
		}, RefusalWrongArtifact},
		{"VerificationByImplementer", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) {
				v.Verifier = states["verify/1"].Freeze.Profile(RoleImplementer)
			})
		}, RefusalWrongArtifact},
		{"VerificationOfPriorPatch", func() (State, Event) {
			return verifyIn("verify/2", func(v *VerificationArtifact) { v.Patch = states["verify/2"].Prior.Patch })
		}, RefusalWrongArtifact},
		{"VerificationCitingReviewAsTestEvidence", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.TestEvidence = states["verify/1"].Review })
		}, RefusalWrongArtifact},
		{"VerificationSkipsCriterion", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria = v.Criteria[1:] })
		}, RefusalWrongArtifact},
		{"VerificationOfOtherCriterion", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria[1].Digest = SampleID("another criterion") })
		}, RefusalWrongArtifact},
		{"VerifiedWithUnmetCriterion", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria[0].Status = CriterionUnknown })
		}, RefusalInconsistentVerdict},
		{"VerifiedWithFailingTest", func() (State, Event) {
			s := failedTests()
			s = mustStep(t, s, WellFormed(s, EventReviewCompleted))
			return s, VerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, VerdictVerified)}
		}, RefusalInconsistentVerdict},
		{"RepairableWithoutInstructions", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Outcome = VerdictRepairable })
		}, RefusalInconsistentVerdict},
		{"RejectedWithInstructions", func() (State, Event) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Outcome, v.Repair = VerdictRejected, "x" })
		}, RefusalInconsistentVerdict},
		{"ApprovalOfOtherPatch", func() (State, Event) {
			s := states["awaiting_approval"]
			b := s.Binding()
			b.Patch = SampleID("other patch")
			return s, ApprovalGranted{Binding: b}
		}, RefusalApprovalMismatch},
		{"ApprovalOfOtherVerification", func() (State, Event) {
			s := states["awaiting_approval"]
			b := s.Binding()
			b.Verification = states["verify/2"].Prior.Verification
			return s, ApprovalGranted{Binding: b}
		}, RefusalApprovalMismatch},
		{"ApprovalOfOlderLifecycleDigest", func() (State, Event) {
			s := states["awaiting_approval"]
			b := s.Binding()
			b.Lifecycle = states["verify/1"].Digest()
			return s, ApprovalGranted{Binding: b}
		}, RefusalApprovalMismatch},
		{"IntentOfOtherPatch", func() (State, Event) {
			s := states["approved"]
			return s, ApplyStarted{Intent: applyIntent(SampleID("other patch"), s.Approval, s.Patch.Files)}
		}, RefusalIntentMismatch},
		{"IntentWithoutApproval", func() (State, Event) {
			s := states["approved"]
			return s, ApplyStarted{Intent: applyIntent(s.Patch.ID, SampleID("forged approval"), s.Patch.Files)}
		}, RefusalIntentMismatch},
		{"IntentMissingAFile", func() (State, Event) {
			s := states["approved"]
			return s, ApplyStarted{Intent: applyIntent(s.Patch.ID, s.Approval, s.Patch.Files-1)}
		}, RefusalIntentMismatch},
		{"CompletionOfOtherIntent", func() (State, Event) {
			s := states["applying"]
			return s, ApplyCompleted{Intent: SampleID("other intent"), Files: s.Patch.Files}
		}, RefusalIntentMismatch},
		{"CompletionMissingAFile", func() (State, Event) {
			s := states["applying"]
			return s, ApplyCompleted{Intent: s.ApplyIntent, Files: s.Patch.Files - 1}
		}, RefusalIntentMismatch},
		{"RollbackOfOtherIntent", func() (State, Event) {
			s := states["applying"]
			return s, ApplyRolledBack{Intent: SampleID("other intent"), Cause: RollbackIO}
		}, RefusalIntentMismatch},
		{"NilEvent", func() (State, Event) { return states["explore"], nil }, RefusalInvalidPayload},
	}
	for _, bad := range badFreezes() {
		tests = append(tests, struct {
			name  string
			state func() (State, Event)
			code  Refusal
		}{"Freeze" + bad.name, func() (State, Event) {
			return State{}, Created{Lifecycle: SampleLifecycleID, Freeze: bad.freeze}
		}, RefusalInvalidPayload})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ev := tt.state()
			next, fx, err := Step(s, ev)
			checkRefusal(t, s, next, fx, err, tt.code)
		})
	}
}

// badFreezes are freezes a lifecycle must refuse to start with.
func badFreezes() []struct {
	name   string
	freeze Freeze
} {
	edit := func(f func(*Freeze)) Freeze {
		fr := SampleFreeze(2, 2)
		f(&fr)
		return fr
	}
	return []struct {
		name   string
		freeze Freeze
	}{
		{"NoTestPlans", edit(func(f *Freeze) { f.TestPlans = []string{} })},
		{"UnsortedTestPlans", edit(func(f *Freeze) { f.TestPlans[0], f.TestPlans[1] = f.TestPlans[1], f.TestPlans[0] })},
		{"RepeatedTestPlan", edit(func(f *Freeze) { f.TestPlans[1] = f.TestPlans[0] })},
		{"ConcurrencyTwo", edit(func(f *Freeze) { f.Concurrency = 2 })},
		{"VerifierIsImplementer", edit(func(f *Freeze) { f.Profiles[4].Digest = f.Profiles[1].Digest })},
		{"VerifierIsReviewer", edit(func(f *Freeze) { f.Profiles[4].Digest = f.Profiles[3].Digest })},
		// Settings that differ only by the role's name: one worker.
		{"VerifierWorkerIsReviewers", edit(func(f *Freeze) {
			f.Profiles[3].Worker, f.Profiles[4].Worker = SampleID("worker"), SampleID("worker")
		})},
		{"VerifierWorkerIsImplementers", edit(func(f *Freeze) {
			f.Profiles[1].Worker, f.Profiles[4].Worker = SampleID("worker"), SampleID("worker")
		})},
		{"WritingVerifier", edit(func(f *Freeze) { f.Profiles[4].Sandbox = "workspace-write" })},
		{"RolesOutOfOrder", edit(func(f *Freeze) { f.Profiles[3], f.Profiles[4] = f.Profiles[4], f.Profiles[3] })},
		{"MissingRole", edit(func(f *Freeze) { f.Profiles = f.Profiles[:4] })},
		{"NoCriteria", edit(func(f *Freeze) { f.Criteria = nil })},
		{"TooManyCriteria", edit(func(f *Freeze) {
			for len(f.Criteria) <= MaxCriteria {
				f.Criteria = append(f.Criteria, SampleID("more"))
			}
		})},
		{"ZeroBudget", edit(func(f *Freeze) { f.Budget.WorkerRuns = 0 })},
		{"HugeBudget", edit(func(f *Freeze) { f.Budget.Tokens = MaxTokens + 1 })},
		{"MalformedChangeID", edit(func(f *Freeze) { f.ChangeID = "chg_XYZ" })},
		{"MalformedSnapshot", edit(func(f *Freeze) { f.Snapshot = "none" })},
	}
}

// TestStep_OneRepair: the first repairable verdict consumes the
// one reservation in its own transition; a second repairable verdict
// cannot repair and ends the lifecycle, consuming nothing more.
func TestStep_OneRepair(t *testing.T) {
	s := statesByClass(t)["verify/1"]
	repair := func(s State) (State, []Effect) {
		next, fx, err := Step(s, VerifyCompleted{Invocation: currentInvocation(s),
			Verification: verification(s, s.Freeze, s.Patch.ID, VerdictRepairable)})
		if err != nil {
			t.Fatal(err)
		}
		return next, fx
	}
	s, fx := repair(s)
	if s.RepairsUsed != 1 || s.Round != 2 || s.Phase != PhaseImplement {
		t.Fatalf("after the first repairable verdict: %s round %d, repairs %d", s.Where(), s.Round, s.RepairsUsed)
	}
	consume, ok := fx[0].(ConsumeRepair)
	if !ok || consume.Change != s.Freeze.ChangeID || consume.Verification != s.Prior.Verification {
		t.Fatalf("effects %v do not consume the repair first", fx)
	}
	inv, ok := fx[1].(Invoke)
	if !ok || inv.Phase != PhaseImplement || inv.RepairFrom != s.Prior.Verification || inv.Patch != s.Prior.Patch || inv.Attempt != 2 {
		t.Fatalf("effects %v do not invoke the repair with the prior verification and patch", fx)
	}
	for _, kind := range []EventKind{EventImplementCompleted, EventTestCompleted, EventReviewCompleted} {
		s = mustStep(t, s, WellFormed(s, kind))
	}
	s, fx = repair(s)
	if s.Status != StatusRejected || s.Reason != ReasonRepairExhausted || s.RepairsUsed != 1 {
		t.Fatalf("a second repairable verdict left %s (%s), repairs %d", s.Where(), s.Reason, s.RepairsUsed)
	}
	if len(fx) != 1 || fx[0] != (Done{Status: StatusRejected, Reason: ReasonRepairExhausted}) {
		t.Fatalf("effects %v; want only done", fx)
	}
}

// TestStep_Budget: each dimension of the budget, once spent,
// stops the next invocation; the run that spent it still counts.
func TestStep_Budget(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget Budget
		cost   Cost
	}{
		{"WorkerRuns", Budget{Tokens: 1 << 20, WallMs: 1 << 20, WorkerRuns: 1}, Cost{}},
		{"Tokens", Budget{Tokens: 500, WallMs: 1 << 20, WorkerRuns: 9}, Cost{Tokens: 500}},
		{"WallTime", Budget{Tokens: 1 << 20, WallMs: 60_000, WorkerRuns: 9}, Cost{WallMs: 60_001}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := SampleFreeze(1, 1)
			f.Budget = tt.budget
			s := mustStep(t, State{}, Created{Lifecycle: SampleLifecycleID, Freeze: f})
			s, fx, err := Step(s, ExploreCompleted{Invocation: currentInvocation(s), Evidence: []string{}, Cost: tt.cost})
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != StatusFailed || s.Reason != ReasonBudgetExhausted || s.Phase != PhaseImplement || s.Attempts.Implement != 0 {
				t.Fatalf("%s (%s), implement attempts %d; want failed at implement before it ran", s.Where(), s.Reason, s.Attempts.Implement)
			}
			if s.Usage.WorkerRuns != 1 || s.Usage.Tokens != tt.cost.Tokens || s.Usage.WallMs != tt.cost.WallMs {
				t.Fatalf("usage %+v does not count the finished run", s.Usage)
			}
			if len(fx) != 1 {
				t.Fatalf("effects %v", fx)
			}
		})
	}
}

// TestStep_Retry: an ordinary failure is retried once under a new
// invocation id; a second failure, or any fail-closed failure, ends the
// lifecycle.
func TestStep_Retry(t *testing.T) {
	s := statesByClass(t)["test/1"]
	first := currentInvocation(s)
	fail := func(s State, f Failure) State {
		return mustStep(t, s, PhaseFailed{Phase: s.Phase, Invocation: currentInvocation(s), Failure: f})
	}
	retried := fail(s, FailureTimeout)
	if retried.Status != StatusRunning || retried.Attempts.Test != 2 || currentInvocation(retried) == first {
		t.Fatalf("after one timeout: %s, attempt %d, invocation %s", retried.Where(), retried.Attempts.Test, currentInvocation(retried))
	}
	// The first attempt's late completion is stale now.
	_, _, err := Step(retried, TestCompleted{Invocation: first, Evidence: testEvidence(s.Freeze, s.Patch.ID, nil)})
	var se *StepError
	if !errors.As(err, &se) || se.Code != RefusalStaleInvocation {
		t.Fatalf("the retried attempt's completion: %v", err)
	}
	if ended := fail(retried, FailureCrashed); ended.Reason != ReasonWorkerFailed {
		t.Fatalf("after two failures: %s (%s)", ended.Where(), ended.Reason)
	}
	if ended := fail(s, FailureFailClosed); ended.Reason != ReasonFailClosed || ended.Attempts.Test != 1 {
		t.Fatalf("after a fail-closed failure: %s (%s)", ended.Where(), ended.Reason)
	}
	// The retry counter belongs to a phase run: the next phase starts afresh.
	next := mustStep(t, retried, WellFormed(retried, EventTestCompleted))
	if next.Retries != 0 {
		t.Fatalf("retries %d carried into %s", next.Retries, next.Phase)
	}
}

// TestStep_TestEvidenceFailsClosed: a frozen plan without a result
// or with an error result ends the lifecycle; it is never a pass.
func TestStep_TestEvidenceFailsClosed(t *testing.T) {
	s := statesByClass(t)["test/1"]
	missing := testEvidence(s.Freeze, s.Patch.ID, nil)
	missing.Results = missing.Results[1:]
	for _, tt := range []struct {
		name     string
		evidence TestEvidence
		want     Reason
	}{
		{"Missing", missing, ReasonTestEvidenceMissing},
		{"NoResults", TestEvidence{Patch: s.Patch.ID, Results: []TestResult{}}, ReasonTestEvidenceMissing},
		{"Error", testEvidence(s.Freeze, s.Patch.ID, []TestOutcome{TestPassed, TestError}), ReasonTestEvidenceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next := mustStep(t, s, TestCompleted{Invocation: currentInvocation(s), Evidence: tt.evidence})
			if next.Status != StatusFailed || next.Reason != tt.want {
				t.Fatalf("%s (%s); want failed (%s)", next.Where(), next.Reason, tt.want)
			}
		})
	}
	// Failing tests are evidence: the lifecycle goes on to be judged.
	next := mustStep(t, s, TestCompleted{Invocation: currentInvocation(s),
		Evidence: testEvidence(s.Freeze, s.Patch.ID, []TestOutcome{TestFailed})})
	if next.Phase != PhaseReview || next.Tests.Failed != 1 || next.Tests.Passed != 1 {
		t.Fatalf("failing tests led to %s with %+v", next.Where(), next.Tests)
	}
}

// TestStep_DoesNotAlias: the machine copies what it keeps, so
// neither the caller's later edits of an event nor a step on a state can
// change another state.
func TestStep_DoesNotAlias(t *testing.T) {
	f := SampleFreeze(2, 2)
	s := mustStep(t, State{}, Created{Lifecycle: SampleLifecycleID, Freeze: f})
	before := s.Digest()
	f.TestPlans[0], f.Criteria[0] = SampleID("edited"), SampleID("edited")
	if s.Digest() != before {
		t.Fatal("editing the created event changed the state")
	}
	ev := ExploreCompleted{Invocation: currentInvocation(s), Evidence: []string{SampleID("a"), SampleID("b")}}
	slices.Sort(ev.Evidence)
	next := mustStep(t, s, ev)
	d := next.Digest()
	ev.Evidence[0] = SampleID("c")
	if next.Digest() != d || s.Digest() != before {
		t.Fatal("a step aliases the event or the previous state")
	}
}

// TestInvocationID: deterministic in (lifecycle, phase, attempt)
// and different when any of them differs.
func TestInvocationID(t *testing.T) {
	a := InvocationID(SampleLifecycleID, PhaseImplement, 2)
	if a != InvocationID(SampleLifecycleID, PhaseImplement, 2) || !contentid.Valid(a) {
		t.Fatalf("not deterministic or malformed: %s", a)
	}
	seen := map[string]bool{a: true}
	for _, other := range []string{
		InvocationID(SampleLifecycleID, PhaseImplement, 1),
		InvocationID(SampleLifecycleID, PhaseVerify, 2),
		InvocationID("lcy_ffffffffffffffffffffffff", PhaseImplement, 2),
	} {
		if seen[other] {
			t.Fatalf("two invocations share id %s", other)
		}
		seen[other] = true
	}
	// Frozen: adapters find an uncommitted attempt's side effects by this
	// id across versions of Needle.
	if a != "b3:"+frozenInvocationHex {
		t.Errorf("InvocationID = %s; the invocation identity changed (was b3:%s)", a, frozenInvocationHex)
	}
}

const frozenInvocationHex = "7f3d44316bdcaf36e5dc3252aa3970989362b65b69e2b91540bb25a5b0a7e0c1"

// TestMachine_Pure holds the machine to more than the pure core's
// rule: no clock, randomness, environment or file system either, so that
// a replay can only ever compute the same states.
func TestMachine_Pure(t *testing.T) {
	// lazyregexp is regexp compiled on first use: the same matches.
	allowed := map[string]bool{"bytes": true, "encoding/json": true, "errors": true, "fmt": true, "regexp": true,
		"slices": true, "strings": true, "unicode/utf8": true, "github.com/needle-dev/needle/product/internal/contentid": true,
		"github.com/needle-dev/needle/product/internal/lazyregexp": true,
		// enum and safetext are string rules: no state, no I/O.
		"github.com/needle-dev/needle/product/internal/enum": true, "github.com/needle-dev/needle/product/internal/safetext": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	fset := token.NewFileSet()
	for _, name := range files {
		if filepath.Ext(name) != ".go" || len(name) > 8 && name[len(name)-8:] == "_test.go" {
			continue
		}
		n++
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %s; the lifecycle machine must stay a function of its inputs", fset.Position(imp.Pos()), path)
			}
		}
	}
	if n < 5 {
		t.Fatalf("found %d files of the machine; the test would check too little", n)
	}
}
