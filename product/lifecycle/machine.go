package product

import (
	"errors"
	"fmt"
	"slices"
)

// The change lifecycle machine: an opt-in, depth-one state machine that
// takes a change through exactly this worker order
//
//	explore -> implement -> test -> review -> verify -> apply
//
// StepLifecycle is pure, in the manner of etcd raft's Step: it takes the
// state and one event and returns the next state and the effects the
// parent must carry out, or a typed refusal that leaves the state as it
// was. It reads no clock, file, database or network (purity_test.go and
// machine_test.go hold that line), so replaying the journal of accepted
// events from the zero state always rebuilds the same state, byte for byte
// in its canonical encoding, and so the same state digest.
//
// The parent (the execution kernel) is the only transition authority. A
// worker's completion is typed, bounded data: it names the invocation it
// answers and what the worker produced, never a phase, a worker to start or
// a transition; the machine alone decides what follows. Each phase runs one
// adapter at a time (concurrency one) and no adapter can start another
// (depth one). The effects come in two kinds: LifecycleConsumeRepair must
// be written in the same SQLite transaction as the transition that returns
// it; every other effect is carried out only after that transaction
// committed (the driver persists before it acts). The effects after commit
// are always LifecyclePending of the new state, so a parent that crashed
// after a commit finds what to do next by replaying the journal.
//
// Status and phase together say where a lifecycle is:
//
//	explore..verify / running   the phase's adapter is to run (or running)
//	apply / awaiting_approval   verified; the kernel stops for the user
//	apply / approved            an approval bound to the patch, the
//	                            verification and the lifecycle digest
//	apply / applying            the apply intent is journaled; files move
//	any / applied, rejected, inconclusive, failed, cancelled  (terminal)
//
// Terminal outcomes and their reasons:
//
//	applied       applied                    every file of the patch written
//	rejected      patch_rejected             the first patch broke a rule (scope, …)
//	              repair_rejected            the repair patch broke one or changed nothing
//	              verification_rejected      the verifier rejected the approach
//	              repair_exhausted           repairable again after the one repair
//	inconclusive  verification_inconclusive  the verifier could not tell
//	failed        test_evidence_missing      a frozen test plan has no result
//	              test_evidence_unavailable  a frozen test plan could not run
//	              worker_failed              an adapter failed twice in one phase
//	              fail_closed                sandbox escape, checkout corruption,
//	                                         unverifiable cleanup: never retried
//	              budget_exhausted           tokens, wall time or worker runs spent
//	cancelled     cancelled                  the user cancelled
//
// Missing or unavailable test evidence fails closed: it ends the lifecycle,
// it never counts as passing, and a verification that says verified while
// a test failed is refused. A lifecycle holds exactly one repair
// reservation: the first repairable verdict consumes it (round 2 runs
// implement, test, review and verify again) and a second repairable verdict
// ends the lifecycle. The budget is cumulative over every adapter run and
// is checked before each one; a run in flight is never cut short by it.

// Phase is one step of the lifecycle's worker order.
type Phase string

const (
	PhaseExplore   Phase = "explore"   // the evidence worker for the change's needs
	PhaseImplement Phase = "implement" // the patch worker (round 2: the repair)
	PhaseTest      Phase = "test"      // Needle runs the frozen certified test plans
	PhaseReview    Phase = "review"    // a read-only reviewer of the current patch
	PhaseVerify    Phase = "verify"    // the distinct verifier's VerificationArtifact
	PhaseApply     Phase = "apply"     // approval, then the journaled apply
)

// lifecyclePhases is the worker order.
var lifecyclePhases = []Phase{PhaseExplore, PhaseImplement, PhaseTest, PhaseReview, PhaseVerify, PhaseApply}

func (p Phase) String() string { return string(p) }

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, bool) { return parseEnum(lifecyclePhases, s) }

// role is the profile role whose adapter runs the phase ("" for apply,
// which Needle does itself).
func (p Phase) role() LifecycleRole {
	switch p {
	case PhaseExplore:
		return LifecycleRoleExplorer
	case PhaseImplement:
		return LifecycleRoleImplementer
	case PhaseTest:
		return LifecycleRoleTestRunner
	case PhaseReview:
		return LifecycleRoleReviewer
	case PhaseVerify:
		return LifecycleRoleVerifier
	}
	return ""
}

