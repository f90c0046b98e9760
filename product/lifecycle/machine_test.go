package product

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

// testID is a well-formed content id named for a test.
func testID(name string) string { return contentid.OfBytes("needle.test.v1", []byte(name)) }

// testFreeze is a valid freeze with the given number of test plans and
// criteria and a budget of 16 worker runs.
func testFreeze(plans, criteria int) LifecycleFreeze {
	f := LifecycleFreeze{
		ChangeID:    "chg_0123456789abcdef01234567",
		RequestID:   testID("request"),
		Snapshot:    testID("snapshot"),
		Budget:      LifecycleBudget{Tokens: 1_000_000, WallMs: 3_600_000, WorkerRuns: 16},
		Concurrency: 1,
	}
	for i := range criteria {
		f.Criteria = append(f.Criteria, testID(fmt.Sprintf("criterion %d", i+1)))
	}
	for _, role := range lifecycleRoles {
		f.Profiles = append(f.Profiles, LifecycleProfileRef{Role: role, Profile: "default", Revision: 1,
			Sandbox: lifecycleRoleSandbox[role], Digest: testID("profile " + string(role))})
	}
	for i := range plans {
		f.TestPlans = append(f.TestPlans, testID(fmt.Sprintf("plan %d", i+1)))
	}
	slices.Sort(f.TestPlans)
	return f
}

const testLifecycleID = "lcy_0123456789abcdef01234567"

// orID is id, or a well-formed stand-in when id is empty, so that an event
// built for a state that lacks the reference is still well-formed and is
// refused for the state, not for its form.
func orID(id, name string) string {
	if id == "" {
		return testID(name)
	}
	return id
}

// currentInvocation is the invocation a completion in s answers, or a
// well-formed one when s runs no adapter.
func currentInvocation(s LifecycleState) string {
	if s.Status != LifecycleStatusRunning {
		return LifecycleInvocationID(orString(s.Lifecycle, testLifecycleID), PhaseExplore, 1)
	}
	return LifecycleInvocationID(s.Lifecycle, s.Phase, *s.Attempts.of(s.Phase))
}

