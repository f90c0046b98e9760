package product

import (
	"strings"
	"testing"
)

func TestDecodeLifecycleState(t *testing.T) {
	states := statesByClass(t)
	t.Run("OK", func(t *testing.T) {
		for class, s := range states {
			got, err := DecodeLifecycleState(s.Canonical())
			if err != nil {
				t.Fatalf("%s: %v", class, err)
			}
			if got.Digest() != s.Digest() {
				t.Fatalf("%s: the decoded state has another digest", class)
			}
		}
	})
	// Each corruption is a projection row that no sequence of events can
	// produce; reading it must fail rather than run a lifecycle from it.
	corrupt := []struct {
		name  string
		class string
		edit  func(*LifecycleState)
	}{
		{"SecondRepair", "implement/2", func(s *LifecycleState) { s.RepairsUsed = 2 }},
		{"RoundTwoWithoutRepair", "implement/2", func(s *LifecycleState) { s.RepairsUsed = 0 }},
		{"RepairWithoutPrior", "implement/2", func(s *LifecycleState) { s.Prior = LifecyclePrior{} }},
		{"SkippedPhase", "review/1", func(s *LifecycleState) { s.Attempts.Test = 0; s.Usage.WorkerRuns-- }},
		{"PhaseAhead", "test/1", func(s *LifecycleState) { s.Attempts.Verify = 1; s.Usage.WorkerRuns++ }},
		{"UncountedRun", "test/1", func(s *LifecycleState) { s.Usage.WorkerRuns++ }},
		{"RunningWithoutAttempt", "test/1", func(s *LifecycleState) { s.Attempts.Test = 0; s.Usage.WorkerRuns-- }},
		{"RunningOverBudget", "test/1", func(s *LifecycleState) { s.Usage.Tokens = s.Freeze.Budget.Tokens }},
		{"TooManyRetries", "test/1", func(s *LifecycleState) { s.Retries = LifecycleMaxRetries + 1 }},
		{"PatchBeforeImplement", "implement/1", func(s *LifecycleState) { s.Patch = LifecyclePatchRef{ID: testID("p"), Files: 1} }},
		{"ReviewWithoutTests", "verify/1", func(s *LifecycleState) { s.Tests = LifecycleTestSummary{} }},
		{"UnavailableTestsPassed", "review/1", func(s *LifecycleState) { s.Tests.Passed--; s.Tests.Errors++ }},
		{"TestsMissAPlan", "review/1", func(s *LifecycleState) { s.Tests.Passed-- }},
		{"VerificationWhileVerifying", "verify/1", func(s *LifecycleState) {
			s.Verification = LifecycleVerificationRef{ID: testID("v"), Outcome: VerdictVerified}
		}},
		{"ApplyWithoutVerifiedOutcome", "awaiting_approval", func(s *LifecycleState) { s.Verification.Outcome = VerdictRepairable }},
		{"AwaitingOutsideApply", "awaiting_approval", func(s *LifecycleState) { s.Phase = PhaseVerify }},
		{"ApprovedWithoutApproval", "approved", func(s *LifecycleState) { s.Approval = "" }},
		{"ApprovalBeforeApproving", "awaiting_approval", func(s *LifecycleState) { s.Approval = testID("a") }},
		{"ApplyingWithoutIntent", "applying", func(s *LifecycleState) { s.ApplyIntent = "" }},
		{"ReasonWhileRunning", "explore", func(s *LifecycleState) { s.Reason = LifecycleReasonCancelled }},
		{"TerminalWithoutReason", "rejected", func(s *LifecycleState) { s.Reason = "" }},
		{"ReasonOfAnotherStatus", "rejected", func(s *LifecycleState) { s.Reason = LifecycleReasonWorkerFailed }},
		{"ReasonInWrongPhase", "rejected", func(s *LifecycleState) { s.Reason = LifecycleReasonPatchRejected }},
		{"VerdictDisagreesWithReason", "rejected", func(s *LifecycleState) { s.Verification.Outcome = VerdictInconclusive }},
		{"UnknownStatus", "explore", func(s *LifecycleState) { s.Status = "paused" }},
		{"SeqZero", "explore", func(s *LifecycleState) { s.Seq = 0 }},
		{"ConcurrencyTwo", "explore", func(s *LifecycleState) { s.Freeze.Concurrency = 2 }},
		{"UnsortedEvidence", "implement/1", func(s *LifecycleState) { s.Evidence = []string{testID("b"), testID("a"), testID("a")} }},
		{"ConflictWithoutApproval", "awaiting_approval", func(s *LifecycleState) { s.ApplyConflicts = 1 }},
		{"ZeroStateWithData", "none", func(s *LifecycleState) { s.Seq = 3 }},
	}
	for _, tt := range corrupt {
		t.Run("Err"+tt.name, func(t *testing.T) {
			s := states[tt.class].clone()
			tt.edit(&s)
			if _, err := DecodeLifecycleState(s.Canonical()); err == nil || KindOf(err) != KindInvalidInput {
				t.Fatalf("read a corrupt projection: %v", err)
			}
		})
	}
	data := string(states["verify/1"].Canonical())
	for name, text := range map[string]string{
		"NotCanonical": strings.Replace(data, ",", ", ", 1),
		"UnknownField": strings.Replace(data, "{", `{"next":"apply",`, 1),
		"Truncated":    data[:len(data)/2],
		"Empty":        "",
	} {
		t.Run("Err"+name, func(t *testing.T) {
			if _, err := DecodeLifecycleState([]byte(text)); err == nil || KindOf(err) != KindInvalidInput {
				t.Fatalf("read %q: %v", clip(text, 60), err)
			}
		})
	}
}

// TestLifecycleState_Digest: the digest changes with every accepted event,
// even one that changes nothing else (an apply conflict), so a
// compare-and-swap on it can never mistake a newer state for an older one.
func TestLifecycleState_Digest(t *testing.T) {
	s := statesByClass(t)["approved"]
	next := mustStep(t, s, wellFormed(s, LifecycleEventApplyConflicted))
	if next.Digest() == s.Digest() {
		t.Fatal("an apply conflict kept the state digest")
	}
	again := mustStep(t, next, wellFormed(next, LifecycleEventApplyConflicted))
	if again.Digest() == next.Digest() {
		t.Fatal("a second apply conflict kept the state digest")
	}
}