// LifecycleStatus says whether a lifecycle is running, waiting for the
// user, applying, or has ended (the five terminal statuses).
type LifecycleStatus string

const (
	LifecycleStatusRunning          LifecycleStatus = "running"
	LifecycleStatusAwaitingApproval LifecycleStatus = "awaiting_approval"
	LifecycleStatusApproved         LifecycleStatus = "approved"
	LifecycleStatusApplying         LifecycleStatus = "applying"
	LifecycleStatusApplied          LifecycleStatus = "applied"
	LifecycleStatusRejected         LifecycleStatus = "rejected"
	LifecycleStatusInconclusive     LifecycleStatus = "inconclusive"
	LifecycleStatusFailed           LifecycleStatus = "failed"
	LifecycleStatusCancelled        LifecycleStatus = "cancelled"
)

var lifecycleStatuses = []LifecycleStatus{LifecycleStatusRunning, LifecycleStatusAwaitingApproval,
	LifecycleStatusApproved, LifecycleStatusApplying, LifecycleStatusApplied, LifecycleStatusRejected,
	LifecycleStatusInconclusive, LifecycleStatusFailed, LifecycleStatusCancelled}

func (s LifecycleStatus) String() string { return string(s) }

// ParseLifecycleStatus returns the status named s.
func ParseLifecycleStatus(s string) (LifecycleStatus, bool) { return parseEnum(lifecycleStatuses, s) }

// Terminal reports whether a lifecycle in this status has ended: no event
// is accepted any more.
func (s LifecycleStatus) Terminal() bool {
	switch s {
	case LifecycleStatusApplied, LifecycleStatusRejected, LifecycleStatusInconclusive,
		LifecycleStatusFailed, LifecycleStatusCancelled:
		return true
	}
	return false
}

// LifecycleReason says why a lifecycle ended ("" while it has not).
type LifecycleReason string

const (
	LifecycleReasonApplied                  LifecycleReason = "applied"
	LifecycleReasonPatchRejected            LifecycleReason = "patch_rejected"
	LifecycleReasonRepairRejected           LifecycleReason = "repair_rejected"
	LifecycleReasonVerificationRejected     LifecycleReason = "verification_rejected"
	LifecycleReasonRepairExhausted          LifecycleReason = "repair_exhausted"
	LifecycleReasonVerificationInconclusive LifecycleReason = "verification_inconclusive"
	LifecycleReasonTestEvidenceMissing      LifecycleReason = "test_evidence_missing"
	LifecycleReasonTestEvidenceUnavailable  LifecycleReason = "test_evidence_unavailable"
	LifecycleReasonWorkerFailed             LifecycleReason = "worker_failed"
	LifecycleReasonFailClosed               LifecycleReason = "fail_closed"
	LifecycleReasonBudgetExhausted          LifecycleReason = "budget_exhausted"
	LifecycleReasonCancelled                LifecycleReason = "cancelled"
)

// lifecycleReasonStatus is the terminal status each reason belongs to.
var lifecycleReasonStatus = map[LifecycleReason]LifecycleStatus{
	LifecycleReasonApplied:                  LifecycleStatusApplied,
	LifecycleReasonPatchRejected:            LifecycleStatusRejected,
	LifecycleReasonRepairRejected:           LifecycleStatusRejected,
	LifecycleReasonVerificationRejected:     LifecycleStatusRejected,
	LifecycleReasonRepairExhausted:          LifecycleStatusRejected,
	LifecycleReasonVerificationInconclusive: LifecycleStatusInconclusive,
	LifecycleReasonTestEvidenceMissing:      LifecycleStatusFailed,
	LifecycleReasonTestEvidenceUnavailable:  LifecycleStatusFailed,
	LifecycleReasonWorkerFailed:             LifecycleStatusFailed,
	LifecycleReasonFailClosed:               LifecycleStatusFailed,
	LifecycleReasonBudgetExhausted:          LifecycleStatusFailed,
	LifecycleReasonCancelled:                LifecycleStatusCancelled,
}

func (r LifecycleReason) String() string { return string(r) }

