package product

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/contentid"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// The events of the lifecycle machine and their journal form. An event is
// either the parent's own decision (created, approval, apply steps,
// cancellation) or a worker completion the parent validated and persisted
// first. A completion names only the invocation it answers and what the
// worker produced, within the bounds of machine.go: there is no field for a
// next phase, a new worker or a transition, so no completion can ask for
// one.

// LifecycleEventKind names an event in the change_events journal.
type LifecycleEventKind string

const (
	LifecycleEventCreated            LifecycleEventKind = "created"
	LifecycleEventExploreCompleted   LifecycleEventKind = "explore_completed"
	LifecycleEventImplementCompleted LifecycleEventKind = "implement_completed"
	LifecycleEventTestCompleted      LifecycleEventKind = "test_completed"
	LifecycleEventReviewCompleted    LifecycleEventKind = "review_completed"
	LifecycleEventVerifyCompleted    LifecycleEventKind = "verify_completed"
	LifecycleEventPhaseFailed        LifecycleEventKind = "phase_failed"
	LifecycleEventApprovalGranted    LifecycleEventKind = "approval_granted"
	LifecycleEventApplyStarted       LifecycleEventKind = "apply_started"
	LifecycleEventApplyConflicted    LifecycleEventKind = "apply_conflicted"
	LifecycleEventApplyCompleted     LifecycleEventKind = "apply_completed"
	LifecycleEventApplyRolledBack    LifecycleEventKind = "apply_rolled_back"
	LifecycleEventCancelRequested    LifecycleEventKind = "cancel_requested"
)

// lifecycleEventKinds lists every kind, in lifecycle order.
var lifecycleEventKinds = []LifecycleEventKind{LifecycleEventCreated, LifecycleEventExploreCompleted,
	LifecycleEventImplementCompleted, LifecycleEventTestCompleted, LifecycleEventReviewCompleted,
	LifecycleEventVerifyCompleted, LifecycleEventPhaseFailed, LifecycleEventApprovalGranted,
	LifecycleEventApplyStarted, LifecycleEventApplyConflicted, LifecycleEventApplyCompleted,
	LifecycleEventApplyRolledBack, LifecycleEventCancelRequested}

func (k LifecycleEventKind) String() string { return string(k) }

// ParseLifecycleEventKind returns the event kind named s.
func ParseLifecycleEventKind(s string) (LifecycleEventKind, bool) {
	return parseEnum(lifecycleEventKinds, s)
}

// LifecycleEvent is one event of the lifecycle journal. The set is closed:
// only the types of this file implement it.
type LifecycleEvent interface {
	Kind() LifecycleEventKind
	// validate checks the payload on its own (bounds, formats); what it
	// must agree with in the state is checked by StepLifecycle.
	validate() error
}

// LifecycleCreated starts a lifecycle and freezes what it runs against.
type LifecycleCreated struct {
	Lifecycle string          `json:"lifecycle_id"`
	Freeze    LifecycleFreeze `json:"freeze"`
}

// LifecycleExploreCompleted: the explorer's certified evidence (artifact ids
// that passed trusted validation) for the change's needs.
type LifecycleExploreCompleted struct {
	Invocation string        `json:"invocation"`
	Evidence   []string      `json:"evidence"` // sorted, unique
	Cost       LifecycleCost `json:"cost"`
}

// LifecyclePatchOutcome is what Needle made of a patch worker's checkout.
type LifecyclePatchOutcome string

const (
	LifecyclePatchAccepted LifecyclePatchOutcome = "accepted"
	LifecyclePatchRejected LifecyclePatchOutcome = "rejected" // a rule was broken: the whole patch is refused
)

var lifecyclePatchOutcomes = []LifecyclePatchOutcome{LifecyclePatchAccepted, LifecyclePatchRejected}

// LifecycleImplementCompleted: the patch Needle built from the implementer's
// checkout (round 2: the repair), or why it refused it.
type LifecycleImplementCompleted struct {
	Invocation string                `json:"invocation"`
	Outcome    LifecyclePatchOutcome `json:"outcome"`
	Patch      string                `json:"patch_id"` // accepted only
	Base       string                `json:"base_snapshot"`
	Files      int                   `json:"files"`
	Bytes      int                   `json:"bytes"`
	Reasons    []string              `json:"reasons"` // rejected only
	Cost       LifecycleCost         `json:"cost"`
}

