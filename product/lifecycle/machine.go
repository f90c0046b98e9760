package lifecycle

import (
	"errors"
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/enum"
)

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

// Phases is the worker order.
var Phases = []Phase{PhaseExplore, PhaseImplement, PhaseTest, PhaseReview, PhaseVerify, PhaseApply}

func (p Phase) String() string { return string(p) }

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, bool) { return enum.Parse(Phases, s) }

// role is the profile role whose adapter runs the phase ("" for apply,
// which Needle does itself).
func (p Phase) role() Role {
	switch p {
	case PhaseExplore:
		return RoleExplorer
	case PhaseImplement:
		return RoleImplementer
	case PhaseTest:
		return RoleTestRunner
	case PhaseReview:
		return RoleReviewer
	case PhaseVerify:
		return RoleVerifier
	}
	return ""
}

// Status says whether a lifecycle is running, waiting for the
// user, applying, or has ended (the five terminal statuses).
type Status string

const (
	StatusRunning          Status = "running"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusApproved         Status = "approved"
	StatusApplying         Status = "applying"
	StatusApplied          Status = "applied"
	StatusRejected         Status = "rejected"
	StatusInconclusive     Status = "inconclusive"
	StatusFailed           Status = "failed"
	StatusCancelled        Status = "cancelled"
)

var statuses = []Status{StatusRunning, StatusAwaitingApproval,
	StatusApproved, StatusApplying, StatusApplied, StatusRejected,
	StatusInconclusive, StatusFailed, StatusCancelled}

func (s Status) String() string { return string(s) }

// ParseStatus returns the status named s.
func ParseStatus(s string) (Status, bool) { return enum.Parse(statuses, s) }