// Bounds of the lifecycle. Everything a worker completion carries is
// bounded by these, so a journal row has a known maximum size.
const (
	// LifecycleRepairReservations is how many repairs a lifecycle may use.
	LifecycleRepairReservations = 1
	// LifecycleMaxRetries is how often one phase run may be retried after
	// an ordinary adapter failure (a crash, a timeout, an invalid result).
	LifecycleMaxRetries = 1
	// LifecycleMaxTestPlans bounds the frozen certified test plans.
	LifecycleMaxTestPlans = 32
	// LifecycleMaxEvidence bounds the certified artifacts explore returns.
	LifecycleMaxEvidence = 16
	// LifecycleMaxFindings bounds a review's findings.
	LifecycleMaxFindings = 16
	// LifecycleMaxReasons bounds the reasons of a rejected patch.
	LifecycleMaxReasons = 8
	// LifecycleMaxTextBytes bounds one reason, finding or criterion note.
	LifecycleMaxTextBytes = 512
	// LifecycleMaxRepairBytes bounds a verifier's repair instructions.
	LifecycleMaxRepairBytes = 2000
	// LifecycleMaxWorkerRuns, LifecycleMaxTokens and LifecycleMaxWallMs
	// bound a budget, and LifecycleMaxTokens and LifecycleMaxWallMs also
	// what one run may report, so no sum can overflow.
	LifecycleMaxWorkerRuns = 64
	LifecycleMaxTokens     = int64(1) << 36
	LifecycleMaxWallMs     = int64(24 * 60 * 60 * 1000)
	// LifecycleMaxRunsPerPhase bounds the worker runs one adapter run may
	// count for (explore: one evidence worker per need).
	LifecycleMaxRunsPerPhase = 8
)

// LifecycleInvocationID is the deterministic identity of one adapter
// invocation: the same lifecycle, phase and attempt always give the same
// id, so an adapter can find the side effects of an attempt whose
// transition never committed and not repeat them.
func LifecycleInvocationID(lifecycle string, phase Phase, attempt int) string {
	return mustID(tagLifecycleInvocation, struct {
		Lifecycle string `json:"lifecycle_id"`
		Phase     Phase  `json:"phase"`
		Attempt   int    `json:"attempt"`
	}{lifecycle, phase, attempt})
}

// StepLifecycle applies one event to a state. It returns the next state
// and the effects to carry out, or a refusal (an *Error whose cause is a
// *LifecycleStepError) and the state unchanged. It never panics on any
// event value, and it never aliases the event's slices into the state.
func StepLifecycle(s LifecycleState, ev LifecycleEvent) (LifecycleState, []LifecycleEffect, error) {
	if ev == nil {
		return s, nil, refuse(s, "", LifecycleRefusalInvalidPayload, "no event")
	}
	if err := ev.validate(); err != nil {
		return s, nil, refuse(s, ev.Kind(), LifecycleRefusalInvalidPayload, "%v", err)
	}
	if !slices.Contains(s.expects(), ev.Kind()) {
		code := LifecycleRefusalIllegalTransition
		if s.Status.Terminal() {
			code = LifecycleRefusalTerminal
		}
		return s, nil, refuse(s, ev.Kind(), code, "%s is not accepted in %s", ev.Kind(), s.where())
	}
	next := s.clone()
	var fx []LifecycleEffect
	var err error
	switch ev := ev.(type) {
	case LifecycleCreated:
		next = created(ev)
	case LifecycleExploreCompleted:
		err = next.explored(ev)
	case LifecycleImplementCompleted:
		err = next.implemented(ev)
	case LifecycleTestCompleted:
		err = next.tested(ev)
	case LifecycleReviewCompleted:
		err = next.reviewed(ev)
	case LifecycleVerifyCompleted:
		fx, err = next.verified(ev)
	case LifecyclePhaseFailed:
		err = next.phaseFailed(ev)
	case LifecycleApprovalGranted:
		err = next.approved(s, ev)
	case LifecycleApplyStarted:
		err = next.applyStarted(ev)
	case LifecycleApplyConflicted:
		next.ApplyConflicts++
	case LifecycleApplyCompleted:
		err = next.applyCompleted(ev)
	case LifecycleApplyRolledBack:
		err = next.applyRolledBack(ev)
	case LifecycleCancelRequested:
		next.end(LifecycleReasonCancelled)
	default:
		err = fmt.Errorf("unknown event type %T", ev)
	}
	if err != nil {
		var se *LifecycleStepError
		if !errors.As(err, &se) {
			return s, nil, refuse(s, ev.Kind(), LifecycleRefusalInvalidPayload, "%v", err)
		}
		se.Phase, se.Status, se.Event = s.Phase, s.Status, ev.Kind()
		return s, nil, &Error{Op: "lifecycle.step", Kind: se.Code.kind(), Err: se}
	}
	next.Seq = s.Seq + 1
	return next, append(fx, LifecyclePending(next)...), nil
}