// LifecycleTestCompleted: the results of running the frozen test plans on
// the current patch.
type LifecycleTestCompleted struct {
	Invocation string                `json:"invocation"`
	Evidence   LifecycleTestEvidence `json:"evidence"`
	Cost       LifecycleCost         `json:"cost"`
}

// LifecycleReviewCompleted: the reviewer's typed review artifact.
type LifecycleReviewCompleted struct {
	Invocation string                  `json:"invocation"`
	Review     LifecycleReviewArtifact `json:"review"`
	Cost       LifecycleCost           `json:"cost"`
}

// LifecycleVerifyCompleted: the verifier's VerificationArtifact.
type LifecycleVerifyCompleted struct {
	Invocation   string               `json:"invocation"`
	Verification VerificationArtifact `json:"verification"`
	Cost         LifecycleCost        `json:"cost"`
}

// LifecycleFailure classifies an adapter that produced no usable result.
type LifecycleFailure string

const (
	LifecycleFailureCrashed       LifecycleFailure = "crashed"        // the worker process died
	LifecycleFailureTimeout       LifecycleFailure = "timeout"        // past its deadline, interrupted and killed
	LifecycleFailureUnavailable   LifecycleFailure = "unavailable"    // the adapter could not start
	LifecycleFailureInvalidResult LifecycleFailure = "invalid_result" // the result failed validation or the machine refused it
	LifecycleFailureFailClosed    LifecycleFailure = "fail_closed"    // sandbox escape, checkout corruption, unverifiable cleanup
)

var lifecycleFailures = []LifecycleFailure{LifecycleFailureCrashed, LifecycleFailureTimeout,
	LifecycleFailureUnavailable, LifecycleFailureInvalidResult, LifecycleFailureFailClosed}

// LifecyclePhaseFailed: the current invocation of a phase failed.
type LifecyclePhaseFailed struct {
	Phase      Phase            `json:"phase"`
	Invocation string           `json:"invocation"`
	Failure    LifecycleFailure `json:"failure"`
	Detail     string           `json:"detail"`
	Cost       LifecycleCost    `json:"cost"`
}

// LifecycleApprovalGranted: the user approved applying the patch, bound to
// the digests the user was shown.
type LifecycleApprovalGranted struct {
	Binding LifecycleApprovalBinding `json:"binding"`
}

// LifecycleApplyStarted: the apply intent is journaled; files may move.
type LifecycleApplyStarted struct {
	Intent LifecycleApplyIntent `json:"intent"`
}

// LifecycleApplyConflicted: the work tree drifted from the patch's base
// (the 409 conflict); nothing was written.
type LifecycleApplyConflicted struct {
	Paths []string `json:"paths"` // sorted, unique
}

// LifecycleApplyCompleted: every file of the intent is written. Recovered
// says the apply was finished by crash recovery.
type LifecycleApplyCompleted struct {
	Intent    string `json:"intent"`
	Files     int    `json:"files"`
	Recovered bool   `json:"recovered"`
}

// LifecycleRollbackCause says why an apply was rolled back.
type LifecycleRollbackCause string

const (
	LifecycleRollbackDrift     LifecycleRollbackCause = "drift"           // a file changed under the apply
	LifecycleRollbackRecovered LifecycleRollbackCause = "crash_recovered" // recovery undid a crashed apply
	LifecycleRollbackIO        LifecycleRollbackCause = "io"              // a write failed
)

var lifecycleRollbackCauses = []LifecycleRollbackCause{LifecycleRollbackDrift, LifecycleRollbackRecovered, LifecycleRollbackIO}

// LifecycleApplyRolledBack: the apply was undone; the work tree holds none
// of the patch.
type LifecycleApplyRolledBack struct {
	Intent string                 `json:"intent"`
	Cause  LifecycleRollbackCause `json:"cause"`
}

// LifecycleCancelRequested: the user cancelled the lifecycle.
type LifecycleCancelRequested struct {
	Note string `json:"note"`
}