// Terminal reports whether a lifecycle in this status has ended: no event
// is accepted any more.
func (s Status) Terminal() bool {
	switch s {
	case StatusApplied, StatusRejected, StatusInconclusive,
		StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Reason says why a lifecycle ended ("" while it has not).
type Reason string

const (
	ReasonApplied                  Reason = "applied"
	ReasonPatchRejected            Reason = "patch_rejected"
	ReasonRepairRejected           Reason = "repair_rejected"
	ReasonVerificationRejected     Reason = "verification_rejected"
	ReasonRepairExhausted          Reason = "repair_exhausted"
	ReasonVerificationInconclusive Reason = "verification_inconclusive"
	ReasonTestEvidenceMissing      Reason = "test_evidence_missing"
	ReasonTestEvidenceUnavailable  Reason = "test_evidence_unavailable"
	ReasonWorkerFailed             Reason = "worker_failed"
	ReasonFailClosed               Reason = "fail_closed"
	ReasonBudgetExhausted          Reason = "budget_exhausted"
	ReasonCancelled                Reason = "cancelled"
)

// reasonStatus is the terminal status each reason belongs to.
var reasonStatus = map[Reason]Status{
	ReasonApplied:                  StatusApplied,
	ReasonPatchRejected:            StatusRejected,
	ReasonRepairRejected:           StatusRejected,
	ReasonVerificationRejected:     StatusRejected,
	ReasonRepairExhausted:          StatusRejected,
	ReasonVerificationInconclusive: StatusInconclusive,
	ReasonTestEvidenceMissing:      StatusFailed,
	ReasonTestEvidenceUnavailable:  StatusFailed,
	ReasonWorkerFailed:             StatusFailed,
	ReasonFailClosed:               StatusFailed,
	ReasonBudgetExhausted:          StatusFailed,
	ReasonCancelled:                StatusCancelled,
}

func (r Reason) String() string { return string(r) }

// Bounds of the lifecycle. Everything a worker completion carries is
// bounded by these, so a journal row has a known maximum size.
const (
	// RepairReservations is how many repairs a lifecycle may use.
	RepairReservations = 1
	// MaxRetries is how often one phase run may be retried after
	// an ordinary adapter failure (a crash, a timeout, an invalid result).
	MaxRetries = 1
	// MaxTestPlans bounds the frozen certified test plans.
	MaxTestPlans = 32
	// MaxEvidence bounds the certified artifacts explore returns.
	MaxEvidence = 16
	// MaxFindings bounds a review's findings.
	MaxFindings = 16
	// MaxReasons bounds the reasons of a rejected patch.
	MaxReasons = 8
	// MaxTextBytes bounds one reason, finding or criterion note.
	MaxTextBytes = 512
	// MaxRepairBytes bounds a verifier's repair instructions.
	MaxRepairBytes = 2000
	// MaxWorkerRuns, MaxTokens and MaxWallMs
	// bound a budget, and MaxTokens and MaxWallMs also
	// what one run may report, so no sum can overflow.
	MaxWorkerRuns = 64
	MaxTokens     = int64(1) << 36
	MaxWallMs     = int64(24 * 60 * 60 * 1000)
	// MaxRunsPerPhase bounds the worker runs one adapter run may
	// count for (explore: one evidence worker per need).
	MaxRunsPerPhase = 8
)

// InvocationID is the deterministic identity of one adapter
// invocation: the same lifecycle, phase and attempt always give the same
// id, so an adapter can find the side effects of an attempt whose
// transition never committed and not repeat them.
func InvocationID(lifecycle string, phase Phase, attempt int) string {
	return contentid.MustOf(tagInvocation, struct {
		Lifecycle string `json:"lifecycle_id"`
		Phase     Phase  `json:"phase"`
		Attempt   int    `json:"attempt"`
	}{lifecycle, phase, attempt})
}

// Step applies one event to a state. It returns the next state
// and the effects to carry out, or a refusal (an *Error whose cause is a
// *StepError) and the state unchanged. It never panics on any
// event value, and it never aliases the event's slices into the state.
func Step(s State, ev Event) (State, []Effect, error) {
	if ev == nil {
		return s, nil, refuse(s, "", RefusalInvalidPayload, "no event")
	}
	if err := ev.validate(); err != nil {
		return s, nil, refuse(s, ev.Kind(), RefusalInvalidPayload, "%v", err)
	}
	if !slices.Contains(s.expects(), ev.Kind()) {
		code := RefusalIllegalTransition
		if s.Status.Terminal() {
			code = RefusalTerminal
		}
		return s, nil, refuse(s, ev.Kind(), code, "%s is not accepted in %s", ev.Kind(), s.Where())
	}
	next := s.clone()
	var fx []Effect
	var err error
	switch ev := ev.(type) {
	case Created:
		next = created(ev)
	case ExploreCompleted:
		err = next.explored(ev)
	case ImplementCompleted:
		err = next.implemented(ev)
	case TestCompleted:
		err = next.tested(ev)
	case ReviewCompleted:
		err = next.reviewed(ev)
	case VerifyCompleted:
		fx, err = next.verified(ev)
	case PhaseFailed:
		err = next.phaseFailed(ev)
	case ApprovalGranted:
		err = next.approved(s, ev)
	case ApplyStarted:
		err = next.applyStarted(ev)
	case ApplyConflicted:
		next.ApplyConflicts++
	case ApplyCompleted:
		err = next.applyCompleted(ev)
	case ApplyRolledBack:
		err = next.applyRolledBack(ev)
	case CancelRequested:
		next.end(ReasonCancelled)
	default:
		err = fmt.Errorf("unknown event type %T", ev)
	}
	if err != nil {
		var se *StepError
		if !errors.As(err, &se) {
			return s, nil, refuse(s, ev.Kind(), RefusalInvalidPayload, "%v", err)
		}
		se.Phase, se.Status, se.Event = s.Phase, s.Status, ev.Kind()
		return s, nil, se
	}
	next.Seq = s.Seq + 1
	return next, append(fx, Pending(next)...), nil
}

// expects lists the event kinds a state accepts; everything else is an
// illegal transition. Workers' completions are accepted only for the
// running phase, and only from its current invocation (checked later).
func (s State) expects() []EventKind {
	switch s.Status {
	case "":
		return []EventKind{EventCreated}
	case StatusRunning:
		return []EventKind{completionKind[s.Phase], EventPhaseFailed, EventCancelRequested}
	case StatusAwaitingApproval:
		return []EventKind{EventApprovalGranted, EventCancelRequested}
	case StatusApproved:
		return []EventKind{EventApplyStarted, EventApplyConflicted, EventCancelRequested}
	case StatusApplying:
		// No cancellation while files move: the apply ends all-or-nothing.
		return []EventKind{EventApplyCompleted, EventApplyRolledBack}
	}
	return nil
}

// completionKind is the completion event of each worker phase.
var completionKind = map[Phase]EventKind{
	PhaseExplore:   EventExploreCompleted,
	PhaseImplement: EventImplementCompleted,
	PhaseTest:      EventTestCompleted,
	PhaseReview:    EventReviewCompleted,
	PhaseVerify:    EventVerifyCompleted,
}

func created(ev Created) State {
	s := State{
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
func (s *State) enter(p Phase) {
	s.Phase, s.Retries = p, 0
	s.invoke()
}

// invoke issues the next attempt of the current phase, or ends the
// lifecycle when the budget cannot pay for another worker run.
func (s *State) invoke() {
	if s.Usage.exhausts(s.Freeze.Budget) {
		s.end(ReasonBudgetExhausted)
		return
	}
	s.Status = StatusRunning
	*s.Attempts.of(s.Phase)++
}

// end makes the lifecycle terminal for reason, in the current phase.
func (s *State) end(reason Reason) {
	s.Status, s.Reason = reasonStatus[reason], reason
}

// charge counts one finished adapter run: its worker runs and what it
// reported.
func (s *State) charge(c Cost) {
	s.Usage.WorkerRuns += c.runs()
	s.Usage.ExtraRuns += c.runs() - 1
	s.Usage.Tokens += c.Tokens
	s.Usage.WallMs += c.WallMs
}

// answers checks that a completion answers the current invocation: a
// completion of an earlier attempt, another phase or another lifecycle is
// stale and can never advance the lifecycle.
func (s *State) answers(invocation string) error {
	if want := s.invocation(); invocation != want {
		return stepErr(RefusalStaleInvocation, "invocation %s is not the current one (%s attempt %d is %s)",
			invocation, s.Phase, *s.Attempts.of(s.Phase), want)
	}
	return nil
}

func (s *State) invocation() string {
	return InvocationID(s.Lifecycle, s.Phase, *s.Attempts.of(s.Phase))
}

func (s *State) explored(ev ExploreCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	s.charge(ev.Cost)
	s.Evidence = slices.Clone(ev.Evidence)
	s.enter(PhaseImplement)
	return nil
}

func (s *State) implemented(ev ImplementCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	if ev.Base != s.Freeze.Snapshot {
		return stepErr(RefusalWrongArtifact, "the patch is based on %s, not the frozen snapshot %s", ev.Base, s.Freeze.Snapshot)
	}
	if ev.Outcome == PatchAccepted && ev.Patch == s.Prior.Patch {
		return stepErr(RefusalWrongArtifact, "the repair patch %s is the patch it repairs", ev.Patch)
	}
	s.charge(ev.Cost)
	if ev.Outcome == PatchRejected {
		if s.Round == 1 {
			s.end(ReasonPatchRejected)
		} else {
			s.end(ReasonRepairRejected)
		}
		return nil
	}
	s.Patch = PatchRef{ID: ev.Patch, Files: ev.Files, Bytes: ev.Bytes}
	s.enter(PhaseTest)
	return nil
}

func (s *State) tested(ev TestCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	e := ev.Evidence
	if e.Patch != s.Patch.ID {
		return stepErr(RefusalWrongArtifact, "the test evidence is for patch %s, not the current %s", e.Patch, s.Patch.ID)
	}
	got := map[string]TestOutcome{}
	for _, r := range e.Results {
		if _, ok := slices.BinarySearch(s.Freeze.TestPlans, r.Plan); !ok {
			return stepErr(RefusalWrongArtifact, "test plan %s is not one the lifecycle froze", r.Plan)
		}
		got[r.Plan] = r.Outcome
	}
	s.charge(ev.Cost)
	sum := TestSummary{Evidence: e.ID()}
	for _, plan := range s.Freeze.TestPlans {
		switch outcome, ok := got[plan]; {
		case !ok:
			sum.Missing++
		case outcome == TestPassed:
			sum.Passed++
		case outcome == TestFailed:
			sum.Failed++
		default:
			sum.Errors++
		}
	}
	s.Tests = sum
	switch {
	case sum.Missing > 0:
		s.end(ReasonTestEvidenceMissing)
	case sum.Errors > 0:
		s.end(ReasonTestEvidenceUnavailable)
	default:
		s.enter(PhaseReview)
	}
	return nil
}

func (s *State) reviewed(ev ReviewCompleted) error {
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	r := ev.Review
	switch {
	case r.Patch != s.Patch.ID:
		return stepErr(RefusalWrongArtifact, "the review is of patch %s, not the current %s", r.Patch, s.Patch.ID)
	case r.Reviewer != s.Freeze.Profile(RoleReviewer):
		return stepErr(RefusalWrongArtifact, "the review was not made by the frozen reviewer profile")
	case !slices.Equal(r.Criteria, s.Freeze.Criteria):
		return stepErr(RefusalWrongArtifact, "the review did not consume the frozen criterion digests")
	}
	for _, f := range r.Findings {
		if f.Criterion > len(s.Freeze.Criteria) {
			return stepErr(RefusalWrongArtifact, "a finding names criterion %d of %d", f.Criterion, len(s.Freeze.Criteria))
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
func (s *State) verified(ev VerifyCompleted) ([]Effect, error) {
	if err := s.answers(ev.Invocation); err != nil {
		return nil, err
	}
	v := ev.Verification
	switch {
	case v.Verifier != s.Freeze.Profile(RoleVerifier):
		return nil, stepErr(RefusalWrongArtifact, "the verification was not made by the frozen verifier profile (role %s)", v.Verifier.Role)
	case v.ID() == s.Review:
		return nil, stepErr(RefusalWrongArtifact, "the review artifact cannot stand for the verification")
	case v.Patch != s.Patch.ID:
		return nil, stepErr(RefusalWrongArtifact, "the verification judges patch %s, not the current %s", v.Patch, s.Patch.ID)
	case v.TestEvidence != s.Tests.Evidence:
		return nil, stepErr(RefusalWrongArtifact, "the verification cites test evidence %s, not the current %s", v.TestEvidence, s.Tests.Evidence)
	case len(v.Criteria) != len(s.Freeze.Criteria):
		return nil, stepErr(RefusalWrongArtifact, "the verification judges %d criteria, not the %d frozen", len(v.Criteria), len(s.Freeze.Criteria))
	}
	met := true
	for i, c := range v.Criteria {
		if c.Criterion != i+1 || c.Digest != s.Freeze.Criteria[i] {
			return nil, stepErr(RefusalWrongArtifact, "criterion %d of the verification is not the frozen criterion %d", c.Criterion, i+1)
		}
		met = met && c.Status == CriterionMet
	}
	switch {
	case v.Outcome == VerdictVerified && !met:
		return nil, stepErr(RefusalInconsistentVerdict, "verified, but not every criterion is met")
	case v.Outcome == VerdictVerified && s.Tests.Failed > 0:
		return nil, stepErr(RefusalInconsistentVerdict, "verified, but %d test(s) failed", s.Tests.Failed)
	case (v.Outcome == VerdictRepairable) != (v.Repair != ""):
		return nil, stepErr(RefusalInconsistentVerdict, "repair instructions come with a repairable verdict and only with it")
	}
	s.charge(ev.Cost)
	s.Verification = VerificationRef{ID: v.ID(), Outcome: v.Outcome}
	switch v.Outcome {
	case VerdictVerified:
		s.Phase, s.Status, s.Retries = PhaseApply, StatusAwaitingApproval, 0
	case VerdictRejected:
		s.end(ReasonVerificationRejected)
	case VerdictInconclusive:
		s.end(ReasonVerificationInconclusive)
	case VerdictRepairable:
		return s.repair(), nil
	}
	return nil, nil
}

// repair consumes the one repair reservation and starts round 2 with the
// implement phase; the reservation is written in the transition's own
// transaction (ConsumeRepair). Without a reservation, or without
// budget for another run, the lifecycle ends instead and nothing is
// consumed.
func (s *State) repair() []Effect {
	switch {
	case s.RepairsUsed >= RepairReservations:
		s.end(ReasonRepairExhausted)
		return nil
	case s.Usage.exhausts(s.Freeze.Budget):
		s.end(ReasonBudgetExhausted)
		return nil
	}
	s.RepairsUsed++
	s.Round = 2
	s.Prior = Prior{Patch: s.Patch.ID, Verification: s.Verification.ID}
	s.Patch, s.Tests, s.Review, s.Verification = PatchRef{}, TestSummary{}, "", VerificationRef{}
	s.enter(PhaseImplement)
	return []Effect{ConsumeRepair{Change: s.Freeze.ChangeID, Verification: s.Prior.Verification}}
}

// phaseFailed takes an adapter failure. An ordinary failure is retried
// once per phase run (a new attempt, a new invocation id); a fail-closed
// failure (sandbox escape, checkout corruption, unverifiable cleanup) ends
// the lifecycle at once.
func (s *State) phaseFailed(ev PhaseFailed) error {
	if ev.Phase != s.Phase {
		return stepErr(RefusalStaleInvocation, "a failure of %s cannot end %s", ev.Phase, s.Phase)
	}
	if err := s.answers(ev.Invocation); err != nil {
		return err
	}
	s.charge(ev.Cost)
	switch {
	case ev.Failure == FailureFailClosed:
		s.end(ReasonFailClosed)
	case s.Retries >= MaxRetries:
		s.end(ReasonWorkerFailed)
	default:
		s.Retries++
		s.invoke()
	}
	return nil
}

// approved binds the user's approval to exactly what the user saw: the
// current patch, the current verification and the digest of the state
// awaiting approval. An approval for anything older is refused.
func (s *State) approved(prev State, ev ApprovalGranted) error {
	want := prev.Binding()
	b := ev.Binding
	switch {
	case b.Patch != want.Patch:
		return stepErr(RefusalApprovalMismatch, "the approval is for patch %s; the current patch is %s", b.Patch, want.Patch)
	case b.Verification != want.Verification:
		return stepErr(RefusalApprovalMismatch, "the approval is for verification %s; the current verification is %s", b.Verification, want.Verification)
	case b.Lifecycle != want.Lifecycle:
		return stepErr(RefusalApprovalMismatch, "the approval is for lifecycle digest %s; the current digest is %s", b.Lifecycle, want.Lifecycle)
	}
	s.Approval = b.id(s.Lifecycle)
	s.Status = StatusApproved
	return nil
}

func (s *State) Binding() ApprovalBinding {
	return ApprovalBinding{Patch: s.Patch.ID, Verification: s.Verification.ID, Lifecycle: s.Digest()}
}

func (s *State) applyStarted(ev ApplyStarted) error {
	in := ev.Intent
	switch {
	case in.Patch != s.Patch.ID:
		return stepErr(RefusalIntentMismatch, "the apply intent is for patch %s, not the approved %s", in.Patch, s.Patch.ID)
	case in.Approval != s.Approval:
		return stepErr(RefusalIntentMismatch, "the apply intent cites approval %s, not %s", in.Approval, s.Approval)
	case len(in.Files) != s.Patch.Files:
		return stepErr(RefusalIntentMismatch, "the apply intent lists %d files; the patch has %d", len(in.Files), s.Patch.Files)
	}
	s.ApplyIntent = in.ID()
	s.Status = StatusApplying
	return nil
}

func (s *State) applyCompleted(ev ApplyCompleted) error {
	switch {
	case ev.Intent != s.ApplyIntent:
		return stepErr(RefusalIntentMismatch, "apply intent %s is not the journaled %s", ev.Intent, s.ApplyIntent)
	case ev.Files != s.Patch.Files:
		return stepErr(RefusalIntentMismatch, "%d files written; the intent has %d", ev.Files, s.Patch.Files)
	}
	s.end(ReasonApplied)
	return nil
}

// applyRolledBack returns an interrupted or refused apply to approved: the
// work tree holds none of the patch again, and apply may be asked again.
func (s *State) applyRolledBack(ev ApplyRolledBack) error {
	if ev.Intent != s.ApplyIntent {
		return stepErr(RefusalIntentMismatch, "apply intent %s is not the journaled %s", ev.Intent, s.ApplyIntent)
	}
	s.ApplyIntent = ""
	s.Status = StatusApproved
	return nil
}

// Pending is what a state asks the parent to do next: invoke the
// running phase's adapter, wait for the user, write the journaled apply, or
// nothing more (done). The kernel calls it after replaying the journal, so
// a crash between a commit and its effects loses nothing; it holds at most
// one invocation (concurrency one).
func Pending(s State) []Effect {
	switch s.Status {
	case "":
		return nil
	case StatusRunning:
		inv := Invoke{Phase: s.Phase, Round: s.Round, Attempt: *s.Attempts.of(s.Phase), Invocation: s.invocation(),
			Profile: s.Freeze.Profile(s.Phase.role())}
		switch s.Phase {
		case PhaseImplement:
			inv.Patch, inv.RepairFrom = s.Prior.Patch, s.Prior.Verification
		case PhaseTest, PhaseReview:
			inv.Patch = s.Patch.ID
		case PhaseVerify:
			inv.Patch, inv.TestEvidence = s.Patch.ID, s.Tests.Evidence
		}
		return []Effect{inv}
	case StatusAwaitingApproval:
		return []Effect{AwaitApproval{Binding: s.Binding()}}
	case StatusApproved:
		return []Effect{AwaitApply{Patch: s.Patch.ID, Approval: s.Approval}}
	case StatusApplying:
		return []Effect{WriteFiles{Intent: s.ApplyIntent}}
	}
	return []Effect{Done{Status: s.Status, Reason: s.Reason}}
}