// expects lists the event kinds a state accepts; everything else is an
// illegal transition. Workers' completions are accepted only for the
// running phase, and only from its current invocation (checked later).
func (s LifecycleState) expects() []LifecycleEventKind {
	switch s.Status {
	case "":
		return []LifecycleEventKind{LifecycleEventCreated}
	case LifecycleStatusRunning:
		return []LifecycleEventKind{completionKind[s.Phase], LifecycleEventPhaseFailed, LifecycleEventCancelRequested}
	case LifecycleStatusAwaitingApproval:
		return []LifecycleEventKind{LifecycleEventApprovalGranted, LifecycleEventCancelRequested}
	case LifecycleStatusApproved:
		return []LifecycleEventKind{LifecycleEventApplyStarted, LifecycleEventApplyConflicted, LifecycleEventCancelRequested}
	case LifecycleStatusApplying:
		// No cancellation while files move: the apply ends all-or-nothing.
		return []LifecycleEventKind{LifecycleEventApplyCompleted, LifecycleEventApplyRolledBack}
	}
	return nil
}

// completionKind is the completion event of each worker phase.
var completionKind = map[Phase]LifecycleEventKind{
	PhaseExplore:   LifecycleEventExploreCompleted,
	PhaseImplement: LifecycleEventImplementCompleted,
	PhaseTest:      LifecycleEventTestCompleted,
	PhaseReview:    LifecycleEventReviewCompleted,
	PhaseVerify:    LifecycleEventVerifyCompleted,
}

func created(ev LifecycleCreated) LifecycleState {
	s := LifecycleState{
		Lifecycle: ev.Lifecycle,
		Freeze:    ev.Freeze.clone(),
		Round:     1,
		Evidence:  []string{},
	}
	s.enter(PhaseExplore)
	return s
}

// enter starts a phase run: one more attempt of the phase, no retries yet.
// Without budget left for a worker run the lifecycle fails instead.
func (s *LifecycleState) enter(p Phase) {
	s.Phase, s.Retries = p, 0
	s.invoke()
}

// invoke issues the next attempt of the current phase, or ends the
// lifecycle when the budget cannot pay for another worker run.
func (s *LifecycleState) invoke() {
	if s.Usage.exhausts(s.Freeze.Budget) {
		s.end(LifecycleReasonBudgetExhausted)
		return
	}
	s.Status = LifecycleStatusRunning
	*s.Attempts.of(s.Phase)++
}

// end makes the lifecycle terminal for reason, in the current phase.
func (s *LifecycleState) end(reason LifecycleReason) {
	s.Status, s.Reason = lifecycleReasonStatus[reason], reason
}

// charge counts one finished adapter run: its worker runs and what it
// reported.
func (s *LifecycleState) charge(c LifecycleCost) {
	s.Usage.WorkerRuns += c.runs()
	s.Usage.ExtraRuns += c.runs() - 1
	s.Usage.Tokens += c.Tokens
	s.Usage.WallMs += c.WallMs
}

// answers checks that a completion answers the current invocation: a
// completion of an earlier attempt, another phase or another lifecycle is
// stale and can never advance the lifecycle.
func (s *LifecycleState) answers(invocation string) error {
	if want := s.invocation(); invocation != want {
		return stepErr(LifecycleRefusalStaleInvocation, "invocation %s is not the current one (%s attempt %d is %s)",
			invocation, s.Phase, *s.Attempts.of(s.Phase), want)
	}
	return nil
}

func (s *LifecycleState) invocation() string {
	return LifecycleInvocationID(s.Lifecycle, s.Phase, *s.Attempts.of(s.Phase))
}

func (s *LifecycleState) explored(ev LifecycleExploreCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	s.charge(ev.Cost)
	s.Evidence = slices.Clone(ev.Evidence)
	s.enter(PhaseImplement)
	return nil
}