func (LifecycleCreated) Kind() LifecycleEventKind            { return LifecycleEventCreated }
func (LifecycleExploreCompleted) Kind() LifecycleEventKind   { return LifecycleEventExploreCompleted }
func (LifecycleImplementCompleted) Kind() LifecycleEventKind { return LifecycleEventImplementCompleted }
func (LifecycleTestCompleted) Kind() LifecycleEventKind      { return LifecycleEventTestCompleted }
func (LifecycleReviewCompleted) Kind() LifecycleEventKind    { return LifecycleEventReviewCompleted }
func (LifecycleVerifyCompleted) Kind() LifecycleEventKind    { return LifecycleEventVerifyCompleted }
func (LifecyclePhaseFailed) Kind() LifecycleEventKind        { return LifecycleEventPhaseFailed }
func (LifecycleApprovalGranted) Kind() LifecycleEventKind    { return LifecycleEventApprovalGranted }
func (LifecycleApplyStarted) Kind() LifecycleEventKind       { return LifecycleEventApplyStarted }
func (LifecycleApplyConflicted) Kind() LifecycleEventKind    { return LifecycleEventApplyConflicted }
func (LifecycleApplyCompleted) Kind() LifecycleEventKind     { return LifecycleEventApplyCompleted }
func (LifecycleApplyRolledBack) Kind() LifecycleEventKind    { return LifecycleEventApplyRolledBack }
func (LifecycleCancelRequested) Kind() LifecycleEventKind    { return LifecycleEventCancelRequested }

// LifecycleIDPattern is the syntax of an opaque lifecycle id.
var LifecycleIDPattern = lazyregexp.New(`^lcy_[0-9a-f]{24}$`)

func (ev LifecycleCreated) validate() error {
	if !LifecycleIDPattern.MatchString(ev.Lifecycle) {
		return fmt.Errorf("lifecycle_id: malformed lifecycle id %q; want lcy_<24 hex>", ev.Lifecycle)
	}
	return ev.Freeze.validate()
}

func (ev LifecycleExploreCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), checkIDList("evidence", ev.Evidence, 0, LifecycleMaxEvidence), ev.Cost.validate(PhaseExplore))
}

func (ev LifecycleImplementCompleted) validate() error {
	if err := firstErr(checkID("invocation", ev.Invocation), checkID("base_snapshot", ev.Base),
		checkEnum("outcome", ev.Outcome, lifecyclePatchOutcomes), ev.Cost.validate(PhaseImplement)); err != nil {
		return err
	}
	if ev.Outcome == LifecyclePatchRejected {
		if ev.Patch != "" || ev.Files != 0 || ev.Bytes != 0 {
			return fmt.Errorf("a rejected patch has no patch_id, files or bytes")
		}
		return checkEventTexts("reasons", ev.Reasons, 1, LifecycleMaxReasons)
	}
	switch {
	case len(ev.Reasons) != 0:
		return fmt.Errorf("reasons: an accepted patch has none")
	case ev.Files < 1 || ev.Files > MaxPatchFiles:
		return fmt.Errorf("files: want 1 to %d, got %d", MaxPatchFiles, ev.Files)
	case ev.Bytes < 0 || ev.Bytes > MaxPatchBytes:
		return fmt.Errorf("bytes: want 0 to %d, got %d", MaxPatchBytes, ev.Bytes)
	}
	return checkID("patch_id", ev.Patch)
}

func (ev LifecycleTestCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Evidence.validate(), ev.Cost.validate(PhaseTest))
}

func (ev LifecycleReviewCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Review.validate(), ev.Cost.validate(PhaseReview))
}

func (ev LifecycleVerifyCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Verification.validate(), ev.Cost.validate(PhaseVerify))
}

func (ev LifecyclePhaseFailed) validate() error {
	if ev.Phase == PhaseApply || !slices.Contains(lifecyclePhases, ev.Phase) {
		return fmt.Errorf("phase: %q is not a worker phase", ev.Phase)
	}
	return firstErr(checkID("invocation", ev.Invocation), checkEnum("failure", ev.Failure, lifecycleFailures),
		checkEventText("detail", ev.Detail, 0, LifecycleMaxTextBytes), ev.Cost.validate(ev.Phase))
}