func orString(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// wellFormed builds the event of a kind that a correct parent would send in
// s if s accepted that kind: the current invocation, the current patch, the
// frozen profiles, every test passing, a verified verdict. Refusals of it
// are therefore about the state, never about the event.
func wellFormed(s LifecycleState, kind LifecycleEventKind) LifecycleEvent {
	freeze := s.Freeze
	if s.Status == "" {
		freeze = testFreeze(2, 2)
	}
	inv := currentInvocation(s)
	patch := orID(s.Patch.ID, "some patch")
	switch kind {
	case LifecycleEventCreated:
		return LifecycleCreated{Lifecycle: testLifecycleID, Freeze: testFreeze(2, 2)}
	case LifecycleEventExploreCompleted:
		return LifecycleExploreCompleted{Invocation: inv, Evidence: []string{testID("evidence")}, Cost: LifecycleCost{Tokens: 100, WallMs: 1000}}
	case LifecycleEventImplementCompleted:
		return LifecycleImplementCompleted{Invocation: inv, Outcome: LifecyclePatchAccepted,
			Patch: testID(fmt.Sprintf("patch round %d attempt %d", s.Round, s.Attempts.Implement)),
			Base:  freeze.Snapshot, Files: 2, Bytes: 120, Cost: LifecycleCost{Tokens: 1000, WallMs: 5000}}
	case LifecycleEventTestCompleted:
		return LifecycleTestCompleted{Invocation: inv, Evidence: testEvidence(freeze, patch, nil), Cost: LifecycleCost{WallMs: 2000}}
	case LifecycleEventReviewCompleted:
		return LifecycleReviewCompleted{Invocation: inv, Review: LifecycleReviewArtifact{Patch: patch,
			Reviewer: freeze.profile(LifecycleRoleReviewer), Criteria: slices.Clone(freeze.Criteria),
			Findings: []LifecycleReviewFinding{{Severity: LifecycleFindingMinor, Criterion: 1, Summary: "names could be clearer"}}},
			Cost: LifecycleCost{Tokens: 300, WallMs: 3000}}
	case LifecycleEventVerifyCompleted:
		return LifecycleVerifyCompleted{Invocation: inv, Verification: verification(s, freeze, patch, VerdictVerified),
			Cost: LifecycleCost{Tokens: 400, WallMs: 4000}}
	case LifecycleEventPhaseFailed:
		phase := s.Phase
		if phase == "" || phase == PhaseApply {
			phase = PhaseExplore
		}
		return LifecyclePhaseFailed{Phase: phase, Invocation: inv, Failure: LifecycleFailureCrashed, Detail: "exit status 2", Cost: LifecycleCost{Tokens: 10, WallMs: 100}}
	case LifecycleEventApprovalGranted:
		b := s.binding()
		return LifecycleApprovalGranted{Binding: LifecycleApprovalBinding{Patch: patch,
			Verification: orID(b.Verification, "some verification"), Lifecycle: b.Lifecycle}}
	case LifecycleEventApplyStarted:
		return LifecycleApplyStarted{Intent: applyIntent(patch, orID(s.Approval, "some approval"), max(s.Patch.Files, 1))}
	case LifecycleEventApplyConflicted:
		return LifecycleApplyConflicted{Paths: []string{"grep.go"}}
	case LifecycleEventApplyCompleted:
		return LifecycleApplyCompleted{Intent: orID(s.ApplyIntent, "some intent"), Files: max(s.Patch.Files, 1)}
	case LifecycleEventApplyRolledBack:
		return LifecycleApplyRolledBack{Intent: orID(s.ApplyIntent, "some intent"), Cause: LifecycleRollbackDrift}
	case LifecycleEventCancelRequested:
		return LifecycleCancelRequested{Note: "not needed any more"}
	}
	panic("unknown event kind " + kind)
}

// testEvidence is the evidence of running every frozen plan; outcomes
// names the outcome of each plan in order (passed when absent).
func testEvidence(f LifecycleFreeze, patch string, outcomes []LifecycleTestOutcome) LifecycleTestEvidence {
	e := LifecycleTestEvidence{Patch: patch, Results: []LifecycleTestResult{}}
	for i, plan := range f.TestPlans {
		o := LifecycleTestPassed
		if i < len(outcomes) {
			o = outcomes[i]
		}
		e.Results = append(e.Results, LifecycleTestResult{Plan: plan, Outcome: o, DurationMs: int64(100 * (i + 1)), Output: testID("output " + plan)})
	}
	return e
}

// verification is the frozen verifier's artifact for the state's patch
// and test evidence with the given outcome: every criterion met when
// verified, the first unmet otherwise.
func verification(s LifecycleState, f LifecycleFreeze, patch string, outcome Verdict) VerificationArtifact {
	v := VerificationArtifact{Patch: patch, Verifier: f.profile(LifecycleRoleVerifier),
		TestEvidence: orID(s.Tests.Evidence, "some test evidence"), Outcome: outcome}
	for i, d := range f.Criteria {
		st := CriterionMet
		if i == 0 && outcome != VerdictVerified {
			st = CriterionUnmet
		}
		v.Criteria = append(v.Criteria, LifecycleCriterionJudgement{Criterion: i + 1, Digest: d, Status: st})
	}
	if outcome == VerdictRepairable {
		v.Repair = "handle the empty input in parse before splitting"
	}
	return v
}

func applyIntent(patch, approval string, files int) LifecycleApplyIntent {
	in := LifecycleApplyIntent{Patch: patch, Approval: approval}
	for i := range files {
		in.Files = append(in.Files, LifecycleApplyFile{Path: fmt.Sprintf("pkg/file%02d.go", i),
			Before: testID(fmt.Sprintf("before %d", i)), After: testID(fmt.Sprintf("after %d", i))})
	}
	return in
}

// mustStep steps a well-formed or given event and fails the test on a
// refusal.
func mustStep(tb testing.TB, s LifecycleState, ev LifecycleEvent) LifecycleState {
	tb.Helper()
	next, _, err := StepLifecycle(s, ev)
	if err != nil {
		tb.Fatalf("step %s in %s: %v", ev.Kind(), s.where(), err)
	}
	return next
}

// lifecycleClass is the coarse class of a state that the transition table
// is written in: the phase and the round while running, the status
// otherwise.
func lifecycleClass(s LifecycleState) string {
	switch {
	case s.Status == "":
		return "none"
	case s.Status == LifecycleStatusRunning && s.Phase == PhaseExplore:
		return "explore"
	case s.Status == LifecycleStatusRunning:
		return fmt.Sprintf("%s/%d", s.Phase, s.Round)
	}
	return string(s.Status)
}

// allLifecycleClasses lists every class; every class meets every kind of
// event in the transcripts (TestLifecycleTranscripts checks it).
var allLifecycleClasses = []string{"none", "explore", "implement/1", "test/1", "review/1", "verify/1",
	"implement/2", "test/2", "review/2", "verify/2", "awaiting_approval", "approved", "applying",
	"applied", "rejected", "inconclusive", "failed", "cancelled"}

// statesByClass reaches one state of every class by a fixed script of
// well-formed events.
func statesByClass(tb testing.TB) map[string]LifecycleState {
	tb.Helper()
	out := map[string]LifecycleState{"none": {}}
	s := LifecycleState{}
	step := func(kind LifecycleEventKind) { s = mustStep(tb, s, wellFormed(s, kind)) }
	verify := func(o Verdict) LifecycleState {
		return mustStep(tb, s, LifecycleVerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, o)})
	}
	step(LifecycleEventCreated)
	out["explore"] = s
	out["cancelled"] = mustStep(tb, s, LifecycleCancelRequested{})
	out["failed"] = mustStep(tb, s, LifecyclePhaseFailed{Phase: PhaseExplore, Invocation: currentInvocation(s), Failure: LifecycleFailureFailClosed})
	for _, kind := range []LifecycleEventKind{LifecycleEventExploreCompleted, LifecycleEventImplementCompleted,
		LifecycleEventTestCompleted, LifecycleEventReviewCompleted} {
		step(kind)
		out[lifecycleClass(s)] = s
	}
	out["rejected"] = verify(VerdictRejected)
	out["inconclusive"] = verify(VerdictInconclusive)
	verified := verify(VerdictVerified)
	s = verify(VerdictRepairable)
	out[lifecycleClass(s)] = s
	for _, kind := range []LifecycleEventKind{LifecycleEventImplementCompleted, LifecycleEventTestCompleted, LifecycleEventReviewCompleted} {
		step(kind)
		out[lifecycleClass(s)] = s
	}
	s = verified
	out["awaiting_approval"] = s
	for _, kind := range []LifecycleEventKind{LifecycleEventApprovalGranted, LifecycleEventApplyStarted, LifecycleEventApplyCompleted} {
		step(kind)
		out[lifecycleClass(s)] = s
	}
	for _, c := range allLifecycleClasses {
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
var legalTransitions = map[string]map[LifecycleEventKind]string{
	"none": {LifecycleEventCreated: "explore"},
	"explore": {LifecycleEventExploreCompleted: "implement/1", LifecycleEventPhaseFailed: "explore",
		LifecycleEventCancelRequested: "cancelled"},
	"implement/1": {LifecycleEventImplementCompleted: "test/1", LifecycleEventPhaseFailed: "implement/1",
		LifecycleEventCancelRequested: "cancelled"},
	"test/1": {LifecycleEventTestCompleted: "review/1", LifecycleEventPhaseFailed: "test/1",
		LifecycleEventCancelRequested: "cancelled"},
	"review/1": {LifecycleEventReviewCompleted: "verify/1", LifecycleEventPhaseFailed: "review/1",
		LifecycleEventCancelRequested: "cancelled"},
	"verify/1": {LifecycleEventVerifyCompleted: "awaiting_approval", LifecycleEventPhaseFailed: "verify/1",
		LifecycleEventCancelRequested: "cancelled"},
	"implement/2": {LifecycleEventImplementCompleted: "test/2", LifecycleEventPhaseFailed: "implement/2",
		LifecycleEventCancelRequested: "cancelled"},
	"test/2": {LifecycleEventTestCompleted: "review/2", LifecycleEventPhaseFailed: "test/2",
		LifecycleEventCancelRequested: "cancelled"},
	"review/2": {LifecycleEventReviewCompleted: "verify/2", LifecycleEventPhaseFailed: "review/2",
		LifecycleEventCancelRequested: "cancelled"},
	"verify/2": {LifecycleEventVerifyCompleted: "awaiting_approval", LifecycleEventPhaseFailed: "verify/2",
		LifecycleEventCancelRequested: "cancelled"},
	"awaiting_approval": {LifecycleEventApprovalGranted: "approved", LifecycleEventCancelRequested: "cancelled"},
	"approved": {LifecycleEventApplyStarted: "applying", LifecycleEventApplyConflicted: "approved",
		LifecycleEventCancelRequested: "cancelled"},
	"applying": {LifecycleEventApplyCompleted: "applied", LifecycleEventApplyRolledBack: "approved"},
}

var terminalClasses = []string{"applied", "rejected", "inconclusive", "failed", "cancelled"}

// TestStepLifecycle_TransitionTable checks every pair of state class and
// event kind against the hand-written table.
func TestStepLifecycle_TransitionTable(t *testing.T) {
	states := statesByClass(t)
	for _, class := range allLifecycleClasses {
		s := states[class]
		for _, kind := range lifecycleEventKinds {
			t.Run(class+"/"+string(kind), func(t *testing.T) {
				next, fx, err := StepLifecycle(s, wellFormed(s, kind))
				want, legal := legalTransitions[class][kind]
				if legal {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if got := lifecycleClass(next); got != want {
						t.Fatalf("went to %s, want %s", got, want)
					}
					if len(fx) == 0 {
						t.Fatal("a transition with no effect")
					}
					return
				}
				wantCode := LifecycleRefusalIllegalTransition
				if slices.Contains(terminalClasses, class) {
					wantCode = LifecycleRefusalTerminal
				}
				checkRefusal(t, s, next, fx, err, wantCode)
			})
		}
	}
}

// checkRefusal asserts a refusal with code that left the state as it was.
func checkRefusal(t *testing.T, before, after LifecycleState, fx []LifecycleEffect, err error, code LifecycleRefusal) {
	t.Helper()
	var se *LifecycleStepError
	switch {
	case err == nil:
		t.Fatalf("accepted; want a %s refusal (now %s)", code, after.where())
	case !errors.As(err, &se):
		t.Fatalf("refusal %v is not a *LifecycleStepError", err)
	case se.Code != code:
		t.Fatalf("refused with %s, want %s: %v", se.Code, code, err)
	case KindOf(err) != code.kind():
		t.Fatalf("refusal kind %s, want %s", KindOf(err), code.kind())
	case fx != nil:
		t.Fatalf("a refusal returned effects %v", fx)
	case after.Digest() != before.Digest():
		t.Fatal("a refusal changed the state")
	}
}

// TestStepLifecycle_Refusals covers the refusals a table of well-formed
// events cannot reach: stale invocations, artifacts bound to something
// else, inconsistent verdicts, stale approvals and bad freezes.
func TestStepLifecycle_Refusals(t *testing.T) {
	states := statesByClass(t)
	verifyIn := func(class string, edit func(*VerificationArtifact)) (LifecycleState, LifecycleEvent) {
		s := states[class]
		v := verification(s, s.Freeze, s.Patch.ID, VerdictVerified)
		edit(&v)
		return s, LifecycleVerifyCompleted{Invocation: currentInvocation(s), Verification: v}
	}
	failedTests := func() LifecycleState {
		s := states["test/1"]
		return mustStep(t, s, LifecycleTestCompleted{Invocation: currentInvocation(s),
			Evidence: testEvidence(s.Freeze, s.Patch.ID, []LifecycleTestOutcome{LifecycleTestFailed})})
	}
	tests := []struct {
		name  string
		state func() (LifecycleState, LifecycleEvent)
		code  LifecycleRefusal
	}{
		{"StaleInvocationOfEarlierPhase", func() (LifecycleState, LifecycleEvent) {
			s := states["implement/1"]
			return s, LifecycleImplementCompleted{Invocation: LifecycleInvocationID(s.Lifecycle, PhaseExplore, 1), Outcome: LifecyclePatchAccepted,
				Patch: testID("p"), Base: s.Freeze.Snapshot, Files: 1, Bytes: 1}
		}, LifecycleRefusalStaleInvocation},
		{"StaleInvocationOfOtherLifecycle", func() (LifecycleState, LifecycleEvent) {
			s := states["explore"]
			return s, LifecycleExploreCompleted{Invocation: LifecycleInvocationID("lcy_ffffffffffffffffffffffff", PhaseExplore, 1), Evidence: []string{}}
		}, LifecycleRefusalStaleInvocation},
		{"FailureOfAnotherPhase", func() (LifecycleState, LifecycleEvent) {
			s := states["test/1"]
			return s, LifecyclePhaseFailed{Phase: PhaseImplement, Invocation: currentInvocation(s), Failure: LifecycleFailureCrashed}
		}, LifecycleRefusalStaleInvocation},
		{"PatchOnOtherSnapshot", func() (LifecycleState, LifecycleEvent) {
			s := states["implement/1"]
			ev := wellFormed(s, LifecycleEventImplementCompleted).(LifecycleImplementCompleted)
			ev.Base = testID("another snapshot")
			return s, ev
		}, LifecycleRefusalWrongArtifact},
		{"RepairPatchIsThePatchRepaired", func() (LifecycleState, LifecycleEvent) {
			s := states["implement/2"]
			ev := wellFormed(s, LifecycleEventImplementCompleted).(LifecycleImplementCompleted)
			ev.Patch = s.Prior.Patch
			return s, ev
		}, LifecycleRefusalWrongArtifact},
		{"TestsOfOtherPatch", func() (LifecycleState, LifecycleEvent) {
			s := states["test/1"]
			return s, LifecycleTestCompleted{Invocation: currentInvocation(s), Evidence: testEvidence(s.Freeze, testID("other"), nil)}
		}, LifecycleRefusalWrongArtifact},
		{"TestOfUnfrozenPlan", func() (LifecycleState, LifecycleEvent) {
			s := states["test/1"]
			e := testEvidence(s.Freeze, s.Patch.ID, nil)
			e.Results[0].Plan = "b3:" + "0000000000000000000000000000000000000000000000000000000000000000"
			return s, LifecycleTestCompleted{Invocation: currentInvocation(s), Evidence: e}
		}, LifecycleRefusalWrongArtifact},
		{"ReviewByVerifier", func() (LifecycleState, LifecycleEvent) {
			s := states["review/1"]
			ev := wellFormed(s, LifecycleEventReviewCompleted).(LifecycleReviewCompleted)
			ev.Review.Reviewer = s.Freeze.profile(LifecycleRoleVerifier)
			return s, ev
		}, LifecycleRefusalWrongArtifact},
		{"ReviewWithoutFrozenCriteria", func() (LifecycleState, LifecycleEvent) {
			s := states["review/1"]
			ev := wellFormed(s, LifecycleEventReviewCompleted).(LifecycleReviewCompleted)
			ev.Review.Criteria = ev.Review.Criteria[:1]
			return s, ev
		}, LifecycleRefusalWrongArtifact},
		{"VerificationByReviewer", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Verifier = states["verify/1"].Freeze.profile(LifecycleRoleReviewer) })
		}, LifecycleRefusalWrongArtifact},
		{"VerificationByImplementer", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) {
				v.Verifier = states["verify/1"].Freeze.profile(LifecycleRoleImplementer)
			})
		}, LifecycleRefusalWrongArtifact},
		{"VerificationOfPriorPatch", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/2", func(v *VerificationArtifact) { v.Patch = states["verify/2"].Prior.Patch })
		}, LifecycleRefusalWrongArtifact},
		{"VerificationCitingReviewAsTestEvidence", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.TestEvidence = states["verify/1"].Review })
		}, LifecycleRefusalWrongArtifact},
		{"VerificationSkipsCriterion", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria = v.Criteria[1:] })
		}, LifecycleRefusalWrongArtifact},
		{"VerificationOfOtherCriterion", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria[1].Digest = testID("another criterion") })
		}, LifecycleRefusalWrongArtifact},
		{"VerifiedWithUnmetCriterion", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Criteria[0].Status = CriterionUnknown })
		}, LifecycleRefusalInconsistentVerdict},
		{"VerifiedWithFailingTest", func() (LifecycleState, LifecycleEvent) {
			s := failedTests()
			s = mustStep(t, s, wellFormed(s, LifecycleEventReviewCompleted))
			return s, LifecycleVerifyCompleted{Invocation: currentInvocation(s), Verification: verification(s, s.Freeze, s.Patch.ID, VerdictVerified)}
		}, LifecycleRefusalInconsistentVerdict},
		{"RepairableWithoutInstructions", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Outcome = VerdictRepairable })
		}, LifecycleRefusalInconsistentVerdict},
		{"RejectedWithInstructions", func() (LifecycleState, LifecycleEvent) {
			return verifyIn("verify/1", func(v *VerificationArtifact) { v.Outcome, v.Repair = VerdictRejected, "x" })
		}, LifecycleRefusalInconsistentVerdict},
		{"ApprovalOfOtherPatch", func() (LifecycleState, LifecycleEvent) {
			s := states["awaiting_approval"]
			b := s.binding()
			b.Patch = testID("other patch")
			return s, LifecycleApprovalGranted{Binding: b}
		}, LifecycleRefusalApprovalMismatch},
		{"ApprovalOfOtherVerification", func() (LifecycleState, LifecycleEvent) {
			s := states["awaiting_approval"]
			b := s.binding()
			b.Verification = states["verify/2"].Prior.Verification
			return s, LifecycleApprovalGranted{Binding: b}
		}, LifecycleRefusalApprovalMismatch},
		{"ApprovalOfOlderLifecycleDigest", func() (LifecycleState, LifecycleEvent) {
			s := states["awaiting_approval"]
			b := s.binding()
			b.Lifecycle = states["verify/1"].Digest()
			return s, LifecycleApprovalGranted{Binding: b}
		}, LifecycleRefusalApprovalMismatch},
		{"IntentOfOtherPatch", func() (LifecycleState, LifecycleEvent) {
			s := states["approved"]
			return s, LifecycleApplyStarted{Intent: applyIntent(testID("other patch"), s.Approval, s.Patch.Files)}
		}, LifecycleRefusalIntentMismatch},
		{"IntentWithoutApproval", func() (LifecycleState, LifecycleEvent) {
			s := states["approved"]
			return s, LifecycleApplyStarted{Intent: applyIntent(s.Patch.ID, testID("forged approval"), s.Patch.Files)}
		}, LifecycleRefusalIntentMismatch},
		{"IntentMissingAFile", func() (LifecycleState, LifecycleEvent) {
			s := states["approved"]
			return s, LifecycleApplyStarted{Intent: applyIntent(s.Patch.ID, s.Approval, s.Patch.Files-1)}
		}, LifecycleRefusalIntentMismatch},
		{"CompletionOfOtherIntent", func() (LifecycleState, LifecycleEvent) {
			s := states["applying"]
			return s, LifecycleApplyCompleted{Intent: testID("other intent"), Files: s.Patch.Files}
		}, LifecycleRefusalIntentMismatch},
		{"CompletionMissingAFile", func() (LifecycleState, LifecycleEvent) {
			s := states["applying"]
			return s, LifecycleApplyCompleted{Intent: s.ApplyIntent, Files: s.Patch.Files - 1}
		}, LifecycleRefusalIntentMismatch},
		{"RollbackOfOtherIntent", func() (LifecycleState, LifecycleEvent) {
			s := states["applying"]
			return s, LifecycleApplyRolledBack{Intent: testID("other intent"), Cause: LifecycleRollbackIO}
		}, LifecycleRefusalIntentMismatch},
		{"NilEvent", func() (LifecycleState, LifecycleEvent) { return states["explore"], nil }, LifecycleRefusalInvalidPayload},
	}
	for _, bad := range badFreezes() {
		tests = append(tests, struct {
			name  string
			state func() (LifecycleState, LifecycleEvent)
			code  LifecycleRefusal
		}{"Freeze" + bad.name, func() (LifecycleState, LifecycleEvent) {
			return LifecycleState{}, LifecycleCreated{Lifecycle: testLifecycleID, Freeze: bad.freeze}
		}, LifecycleRefusalInvalidPayload})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ev := tt.state()
			next, fx, err := StepLifecycle(s, ev)
			checkRefusal(t, s, next, fx, err, tt.code)
		})
	}
}