func (s *LifecycleState) implemented(ev LifecycleImplementCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	if ev.Base != s.Freeze.Snapshot {
		return stepErr(LifecycleRefusalWrongArtifact, "the patch is based on %s, not the frozen snapshot %s", ev.Base, s.Freeze.Snapshot)
	}
	if ev.Outcome == LifecyclePatchAccepted && ev.Patch == s.Prior.Patch {
		return stepErr(LifecycleRefusalWrongArtifact, "the repair patch %s is the patch it repairs", ev.Patch)
	}
	s.charge(ev.Cost)
	if ev.Outcome == LifecyclePatchRejected {
		if s.Round == 1 {
			s.end(LifecycleReasonPatchRejected)
		} else {
			s.end(LifecycleReasonRepairRejected)
		}
		return nil
	}
	s.Patch = LifecyclePatchRef{ID: ev.Patch, Files: ev.Files, Bytes: ev.Bytes}
	s.enter(PhaseTest)
	return nil
}

func (s *LifecycleState) tested(ev LifecycleTestCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	e := ev.Evidence
	if e.Patch != s.Patch.ID {
		return stepErr(LifecycleRefusalWrongArtifact, "the test evidence is for patch %s, not the current %s", e.Patch, s.Patch.ID)
	}
	got := map[string]LifecycleTestOutcome{}
	for _, r := range e.Results {
		if _, ok := slices.BinarySearch(s.Freeze.TestPlans, r.Plan); !ok {
			return stepErr(LifecycleRefusalWrongArtifact, "test plan %s is not one the lifecycle froze", r.Plan)
		}
		got[r.Plan] = r.Outcome
	}
	s.charge(ev.Cost)
	sum := LifecycleTestSummary{Evidence: e.ID()}
	for _, plan := range s.Freeze.TestPlans {
		switch outcome, ok := got[plan]; {
		case !ok:
			sum.Missing++
		case outcome == LifecycleTestPassed:
			sum.Passed++
		case outcome == LifecycleTestFailed:
			sum.Failed++
		default:
			sum.Errors++
		}
	}
	s.Tests = sum
	switch {
	case sum.Missing > 0:
		s.end(LifecycleReasonTestEvidenceMissing)
	case sum.Errors > 0:
		s.end(LifecycleReasonTestEvidenceUnavailable)
	default:
		s.enter(PhaseReview)
	}
	return nil
}

func (s *LifecycleState) reviewed(ev LifecycleReviewCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	r := ev.Review
	switch {
	case r.Patch != s.Patch.ID:
		return stepErr(LifecycleRefusalWrongArtifact, "the review is of patch %s, not the current %s", r.Patch, s.Patch.ID)
	case r.Reviewer != s.Freeze.profile(LifecycleRoleReviewer):
		return stepErr(LifecycleRefusalWrongArtifact, "the review was not made by the frozen reviewer profile")
	case !slices.Equal(r.Criteria, s.Freeze.Criteria):
		return stepErr(LifecycleRefusalWrongArtifact, "the review did not consume the frozen criterion digests")
	}
	for _, f := range r.Findings {
		if f.Criterion > len(s.Freeze.Criteria) {
			return stepErr(LifecycleRefusalWrongArtifact, "a finding names criterion %d of %d", f.Criterion, len(s.Freeze.Criteria))
		}
	}
	s.charge(ev.Cost)
	s.Review = r.ID()
	s.enter(PhaseVerify)
	return nil
}