func (ev LifecycleApprovalGranted) validate() error {
	b := ev.Binding
	return firstErr(checkID("binding.patch_id", b.Patch), checkID("binding.verification_id", b.Verification),
		checkID("binding.lifecycle_digest", b.Lifecycle))
}

func (ev LifecycleApplyStarted) validate() error { return ev.Intent.validate() }

func (ev LifecycleApplyConflicted) validate() error {
	return checkPaths("paths", ev.Paths)
}

func (ev LifecycleApplyCompleted) validate() error {
	if ev.Files < 1 || ev.Files > MaxPatchFiles {
		return fmt.Errorf("files: want 1 to %d, got %d", MaxPatchFiles, ev.Files)
	}
	return checkID("intent", ev.Intent)
}

func (ev LifecycleApplyRolledBack) validate() error {
	return firstErr(checkID("intent", ev.Intent), checkEnum("cause", ev.Cause, lifecycleRollbackCauses))
}

func (ev LifecycleCancelRequested) validate() error {
	return checkEventText("note", ev.Note, 0, LifecycleMaxTextBytes)
}

// LifecycleCost is what one adapter run cost: the tokens its workers
// reported, the wall time the kernel measured around it, and how many
// worker runs it counts for. A phase run counts for one, except explore,
// which runs one evidence worker per need evidence could not answer and
// counts for each when it started more than one (Runs; omitted, as in
// every other phase, it is one — and one is never spelled out, so a cost
// has exactly one encoding).
type LifecycleCost struct {
	Tokens int64 `json:"tokens"`
	WallMs int64 `json:"wall_ms"`
	Runs   int   `json:"runs,omitempty"`
}

// validate checks a cost of a run of phase p: only explore runs more than
// one worker.
func (c LifecycleCost) validate(p Phase) error {
	switch {
	case c.Tokens < 0 || c.Tokens > LifecycleMaxTokens:
		return fmt.Errorf("cost.tokens: want 0 to %d, got %d", LifecycleMaxTokens, c.Tokens)
	case c.WallMs < 0 || c.WallMs > LifecycleMaxWallMs:
		return fmt.Errorf("cost.wall_ms: want 0 to %d, got %d", LifecycleMaxWallMs, c.WallMs)
	case c.Runs != 0 && (c.Runs < 2 || c.Runs > LifecycleMaxRunsPerPhase):
		return fmt.Errorf("cost.runs: want it omitted (one run) or 2 to %d, got %d", LifecycleMaxRunsPerPhase, c.Runs)
	case c.Runs != 0 && p != PhaseExplore:
		return fmt.Errorf("cost.runs: only explore counts for more than one worker run, not %s", p)
	}
	return nil
}

// runs is how many worker runs the cost counts for.
func (c LifecycleCost) runs() int { return max(c.Runs, 1) }

// LifecycleTestOutcome is the result of one test plan. error means the
// test could not be run or judged: unavailable evidence, never a pass.
type LifecycleTestOutcome string

const (
	LifecycleTestPassed LifecycleTestOutcome = "passed"
	LifecycleTestFailed LifecycleTestOutcome = "failed"
	LifecycleTestError  LifecycleTestOutcome = "error"
)

var lifecycleTestOutcomes = []LifecycleTestOutcome{LifecycleTestPassed, LifecycleTestFailed, LifecycleTestError}

// LifecycleTestResult is the result of running one frozen test plan.
type LifecycleTestResult struct {
	Plan       string               `json:"plan"`
	Outcome    LifecycleTestOutcome `json:"outcome"`
	DurationMs int64                `json:"duration_ms"`
	Output     string               `json:"output_digest"` // content id of the captured output
}

// LifecycleTestEvidence is what the test phase produced for a patch: one
// result per plan, sorted by plan. Its content id is what a verification
// must cite.
type LifecycleTestEvidence struct {
	Patch   string                `json:"patch_id"`
	Results []LifecycleTestResult `json:"results"`
	// Dependencies is the content id of what the runs compiled
	// (TestDependencies, drift.go): what apply checks for drift. Empty in
	// evidence recorded before Needle recorded it.
	Dependencies string `json:"dependencies,omitempty"`
}