// badFreezes are freezes a lifecycle must refuse to start with.
func badFreezes() []struct {
	name   string
	freeze LifecycleFreeze
} {
	edit := func(f func(*LifecycleFreeze)) LifecycleFreeze {
		fr := testFreeze(2, 2)
		f(&fr)
		return fr
	}
	return []struct {
		name   string
		freeze LifecycleFreeze
	}{
		{"NoTestPlans", edit(func(f *LifecycleFreeze) { f.TestPlans = []string{} })},
		{"UnsortedTestPlans", edit(func(f *LifecycleFreeze) { f.TestPlans[0], f.TestPlans[1] = f.TestPlans[1], f.TestPlans[0] })},
		{"RepeatedTestPlan", edit(func(f *LifecycleFreeze) { f.TestPlans[1] = f.TestPlans[0] })},
		{"ConcurrencyTwo", edit(func(f *LifecycleFreeze) { f.Concurrency = 2 })},
		{"VerifierIsImplementer", edit(func(f *LifecycleFreeze) { f.Profiles[4].Digest = f.Profiles[1].Digest })},
		{"VerifierIsReviewer", edit(func(f *LifecycleFreeze) { f.Profiles[4].Digest = f.Profiles[3].Digest })},
		// Settings that differ only by the role's name: one worker.
		{"VerifierWorkerIsReviewers", edit(func(f *LifecycleFreeze) {
			f.Profiles[3].Worker, f.Profiles[4].Worker = testID("worker"), testID("worker")
		})},
		{"VerifierWorkerIsImplementers", edit(func(f *LifecycleFreeze) {
			f.Profiles[1].Worker, f.Profiles[4].Worker = testID("worker"), testID("worker")
		})},
		{"WritingVerifier", edit(func(f *LifecycleFreeze) { f.Profiles[4].Sandbox = "workspace-write" })},
		{"RolesOutOfOrder", edit(func(f *LifecycleFreeze) { f.Profiles[3], f.Profiles[4] = f.Profiles[4], f.Profiles[3] })},
		{"MissingRole", edit(func(f *LifecycleFreeze) { f.Profiles = f.Profiles[:4] })},
		{"NoCriteria", edit(func(f *LifecycleFreeze) { f.Criteria = nil })},
		{"TooManyCriteria", edit(func(f *LifecycleFreeze) {
			for len(f.Criteria) <= MaxCriteria {
				f.Criteria = append(f.Criteria, testID("more"))
			}
		})},
		{"ZeroBudget", edit(func(f *LifecycleFreeze) { f.Budget.WorkerRuns = 0 })},
		{"HugeBudget", edit(func(f *LifecycleFreeze) { f.Budget.Tokens = LifecycleMaxTokens + 1 })},
		{"MalformedChangeID", edit(func(f *LifecycleFreeze) { f.ChangeID = "chg_XYZ" })},
		{"MalformedSnapshot", edit(func(f *LifecycleFreeze) { f.Snapshot = "none" })},
	}
}