// verified takes the verifier's VerificationArtifact. It must come from the
// frozen verifier profile, judge the current patch with the current test
// evidence, and be consistent: verified needs every criterion met and
// every test passed, repairable needs repair instructions.
func (s *LifecycleState) verified(ev LifecycleVerifyCompleted) ([]LifecycleEffect, error) {
	if err := s.answers(ev.Invocation); err != nil {
		return nil, err
	}
	v := ev.Verification
	switch {
	case v.Verifier != s.Freeze.profile(LifecycleRoleVerifier):
		return nil, stepErr(LifecycleRefusalWrongArtifact, "the verification was not made by the frozen verifier profile (role %s)", v.Verifier.Role)
	case v.ID() == s.Review:
		return nil, stepErr(LifecycleRefusalWrongArtifact, "the review artifact cannot stand for the verification")
	case v.Patch != s.Patch.ID:
		return nil, stepErr(LifecycleRefusalWrongArtifact, "the verification judges patch %s, not the current %s", v.Patch, s.Patch.ID)
	case v.TestEvidence != s.Tests.Evidence:
		return nil, stepErr(LifecycleRefusalWrongArtifact, "the verification cites test evidence %s, not the current %s", v.TestEvidence, s.Tests.Evidence)
	case len(v.Criteria) != len(s.Freeze.Criteria):
		return nil, stepErr(LifecycleRefusalWrongArtifact, "the verification judges %d criteria, not the %d frozen", len(v.Criteria), len(s.Freeze.Criteria))
	}
	met := true
	for i, c := range v.Criteria {
		if c.Criterion != i+1 || c.Digest != s.Freeze.Criteria[i] {
			return nil, stepErr(LifecycleRefusalWrongArtifact, "criterion %d of the verification is not the frozen criterion %d", c.Criterion, i+1)
		}
		met = met && c.Status == CriterionMet
	}
	switch {
	case v.Outcome == VerdictVerified && !met:
		return nil, stepErr(LifecycleRefusalInconsistentVerdict, "verified, but not every criterion is met")
	case v.Outcome == VerdictVerified && s.Tests.Failed > 0:
		return nil, stepErr(LifecycleRefusalInconsistentVerdict, "verified, but %d test(s) failed", s.Tests.Failed)
	case (v.Outcome == VerdictRepairable) != (v.Repair != ""):
		return nil, stepErr(LifecycleRefusalInconsistentVerdict, "repair instructions come with a repairable verdict and only with it")
	}
	s.charge(ev.Cost)
	s.Verification = LifecycleVerificationRef{ID: v.ID(), Outcome: v.Outcome}
	switch v.Outcome {
	case VerdictVerified:
		s.Phase, s.Status, s.Retries = PhaseApply, LifecycleStatusAwaitingApproval, 0
	case VerdictRejected:
		s.end(LifecycleReasonVerificationRejected)
	case VerdictInconclusive:
		s.end(LifecycleReasonVerificationInconclusive)
	case VerdictRepairable:
		return s.repair(), nil
	}
	return nil, nil
}

// repair consumes the one repair reservation and starts round 2 with the
// implement phase; the reservation is written in the transition's own
// transaction (LifecycleConsumeRepair). Without a reservation, or without
// budget for another run, the lifecycle ends instead and nothing is
// consumed.
func (s *LifecycleState) repair() []LifecycleEffect {
	switch {
	case s.RepairsUsed >= LifecycleRepairReservations:
		s.end(LifecycleReasonRepairExhausted)
		return nil
	case s.Usage.exhausts(s.Freeze.Budget):
		s.end(LifecycleReasonBudgetExhausted)
		return nil
	}
	s.RepairsUsed++
	s.Round = 2
	s.Prior = LifecyclePrior{Patch: s.Patch.ID, Verification: s.Verification.ID}
	s.Patch, s.Tests, s.Review, s.Verification = LifecyclePatchRef{}, LifecycleTestSummary{}, "", LifecycleVerificationRef{}
	s.enter(PhaseImplement)
	return []LifecycleEffect{LifecycleConsumeRepair{Change: s.Freeze.ChangeID, Verification: s.Prior.Verification}}
}

// phaseFailed takes an adapter failure. An ordinary failure is retried
// once per phase run (a new attempt, a new invocation id); a fail-closed
// failure (sandbox escape, checkout corruption, unverifiable cleanup) ends
// the lifecycle at once.
func (s *LifecycleState) phaseFailed(ev LifecyclePhaseFailed) error {
	if ev.Phase != s.Phase {
		return stepErr(LifecycleRefusalStaleInvocation, "a failure of %s cannot end %s", ev.Phase, s.Phase)
	}
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	s.charge(ev.Cost)
	switch {
	case ev.Failure == LifecycleFailureFailClosed:
		s.end(LifecycleReasonFailClosed)
	case s.Retries >= LifecycleMaxRetries:
		s.end(LifecycleReasonWorkerFailed)
	default:
		s.Retries++
		s.invoke()
	}
	return nil
}