// ID is the content id of the evidence.
func (e LifecycleTestEvidence) ID() string { return mustID(tagLifecycleTestEvidence, e) }

func (e LifecycleTestEvidence) validate() error {
	if err := checkID("evidence.patch_id", e.Patch); err != nil {
		return err
	}
	if e.Dependencies != "" {
		if err := checkID("evidence.dependencies", e.Dependencies); err != nil {
			return err
		}
	}
	if len(e.Results) > LifecycleMaxTestPlans {
		return fmt.Errorf("evidence.results: %d results; the limit is %d", len(e.Results), LifecycleMaxTestPlans)
	}
	for i, r := range e.Results {
		p := fmt.Sprintf("evidence.results[%d]", i)
		if err := firstErr(checkID(p+".plan", r.Plan), checkEnum(p+".outcome", r.Outcome, lifecycleTestOutcomes),
			checkID(p+".output_digest", r.Output)); err != nil {
			return err
		}
		if r.DurationMs < 0 || r.DurationMs > LifecycleMaxWallMs {
			return fmt.Errorf("%s.duration_ms: want 0 to %d, got %d", p, LifecycleMaxWallMs, r.DurationMs)
		}
		if i > 0 && e.Results[i-1].Plan >= r.Plan {
			return fmt.Errorf("%s.plan: results are not sorted by plan, or a plan repeats", p)
		}
	}
	return nil
}

// LifecycleFindingSeverity grades a review finding.
type LifecycleFindingSeverity string

const (
	LifecycleFindingInfo  LifecycleFindingSeverity = "info"
	LifecycleFindingMinor LifecycleFindingSeverity = "minor"
	LifecycleFindingMajor LifecycleFindingSeverity = "major"
)

var lifecycleFindingSeverities = []LifecycleFindingSeverity{LifecycleFindingInfo, LifecycleFindingMinor, LifecycleFindingMajor}

// LifecycleReviewFinding is one finding of a review. Criterion is the
// 1-based criterion it concerns, 0 for the patch as a whole.
type LifecycleReviewFinding struct {
	Severity  LifecycleFindingSeverity `json:"severity"`
	Criterion int                      `json:"criterion"`
	Summary   string                   `json:"summary"`
}

// LifecycleReviewArtifact is a review of the current patch. The reviewer
// consumes the patch and the redacted acceptance-criterion digests, never
// their text or a worker transcript. A review is advisory: it is shown at
// approval and can never stand for a verification.
type LifecycleReviewArtifact struct {
	Patch    string                   `json:"patch_id"`
	Reviewer LifecycleProfileRef      `json:"reviewer"`
	Criteria []string                 `json:"criteria"` // redacted criterion digests, in order
	Findings []LifecycleReviewFinding `json:"findings"`
}

// ID is the content id of the review.
func (r LifecycleReviewArtifact) ID() string { return mustID(tagLifecycleReview, r) }

func (r LifecycleReviewArtifact) validate() error {
	if err := firstErr(checkID("review.patch_id", r.Patch), r.Reviewer.validate("review.reviewer"),
		checkCriteria("review.criteria", r.Criteria)); err != nil {
		return err
	}
	if len(r.Findings) > LifecycleMaxFindings {
		return fmt.Errorf("review.findings: %d findings; the limit is %d", len(r.Findings), LifecycleMaxFindings)
	}
	for i, f := range r.Findings {
		p := fmt.Sprintf("review.findings[%d]", i)
		if f.Criterion < 0 || f.Criterion > MaxCriteria {
			return fmt.Errorf("%s.criterion: want 0 to %d, got %d", p, MaxCriteria, f.Criterion)
		}
		if err := firstErr(checkEnum(p+".severity", f.Severity, lifecycleFindingSeverities),
			checkEventText(p+".summary", f.Summary, 1, LifecycleMaxTextBytes)); err != nil {
			return err
		}
	}
	return nil
}

// LifecycleCriterionJudgement judges the criterion whose redacted digest it
// names (criteria are numbered from 1).
type LifecycleCriterionJudgement struct {
	Criterion int             `json:"criterion"`
	Digest    string          `json:"digest"`
	Status    CriterionStatus `json:"status"`
	Note      string          `json:"note"`
}