// TestStepLifecycle_OneRepair: the first repairable verdict consumes the
// one reservation in its own transition; a second repairable verdict
// cannot repair and ends the lifecycle, consuming nothing more.
func TestStepLifecycle_OneRepair(t *testing.T) {
	s := statesByClass(t)["verify/1"]
	repair := func(s LifecycleState) (LifecycleState, []LifecycleEffect) {
		next, fx, err := StepLifecycle(s, LifecycleVerifyCompleted{Invocation: currentInvocation(s),
			Verification: verification(s, s.Freeze, s.Patch.ID, VerdictRepairable)})
		if err != nil {
			t.Fatal(err)
		}
		return next, fx
	}
	s, fx := repair(s)
	if s.RepairsUsed != 1 || s.Round != 2 || s.Phase != PhaseImplement {
		t.Fatalf("after the first repairable verdict: %s round %d, repairs %d", s.where(), s.Round, s.RepairsUsed)
	}
	consume, ok := fx[0].(LifecycleConsumeRepair)
	if !ok || consume.Change != s.Freeze.ChangeID || consume.Verification != s.Prior.Verification {
		t.Fatalf("effects %v do not consume the repair first", fx)
	}
	inv, ok := fx[1].(LifecycleInvoke)
	if !ok || inv.Phase != PhaseImplement || inv.RepairFrom != s.Prior.Verification || inv.Patch != s.Prior.Patch || inv.Attempt != 2 {
		t.Fatalf("effects %v do not invoke the repair with the prior verification and patch", fx)
	}
	for _, kind := range []LifecycleEventKind{LifecycleEventImplementCompleted, LifecycleEventTestCompleted, LifecycleEventReviewCompleted} {
		s = mustStep(t, s, wellFormed(s, kind))
	}
	s, fx = repair(s)
	if s.Status != LifecycleStatusRejected || s.Reason != LifecycleReasonRepairExhausted || s.RepairsUsed != 1 {
		t.Fatalf("a second repairable verdict left %s (%s), repairs %d", s.where(), s.Reason, s.RepairsUsed)
	}
	if len(fx) != 1 || fx[0] != (LifecycleDone{Status: LifecycleStatusRejected, Reason: LifecycleReasonRepairExhausted}) {
		t.Fatalf("effects %v; want only done", fx)
	}
}

