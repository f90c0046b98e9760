package lifecycle

import (
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/safetext"
)

func TestDecodeState(t *testing.T) {
	states := statesByClass(t)
	t.Run("OK", func(t *testing.T) {
		for class, s := range states {
			got, err := DecodeState(s.Canonical())
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
		edit  func(*State)
	}{
		{"SecondRepair", "implement/2", func(s *State) { s.RepairsUsed = 2 }},
		{"RoundTwoWithoutRepair", "implement/2", func(s *State) { s.RepairsUsed = 0 }},
		{"RepairWithoutPrior", "implement/2", func(s *State) { s.Prior = Prior{} }},
		{"SkippedPhase", "review/1", func(s *State) { s.Attempts.Test = 0; s.Usage.WorkerRuns-- }},
		{"PhaseAhead", "test/1", func(s *State) { s.Attempts.Verify = 1; s.Usage.WorkerRuns++ }},
		{"UncountedRun", "test/1", func(s *State) { s.Usage.WorkerRuns++ }},
		{"RunningWithoutAttempt", "test/1", func(s *State) { s.Attempts.Test = 0; s.Usage.WorkerRuns-- }},
		{"RunningOverBudget", "test/1", func(s *State) { s.Usage.Tokens = s.Freeze.Budget.Tokens }},
		{"TooManyRetries", "test/1", func(s *State) { s.Retries = MaxRetries + 1 }},
		{"PatchBeforeImplement", "implement/1", func(s *State) { s.Patch = PatchRef{ID: SampleID("p"), Files: 1} }},
		{"ReviewWithoutTests", "verify/1", func(s *State) { s.Tests = TestSummary{} }},
		{"UnavailableTestsPassed", "review/1", func(s *State) { s.Tests.Passed--; s.Tests.Errors++ }},
		{"TestsMissAPlan", "review/1", func(s *State) { s.Tests.Passed-- }},
		{"VerificationWhileVerifying", "verify/1", func(s *State) {
			s.Verification = VerificationRef{ID: SampleID("v"), Outcome: VerdictVerified}
		}},
		{"ApplyWithoutVerifiedOutcome", "awaiting_approval", func(s *State) { s.Verification.Outcome = VerdictRepairable }},
		{"AwaitingOutsideApply", "awaiting_approval", func(s *State) { s.Phase = PhaseVerify }},
		{"ApprovedWithoutApproval", "approved", func(s *State) { s.Approval = "" }},
		{"ApprovalBeforeApproving", "awaiting_approval", func(s *State) { s.Approval = SampleID("a") }},
		{"ApplyingWithoutIntent", "applying", func(s *State) { s.ApplyIntent = "" }},
		{"ReasonWhileRunning", "explore", func(s *State) { s.Reason = ReasonCancelled }},
		{"TerminalWithoutReason", "rejected", func(s *State) { s.Reason = "" }},
		{"ReasonOfAnotherStatus", "rejected", func(s *State) { s.Reason = ReasonWorkerFailed }},
		{"ReasonInWrongPhase", "rejected", func(s *State) { s.Reason = ReasonPatchRejected }},
		{"VerdictDisagreesWithReason", "rejected", func(s *State) { s.Verification.Outcome = VerdictInconclusive }},
		{"UnknownStatus", "explore", func(s *State) { s.Status = "paused" }},
		{"SeqZero", "explore", func(s *State) { s.Seq = 0 }},
		{"ConcurrencyTwo", "explore", func(s *State) { s.Freeze.Concurrency = 2 }},
		{"UnsortedEvidence", "implement/1", func(s *State) { s.Evidence = []string{SampleID("b"), SampleID("a"), SampleID("a")} }},
		{"ConflictWithoutApproval", "awaiting_approval", func(s *State) { s.ApplyConflicts = 1 }},
		{"ZeroStateWithData", "none", func(s *State) { s.Seq = 3 }},
	}
	for _, tt := range corrupt {
		t.Run("Err"+tt.name, func(t *testing.T) {
			s := states[tt.class].clone()
			tt.edit(&s)
			if _, err := DecodeState(s.Canonical()); !isInvalid(err) {
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
			if _, err := DecodeState([]byte(text)); !isInvalid(err) {
				t.Fatalf("read %q: %v", safetext.Clip(text, 60), err)
			}
		})
	}
}

// TestState_Digest: the digest changes with every accepted event,
// even one that changes nothing else (an apply conflict), so a
// compare-and-swap on it can never mistake a newer state for an older one.
func TestState_Digest(t *testing.T) {
	s := statesByClass(t)["approved"]
	next := mustStep(t, s, WellFormed(s, EventApplyConflicted))
	if next.Digest() == s.Digest() {
		t.Fatal("an apply conflict kept the state digest")
	}
	again := mustStep(t, next, WellFormed(next, EventApplyConflicted))
	if again.Digest() == next.Digest() {
		t.Fatal("a second apply conflict kept the state digest")
	}
}