// VerificationArtifact is the canonical verification of a patch, made by
// the lifecycle's distinct verifier profile from the patched checkout, the
// criteria and the test evidence. It has no place for a review or for a
// patch worker's transcript: it cites the test evidence by content id and
// the verifier by its frozen profile.
type VerificationArtifact struct {
	Patch        string                        `json:"patch_id"`
	Verifier     LifecycleProfileRef           `json:"verifier"`
	TestEvidence string                        `json:"test_evidence"`
	Criteria     []LifecycleCriterionJudgement `json:"criteria"`
	Outcome      Verdict                       `json:"outcome"`
	Repair       string                        `json:"repair_instructions"` // repairable only
}

// ID is the content id of the verification, under a tag of its own: no
// other artifact can have it.
func (v VerificationArtifact) ID() string { return mustID(tagVerificationArtifact, v) }

func (v VerificationArtifact) validate() error {
	if err := firstErr(checkID("verification.patch_id", v.Patch), v.Verifier.validate("verification.verifier"),
		checkID("verification.test_evidence", v.TestEvidence), checkEnum("verification.outcome", v.Outcome, allVerdicts),
		checkEventText("verification.repair_instructions", v.Repair, 0, LifecycleMaxRepairBytes)); err != nil {
		return err
	}
	if len(v.Criteria) < 1 || len(v.Criteria) > MaxCriteria {
		return fmt.Errorf("verification.criteria: want 1 to %d judgements, got %d", MaxCriteria, len(v.Criteria))
	}
	for i, c := range v.Criteria {
		p := fmt.Sprintf("verification.criteria[%d]", i)
		if c.Criterion < 1 || c.Criterion > MaxCriteria {
			return fmt.Errorf("%s.criterion: want 1 to %d, got %d", p, MaxCriteria, c.Criterion)
		}
		if err := firstErr(checkID(p+".digest", c.Digest), checkEnum(p+".status", c.Status, allCriterionStatuses),
			checkEventText(p+".note", c.Note, 0, LifecycleMaxTextBytes)); err != nil {
			return err
		}
	}
	return nil
}

// LifecycleApprovalBinding is what an approval is bound to: the current
// patch, the current verification and the digest of the lifecycle state
// awaiting approval.
type LifecycleApprovalBinding struct {
	Patch        string `json:"patch_id"`
	Verification string `json:"verification_id"`
	Lifecycle    string `json:"lifecycle_digest"`
}

// id is the approval's content id within a lifecycle.
func (b LifecycleApprovalBinding) id(lifecycle string) string {
	return mustID(tagLifecycleApproval, struct {
		Lifecycle string                   `json:"lifecycle_id"`
		Binding   LifecycleApprovalBinding `json:"binding"`
	}{lifecycle, b})
}

// LifecycleApplyFile is one file of an apply intent: its path and its
// content digests before and after ("" for an absent file).
type LifecycleApplyFile struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// LifecycleApplyIntent is journaled before any file of the work tree
// changes: which patch, under which approval, and every file's digests, so
// that recovery can tell a half-applied tree and finish or undo it.
type LifecycleApplyIntent struct {
	Patch    string               `json:"patch_id"`
	Approval string               `json:"approval_id"`
	Files    []LifecycleApplyFile `json:"files"` // sorted by path
}

// ID is the content id of the intent.
func (in LifecycleApplyIntent) ID() string { return mustID(tagLifecycleApplyIntent, in) }

func (in LifecycleApplyIntent) validate() error {
	if err := firstErr(checkID("intent.patch_id", in.Patch), checkID("intent.approval_id", in.Approval)); err != nil {
		return err
	}
	if len(in.Files) < 1 || len(in.Files) > MaxPatchFiles {
		return fmt.Errorf("intent.files: want 1 to %d files, got %d", MaxPatchFiles, len(in.Files))
	}
	paths := make([]string, len(in.Files))
	for i, f := range in.Files {
		p := fmt.Sprintf("intent.files[%d]", i)
		paths[i] = f.Path
		for name, d := range map[string]string{".before": f.Before, ".after": f.After} {
			if d != "" && !contentid.Valid(d) {
				return fmt.Errorf("%s%s: malformed digest %q", p, name, d)
			}
		}
		if f.Before == f.After {
			return fmt.Errorf("%s: before and after are the same", p)
		}
	}
	return checkPaths("intent.files", paths)
}