// TestStepLifecycle_Budget: each dimension of the budget, once spent,
// stops the next invocation; the run that spent it still counts.
func TestStepLifecycle_Budget(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget LifecycleBudget
		cost   LifecycleCost
	}{
		{"WorkerRuns", LifecycleBudget{Tokens: 1 << 20, WallMs: 1 << 20, WorkerRuns: 1}, LifecycleCost{}},
		{"Tokens", LifecycleBudget{Tokens: 500, WallMs: 1 << 20, WorkerRuns: 9}, LifecycleCost{Tokens: 500}},
		{"WallTime", LifecycleBudget{Tokens: 1 << 20, WallMs: 60_000, WorkerRuns: 9}, LifecycleCost{WallMs: 60_001}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := testFreeze(1, 1)
			f.Budget = tt.budget
			s := mustStep(t, LifecycleState{}, LifecycleCreated{Lifecycle: testLifecycleID, Freeze: f})
			s, fx, err := StepLifecycle(s, LifecycleExploreCompleted{Invocation: currentInvocation(s), Evidence: []string{}, Cost: tt.cost})
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != LifecycleStatusFailed || s.Reason != LifecycleReasonBudgetExhausted || s.Phase != PhaseImplement || s.Attempts.Implement != 0 {
				t.Fatalf("%s (%s), implement attempts %d; want failed at implement before it ran", s.where(), s.Reason, s.Attempts.Implement)
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

// TestStepLifecycle_Retry: an ordinary failure is retried once under a new
// invocation id; a second failure, or any fail-closed failure, ends the
// lifecycle.
func TestStepLifecycle_Retry(t *testing.T) {
	s := statesByClass(t)["test/1"]
	first := currentInvocation(s)
	fail := func(s LifecycleState, f LifecycleFailure) LifecycleState {
		return mustStep(t, s, LifecyclePhaseFailed{Phase: s.Phase, Invocation: currentInvocation(s), Failure: f})
	}
	retried := fail(s, LifecycleFailureTimeout)
	if retried.Status != LifecycleStatusRunning || retried.Attempts.Test != 2 || currentInvocation(retried) == first {
		t.Fatalf("after one timeout: %s, attempt %d, invocation %s", retried.where(), retried.Attempts.Test, currentInvocation(retried))
	}
	// The first attempt's late completion is stale now.
	_, _, err := StepLifecycle(retried, LifecycleTestCompleted{Invocation: first, Evidence: testEvidence(s.Freeze, s.Patch.ID, nil)})
	var se *LifecycleStepError
	if !errors.As(err, &se) || se.Code != LifecycleRefusalStaleInvocation {
		t.Fatalf("the retried attempt's completion: %v", err)
	}
	if ended := fail(retried, LifecycleFailureCrashed); ended.Reason != LifecycleReasonWorkerFailed {
		t.Fatalf("after two failures: %s (%s)", ended.where(), ended.Reason)
	}
	if ended := fail(s, LifecycleFailureFailClosed); ended.Reason != LifecycleReasonFailClosed || ended.Attempts.Test != 1 {
		t.Fatalf("after a fail-closed failure: %s (%s)", ended.where(), ended.Reason)
	}
	// The retry counter belongs to a phase run: the next phase starts afresh.
	next := mustStep(t, retried, wellFormed(retried, LifecycleEventTestCompleted))
	if next.Retries != 0 {
		t.Fatalf("retries %d carried into %s", next.Retries, next.Phase)
	}
}

// TestStepLifecycle_TestEvidenceFailsClosed: a frozen plan without a result
// or with an error result ends the lifecycle; it is never a pass.
func TestStepLifecycle_TestEvidenceFailsClosed(t *testing.T) {
	s := statesByClass(t)["test/1"]
	missing := testEvidence(s.Freeze, s.Patch.ID, nil)
	missing.Results = missing.Results[1:]
	for _, tt := range []struct {
		name     string
		evidence LifecycleTestEvidence
		want     LifecycleReason
	}{
		{"Missing", missing, LifecycleReasonTestEvidenceMissing},
		{"NoResults", LifecycleTestEvidence{Patch: s.Patch.ID, Results: []LifecycleTestResult{}}, LifecycleReasonTestEvidenceMissing},
		{"Error", testEvidence(s.Freeze, s.Patch.ID, []LifecycleTestOutcome{LifecycleTestPassed, LifecycleTestError}), LifecycleReasonTestEvidenceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next := mustStep(t, s, LifecycleTestCompleted{Invocation: currentInvocation(s), Evidence: tt.evidence})
			if next.Status != LifecycleStatusFailed || next.Reason != tt.want {
				t.Fatalf("%s (%s); want failed (%s)", next.where(), next.Reason, tt.want)
			}
		})
	}
	// Failing tests are evidence: the lifecycle goes on to be judged.
	next := mustStep(t, s, LifecycleTestCompleted{Invocation: currentInvocation(s),
		Evidence: testEvidence(s.Freeze, s.Patch.ID, []LifecycleTestOutcome{LifecycleTestFailed})})
	if next.Phase != PhaseReview || next.Tests.Failed != 1 || next.Tests.Passed != 1 {
		t.Fatalf("failing tests led to %s with %+v", next.where(), next.Tests)
	}
}

// TestStepLifecycle_DoesNotAlias: the machine copies what it keeps, so
// neither the caller's later edits of an event nor a step on a state can
// change another state.
func TestStepLifecycle_DoesNotAlias(t *testing.T) {
	f := testFreeze(2, 2)
	s := mustStep(t, LifecycleState{}, LifecycleCreated{Lifecycle: testLifecycleID, Freeze: f})
	before := s.Digest()
	f.TestPlans[0], f.Criteria[0] = testID("edited"), testID("edited")
	if s.Digest() != before {
		t.Fatal("editing the created event changed the state")
	}
	ev := LifecycleExploreCompleted{Invocation: currentInvocation(s), Evidence: []string{testID("a"), testID("b")}}
	slices.Sort(ev.Evidence)
	next := mustStep(t, s, ev)
	d := next.Digest()
	ev.Evidence[0] = testID("c")
	if next.Digest() != d || s.Digest() != before {
		t.Fatal("a step aliases the event or the previous state")
	}
}

// TestLifecycleInvocationID: deterministic in (lifecycle, phase, attempt)
// and different when any of them differs.
func TestLifecycleInvocationID(t *testing.T) {
	a := LifecycleInvocationID(testLifecycleID, PhaseImplement, 2)
	if a != LifecycleInvocationID(testLifecycleID, PhaseImplement, 2) || !contentid.Valid(a) {
		t.Fatalf("not deterministic or malformed: %s", a)
	}
	seen := map[string]bool{a: true}
	for _, other := range []string{
		LifecycleInvocationID(testLifecycleID, PhaseImplement, 1),
		LifecycleInvocationID(testLifecycleID, PhaseVerify, 2),
		LifecycleInvocationID("lcy_ffffffffffffffffffffffff", PhaseImplement, 2),
	} {
		if seen[other] {
			t.Fatalf("two invocations share id %s", other)
		}
		seen[other] = true
	}
	// Frozen: adapters find an uncommitted attempt's side effects by this
	// id across versions of Needle.
	if a != "b3:"+frozenInvocationHex {
		t.Errorf("LifecycleInvocationID = %s; the invocation identity changed (was b3:%s)", a, frozenInvocationHex)
	}
}

const frozenInvocationHex = "7f3d44316bdcaf36e5dc3252aa3970989362b65b69e2b91540bb25a5b0a7e0c1"

// TestLifecycleMachine_Pure holds the machine to more than the pure core's
// rule: no clock, randomness, environment or file system either, so that
// a replay can only ever compute the same states.
func TestLifecycleMachine_Pure(t *testing.T) {
	// lazyregexp is regexp compiled on first use: the same matches.
	allowed := map[string]bool{"bytes": true, "encoding/json": true, "errors": true, "fmt": true, "regexp": true,
		"slices": true, "strings": true, "unicode/utf8": true, "github.com/needle-dev/needle/product/internal/contentid": true,
		"github.com/needle-dev/needle/product/internal/lazyregexp": true}
	files, err := filepath.Glob("machine*.go")
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
	if n < 4 {
		t.Fatalf("found %d machine files; the test would check too little", n)
	}
}