// approved binds the user's approval to exactly what the user saw: the
// current patch, the current verification and the digest of the state
// awaiting approval. An approval for anything older is refused.
func (s *LifecycleState) approved(prev LifecycleState, ev LifecycleApprovalGranted) error {
	want := prev.binding()
	b := ev.Binding
	switch {
	case b.Patch != want.Patch:
		return stepErr(LifecycleRefusalApprovalMismatch, "the approval is for patch %s; the current patch is %s", b.Patch, want.Patch)
	case b.Verification != want.Verification:
		return stepErr(LifecycleRefusalApprovalMismatch, "the approval is for verification %s; the current verification is %s", b.Verification, want.Verification)
	case b.Lifecycle != want.Lifecycle:
		return stepErr(LifecycleRefusalApprovalMismatch, "the approval is for lifecycle digest %s; the current digest is %s", b.Lifecycle, want.Lifecycle)
	}
	s.Approval = b.id(s.Lifecycle)
	s.Status = LifecycleStatusApproved
	return nil
}

func (s *LifecycleState) binding() LifecycleApprovalBinding {
	return LifecycleApprovalBinding{Patch: s.Patch.ID, Verification: s.Verification.ID, Lifecycle: s.Digest()}
}

func (s *LifecycleState) applyStarted(ev LifecycleApplyStarted) error {
	in := ev.Intent
	switch {
	case in.Patch != s.Patch.ID:
		return stepErr(LifecycleRefusalIntentMismatch, "the apply intent is for patch %s, not the approved %s", in.Patch, s.Patch.ID)
	case in.Approval != s.Approval:
		return stepErr(LifecycleRefusalIntentMismatch, "the apply intent cites approval %s, not %s", in.Approval, s.Approval)
	case len(in.Files) != s.Patch.Files:
		return stepErr(LifecycleRefusalIntentMismatch, "the apply intent lists %d files; the patch has %d", len(in.Files), s.Patch.Files)
	}
	s.ApplyIntent = in.ID()
	s.Status = LifecycleStatusApplying
	return nil
}

func (s *LifecycleState) applyCompleted(ev LifecycleApplyCompleted) error {
	switch {
	case ev.Intent != s.ApplyIntent:
		return stepErr(LifecycleRefusalIntentMismatch, "apply intent %s is not the journaled %s", ev.Intent, s.ApplyIntent)
	case ev.Files != s.Patch.Files:
		return stepErr(LifecycleRefusalIntentMismatch, "%d files written; the intent has %d", ev.Files, s.Patch.Files)
	}
	s.end(LifecycleReasonApplied)
	return nil
}

// applyRolledBack returns an interrupted or refused apply to approved: the
// work tree holds none of the patch again, and apply may be asked again.
func (s *LifecycleState) applyRolledBack(ev LifecycleApplyRolledBack) error {
	if ev.Intent != s.ApplyIntent {
		return stepErr(LifecycleRefusalIntentMismatch, "apply intent %s is not the journaled %s", ev.Intent, s.ApplyIntent)
	}
	s.ApplyIntent = ""
	s.Status = LifecycleStatusApproved
	return nil
}

// LifecyclePending is what a state asks the parent to do next: invoke the
// running phase's adapter, wait for the user, write the journaled apply, or
// nothing more (done). The kernel calls it after replaying the journal, so
// a crash between a commit and its effects loses nothing; it holds at most
// one invocation (concurrency one).
func LifecyclePending(s LifecycleState) []LifecycleEffect {
	switch s.Status {
	case "":
		return nil
	case LifecycleStatusRunning:
		inv := LifecycleInvoke{Phase: s.Phase, Round: s.Round, Attempt: *s.Attempts.of(s.Phase), Invocation: s.invocation(),
			Profile: s.Freeze.profile(s.Phase.role())}
		switch s.Phase {
		case PhaseImplement:
			inv.Patch, inv.RepairFrom = s.Prior.Patch, s.Prior.Verification
		case PhaseTest, PhaseReview:
			inv.Patch = s.Patch.ID
		case PhaseVerify:
			inv.Patch, inv.TestEvidence = s.Patch.ID, s.Tests.Evidence
		}
		return []LifecycleEffect{inv}
	case LifecycleStatusAwaitingApproval:
		return []LifecycleEffect{LifecycleAwaitApproval{Binding: s.binding()}}
	case LifecycleStatusApproved:
		return []LifecycleEffect{LifecycleAwaitApply{Patch: s.Patch.ID, Approval: s.Approval}}
	case LifecycleStatusApplying:
		return []LifecycleEffect{LifecycleWriteFiles{Intent: s.ApplyIntent}}
	}
	return []LifecycleEffect{LifecycleDone{Status: s.Status, Reason: s.Reason}}
}