// Payload checks shared by the events.

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkID(p, id string) error {
	if !contentid.Valid(id) {
		return fmt.Errorf("%s: malformed id %q; want b3:<64 hex>", p, clip(id, 80))
	}
	return nil
}

// checkIDList checks a sorted list of unique content ids.
func checkIDList(p string, ids []string, minLen, maxLen int) error {
	if len(ids) < minLen || len(ids) > maxLen {
		return fmt.Errorf("%s: want %d to %d ids, got %d", p, minLen, maxLen, len(ids))
	}
	for i, id := range ids {
		if err := checkID(fmt.Sprintf("%s[%d]", p, i), id); err != nil {
			return err
		}
		if i > 0 && ids[i-1] >= id {
			return fmt.Errorf("%s[%d]: ids are not sorted, or one repeats", p, i)
		}
	}
	return nil
}

// checkCriteria checks redacted criterion digests: 1 to MaxCriteria, in
// criterion order (two criteria may have the same text, so repeats are
// allowed).
func checkCriteria(p string, digests []string) error {
	if len(digests) < 1 || len(digests) > MaxCriteria {
		return fmt.Errorf("%s: want 1 to %d criterion digests, got %d", p, MaxCriteria, len(digests))
	}
	for i, d := range digests {
		if err := checkID(fmt.Sprintf("%s[%d]", p, i), d); err != nil {
			return err
		}
	}
	return nil
}

func checkEnum[T ~string](p string, v T, values []T) error {
	if !slices.Contains(values, v) {
		return fmt.Errorf("%s: unknown value %q; want one of %s", p, clip(string(v), 80), enumList(values))
	}
	return nil
}

// checkText checks bounded free text: valid UTF-8 without NUL, not blank
// when required.
func checkEventText(p, s string, minLen, maxBytes int) error {
	switch {
	case minLen > 0 && strings.TrimSpace(s) == "":
		return fmt.Errorf("%s: empty text", p)
	case len(s) > maxBytes:
		return fmt.Errorf("%s: too long (%d bytes); the limit is %d", p, len(s), maxBytes)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return fmt.Errorf("%s: not UTF-8 text", p)
	}
	return nil
}

func checkEventTexts(p string, texts []string, minLen, maxLen int) error {
	if len(texts) < minLen || len(texts) > maxLen {
		return fmt.Errorf("%s: want %d to %d entries, got %d", p, minLen, maxLen, len(texts))
	}
	for i, s := range texts {
		if err := checkEventText(fmt.Sprintf("%s[%d]", p, i), s, 1, LifecycleMaxTextBytes); err != nil {
			return err
		}
	}
	return nil
}

// checkPaths checks a sorted list of unique repository paths a patch may
// hold (the rule of checkScopePath for an exact scope).
func checkPaths(p string, paths []string) error {
	if len(paths) < 1 || len(paths) > MaxPatchFiles {
		return fmt.Errorf("%s: want 1 to %d paths, got %d", p, MaxPatchFiles, len(paths))
	}
	for i, path := range paths {
		if err := checkScopePath(path, ScopeExact); err != nil {
			return fmt.Errorf("%s[%d]: %v", p, i, err)
		}
		if i > 0 && paths[i-1] >= path {
			return fmt.Errorf("%s[%d]: paths are not sorted, or one repeats", p, i)
		}
	}
	return nil
}

// The journal form of an event: its kind, the canonical JSON of its
// payload, and the payload digest (the content id of kind and payload
// together, so a payload cannot be replayed under another kind).

// LifecycleMaxEventBytes bounds one event's payload in the journal.
const LifecycleMaxEventBytes = 64 << 10

// EncodeLifecycleEvent returns an event's journal form.
func EncodeLifecycleEvent(ev LifecycleEvent) (kind LifecycleEventKind, payload []byte, digest string) {
	payload = []byte(mustJSON(ev))
	return ev.Kind(), payload, eventDigest(ev.Kind(), payload)
}

