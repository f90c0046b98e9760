package lifecycle

import (
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// Samples of well-formed values, for the tests and benchmarks of the
// machine and of its drivers: a freeze, ids and, for any state and kind,
// the event a correct parent would send. They are plain values; nothing
// here reads a clock, a file or randomness.

// SampleID is a well-formed content id named name.
func SampleID(name string) string { return contentid.OfBytes("needle.test.v1", []byte(name)) }

// SampleFreeze is a valid freeze with the given number of test plans and
// criteria and a budget of 16 worker runs.
func SampleFreeze(plans, criteria int) Freeze {
	f := Freeze{
		ChangeID:    "chg_0123456789abcdef01234567",
		RequestID:   SampleID("request"),
		Snapshot:    SampleID("snapshot"),
		Budget:      Budget{Tokens: 1_000_000, WallMs: 3_600_000, WorkerRuns: 16},
		Concurrency: 1,
	}
	for i := range criteria {
		f.Criteria = append(f.Criteria, SampleID(fmt.Sprintf("criterion %d", i+1)))
	}
	for _, role := range Roles {
		f.Profiles = append(f.Profiles, ProfileRef{Role: role, Profile: "default", Revision: 1,
			Sandbox: RoleSandbox[role], Digest: SampleID("profile " + string(role))})
	}
	for i := range plans {
		f.TestPlans = append(f.TestPlans, SampleID(fmt.Sprintf("plan %d", i+1)))
	}
	slices.Sort(f.TestPlans)
	return f
}

// SampleLifecycleID is a well-formed lifecycle id.
const SampleLifecycleID = "lcy_0123456789abcdef01234567"

// orID is id, or a well-formed stand-in when id is empty, so that an event
// built for a state that lacks the reference is still well-formed and is
// refused for the state, not for its form.
func orID(id, name string) string {
	if id == "" {
		return SampleID(name)
	}
	return id
}

// currentInvocation is the invocation a completion in s answers, or a
// well-formed one when s runs no adapter.
func currentInvocation(s State) string {
	if s.Status != StatusRunning {
		return InvocationID(orString(s.Lifecycle, SampleLifecycleID), PhaseExplore, 1)
	}
	return InvocationID(s.Lifecycle, s.Phase, *s.Attempts.of(s.Phase))
}

func orString(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// WellFormed builds the event of a kind that a correct parent would send in
// s if s accepted that kind: the current invocation, the current patch, the
// frozen profiles, every test passing, a verified verdict. Refusals of it
// are therefore about the state, never about the event.
func WellFormed(s State, kind EventKind) Event {
	freeze := s.Freeze
	if s.Status == "" {
		freeze = SampleFreeze(2, 2)
	}
	inv := currentInvocation(s)
	patch := orID(s.Patch.ID, "some patch")
	switch kind {
	case EventCreated:
		return Created{Lifecycle: SampleLifecycleID, Freeze: SampleFreeze(2, 2)}
	case EventExploreCompleted:
		return ExploreCompleted{Invocation: inv, Evidence: []string{SampleID("evidence")}, Cost: Cost{Tokens: 100, WallMs: 1000}}
	case EventImplementCompleted:
		return ImplementCompleted{Invocation: inv, Outcome: PatchAccepted,
			Patch: SampleID(fmt.Sprintf("patch round %d attempt %d", s.Round, s.Attempts.Implement)),
			Base:  freeze.Snapshot, Files: 2, Bytes: 120, Cost: Cost{Tokens: 1000, WallMs: 5000}}
	case EventTestCompleted:
		return TestCompleted{Invocation: inv, Evidence: testEvidence(freeze, patch, nil), Cost: Cost{WallMs: 2000}}
	case EventReviewCompleted:
		return ReviewCompleted{Invocation: inv, Review: ReviewArtifact{Patch: patch,
			Reviewer: freeze.Profile(RoleReviewer), Criteria: slices.Clone(freeze.Criteria),
			Findings: []ReviewFinding{{Severity: FindingMinor, Criterion: 1, Summary: "names could be clearer"}}},
			Cost: Cost{Tokens: 300, WallMs: 3000}}
	case EventVerifyCompleted:
		return VerifyCompleted{Invocation: inv, Verification: verification(s, freeze, patch, VerdictVerified),
			Cost: Cost{Tokens: 400, WallMs: 4000}}
	case EventPhaseFailed:
		phase := s.Phase
		if phase == "" || phase == PhaseApply {
			phase = PhaseExplore
		}
		return PhaseFailed{Phase: phase, Invocation: inv, Failure: FailureCrashed, Detail: "exit status 2", Cost: Cost{Tokens: 10, WallMs: 100}}
	case EventApprovalGranted:
		b := s.Binding()
		return ApprovalGranted{Binding: ApprovalBinding{Patch: patch,
			Verification: orID(b.Verification, "some verification"), Lifecycle: b.Lifecycle}}
	case EventApplyStarted:
		return ApplyStarted{Intent: applyIntent(patch, orID(s.Approval, "some approval"), max(s.Patch.Files, 1))}
	case EventApplyConflicted:
		return ApplyConflicted{Paths: []string{"grep.go"}}
	case EventApplyCompleted:
		return ApplyCompleted{Intent: orID(s.ApplyIntent, "some intent"), Files: max(s.Patch.Files, 1)}
	case EventApplyRolledBack:
		return ApplyRolledBack{Intent: orID(s.ApplyIntent, "some intent"), Cause: RollbackDrift}
	case EventCancelRequested:
		return CancelRequested{Note: "not needed any more"}
	}
	panic("unknown event kind " + kind)
}

// testEvidence is the evidence of running every frozen plan; outcomes
// names the outcome of each plan in order (passed when absent).
func testEvidence(f Freeze, patch string, outcomes []TestOutcome) TestEvidence {
	e := TestEvidence{Patch: patch, Results: []TestResult{}}
	for i, plan := range f.TestPlans {
		o := TestPassed
		if i < len(outcomes) {
			o = outcomes[i]
		}
		e.Results = append(e.Results, TestResult{Plan: plan, Outcome: o, DurationMs: int64(100 * (i + 1)), Output: SampleID("output " + plan)})
	}
	return e
}

// verification is the frozen verifier's artifact for the state's patch
// and test evidence with the given outcome: every criterion met when
// verified, the first unmet otherwise.
func verification(s State, f Freeze, patch string, outcome Verdict) VerificationArtifact {
	v := VerificationArtifact{Patch: patch, Verifier: f.Profile(RoleVerifier),
		TestEvidence: orID(s.Tests.Evidence, "some test evidence"), Outcome: outcome}
	for i, d := range f.Criteria {
		st := CriterionMet
		if i == 0 && outcome != VerdictVerified {
			st = CriterionUnmet
		}
		v.Criteria = append(v.Criteria, CriterionJudgement{Criterion: i + 1, Digest: d, Status: st})
	}
	if outcome == VerdictRepairable {
		v.Repair = "handle the empty input in parse before splitting"
	}
	return v
}

func applyIntent(patch, approval string, files int) ApplyIntent {
	in := ApplyIntent{Patch: patch, Approval: approval}
	for i := range files {
		in.Files = append(in.Files, ApplyFile{Path: fmt.Sprintf("pkg/file%02d.go", i),
			Before: SampleID(fmt.Sprintf("before %d", i)), After: SampleID(fmt.Sprintf("after %d", i))})
	}
	return in
}