// LifecycleEventDigest is the payload digest of an event: the content id
// of {"kind", "payload"} under the event tag.
func LifecycleEventDigest(ev LifecycleEvent) string {
	return eventDigest(ev.Kind(), []byte(mustJSON(ev)))
}

// eventDigest hashes the canonical JSON of {"kind": kind, "payload":
// payload} given the payload's canonical JSON: the keys in order, the kind
// an ASCII word that needs no escaping. It is what the content id of that
// object is (TestLifecycleEventDigest holds them equal), without encoding
// the payload twice.
func eventDigest(kind LifecycleEventKind, payload []byte) string {
	b := make([]byte, 0, len(payload)+len(kind)+24)
	b = append(b, `{"kind":"`...)
	b = append(b, kind...)
	b = append(b, `","payload":`...)
	b = append(b, payload...)
	b = append(b, '}')
	return contentid.OfBytes(tagLifecycleEvent, b)
}

// DecodeLifecycleEvent decodes an event from its journal form. The payload
// must be exactly the canonical JSON the encoder writes (so unknown or
// missing fields, duplicate keys, other spellings and trailing data are all
// refused) and valid on its own. Errors are KindInvalidInput.
func DecodeLifecycleEvent(kind string, payload []byte) (LifecycleEvent, error) {
	k, ok := ParseLifecycleEventKind(kind)
	if !ok {
		return nil, invalidf("lifecycle.event", "kind", "unknown event kind %q", clip(kind, 80))
	}
	if len(payload) > LifecycleMaxEventBytes {
		return nil, invalidf("lifecycle.event", "payload", "%d bytes; the limit is %d", len(payload), LifecycleMaxEventBytes)
	}
	ev, err := lifecycleEventDecoders[k](payload)
	if err != nil {
		return nil, invalidf("lifecycle.event", "payload", "%s: %v", k, err)
	}
	if err := ev.validate(); err != nil {
		return nil, invalidf("lifecycle.event", "payload", "%s: %v", k, err)
	}
	return ev, nil
}

var lifecycleEventDecoders = map[LifecycleEventKind]func([]byte) (LifecycleEvent, error){
	LifecycleEventCreated:            decodeCanonical[LifecycleCreated],
	LifecycleEventExploreCompleted:   decodeCanonical[LifecycleExploreCompleted],
	LifecycleEventImplementCompleted: decodeCanonical[LifecycleImplementCompleted],
	LifecycleEventTestCompleted:      decodeCanonical[LifecycleTestCompleted],
	LifecycleEventReviewCompleted:    decodeCanonical[LifecycleReviewCompleted],
	LifecycleEventVerifyCompleted:    decodeCanonical[LifecycleVerifyCompleted],
	LifecycleEventPhaseFailed:        decodeCanonical[LifecyclePhaseFailed],
	LifecycleEventApprovalGranted:    decodeCanonical[LifecycleApprovalGranted],
	LifecycleEventApplyStarted:       decodeCanonical[LifecycleApplyStarted],
	LifecycleEventApplyConflicted:    decodeCanonical[LifecycleApplyConflicted],
	LifecycleEventApplyCompleted:     decodeCanonical[LifecycleApplyCompleted],
	LifecycleEventApplyRolledBack:    decodeCanonical[LifecycleApplyRolledBack],
	LifecycleEventCancelRequested:    decodeCanonical[LifecycleCancelRequested],
}

// decodeCanonical decodes data into a T and insists that data is the
// canonical encoding of what it decoded.
func decodeCanonical[T LifecycleEvent](data []byte) (LifecycleEvent, error) {
	v, err := decodeCanonicalValue[T](data)
	return v, err
}

func decodeCanonicalValue[T any](data []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, err
	}
	if dec.More() {
		return v, fmt.Errorf("data after the JSON value")
	}
	again, err := contentid.Canonical(v)
	if err != nil {
		return v, err
	}
	if !bytes.Equal(again, data) {
		return v, fmt.Errorf("not the canonical encoding")
	}
	return v, nil
}
