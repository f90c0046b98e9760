package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/enum"
	"github.com/needle-dev/needle/product/internal/safetext"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// The events of the lifecycle machine and their journal form. An event is
// either the parent's own decision (created, approval, apply steps,
// cancellation) or a worker completion the parent validated and persisted
// first. A completion names only the invocation it answers and what the
// worker produced, within the bounds of machine.go: there is no field for a
// next phase, a new worker or a transition, so no completion can ask for
// one.

// The domain tags of the machine's content ids.
const (
	tagState                = "needle.lifecycle_state.v1"         // State → state digest (the CAS token)
	tagEvent                = "needle.lifecycle_event.v1"         // {kind, payload} of an event → payload digest
	tagInvocation           = "needle.lifecycle_invocation.v1"    // {lifecycle, phase, attempt} → invocation id
	tagTestEvidence         = "needle.lifecycle_test_evidence.v1" // TestEvidence → evidence id
	tagReview               = "needle.lifecycle_review.v1"        // ReviewArtifact → review id
	tagVerificationArtifact = "needle.verification_artifact.v1"   // VerificationArtifact → verification id
	tagApproval             = "needle.lifecycle_approval.v1"      // {lifecycle, binding} → approval id
	tagApplyIntent          = "needle.lifecycle_apply_intent.v1"  // ApplyIntent → intent id
)

// Verdict is a verifier's judgement of a patch.
type Verdict string

const (
	VerdictVerified     Verdict = "verified"
	VerdictRejected     Verdict = "rejected"
	VerdictRepairable   Verdict = "repairable"
	VerdictInconclusive Verdict = "inconclusive"
)

var Verdicts = []Verdict{VerdictVerified, VerdictRejected, VerdictRepairable, VerdictInconclusive}

// CriterionStatus is a verifier's judgement of one acceptance criterion.
type CriterionStatus string

const (
	CriterionMet     CriterionStatus = "met"
	CriterionUnmet   CriterionStatus = "unmet"
	CriterionUnknown CriterionStatus = "unknown"
)

var CriterionStatuses = []CriterionStatus{CriterionMet, CriterionUnmet, CriterionUnknown}

// EventKind names an event in the change_events journal.
type EventKind string

const (
	EventCreated            EventKind = "created"
	EventExploreCompleted   EventKind = "explore_completed"
	EventImplementCompleted EventKind = "implement_completed"
	EventTestCompleted      EventKind = "test_completed"
	EventReviewCompleted    EventKind = "review_completed"
	EventVerifyCompleted    EventKind = "verify_completed"
	EventPhaseFailed        EventKind = "phase_failed"
	EventApprovalGranted    EventKind = "approval_granted"
	EventApplyStarted       EventKind = "apply_started"
	EventApplyConflicted    EventKind = "apply_conflicted"
	EventApplyCompleted     EventKind = "apply_completed"
	EventApplyRolledBack    EventKind = "apply_rolled_back"
	EventCancelRequested    EventKind = "cancel_requested"
)

// eventKinds lists every kind, in lifecycle order.
var eventKinds = []EventKind{EventCreated, EventExploreCompleted,
	EventImplementCompleted, EventTestCompleted, EventReviewCompleted,
	EventVerifyCompleted, EventPhaseFailed, EventApprovalGranted,
	EventApplyStarted, EventApplyConflicted, EventApplyCompleted,
	EventApplyRolledBack, EventCancelRequested}

func (k EventKind) String() string { return string(k) }

// ParseEventKind returns the event kind named s.
func ParseEventKind(s string) (EventKind, bool) {
	return enum.Parse(eventKinds, s)
}

// Event is one event of the lifecycle journal. The set is closed:
// only the types of this file implement it.
type Event interface {
	Kind() EventKind
	// validate checks the payload on its own (bounds, formats); what it
	// must agree with in the state is checked by Step.
	validate() error
}

// Created starts a lifecycle and freezes what it runs against.
type Created struct {
	Lifecycle string `json:"lifecycle_id"`
	Freeze    Freeze `json:"freeze"`
}

// ExploreCompleted: the explorer's certified evidence (artifact ids
// that passed trusted validation) for the change's needs.
type ExploreCompleted struct {
	Invocation string   `json:"invocation"`
	Evidence   []string `json:"evidence"` // sorted, unique
	Cost       Cost     `json:"cost"`
}

// PatchOutcome is what Needle made of a patch worker's checkout.
type PatchOutcome string

const (
	PatchAccepted PatchOutcome = "accepted"
	PatchRejected PatchOutcome = "rejected" // a rule was broken: the whole patch is refused
)

var patchOutcomes = []PatchOutcome{PatchAccepted, PatchRejected}

// ImplementCompleted: the patch Needle built from the implementer's
// checkout (round 2: the repair), or why it refused it.
type ImplementCompleted struct {
	Invocation string       `json:"invocation"`
	Outcome    PatchOutcome `json:"outcome"`
	Patch      string       `json:"patch_id"` // accepted only
	Base       string       `json:"base_snapshot"`
	Files      int          `json:"files"`
	Bytes      int          `json:"bytes"`
	Reasons    []string     `json:"reasons"` // rejected only
	Cost       Cost         `json:"cost"`
}

// TestCompleted: the results of running the frozen test plans on
// the current patch.
type TestCompleted struct {
	Invocation string       `json:"invocation"`
	Evidence   TestEvidence `json:"evidence"`
	Cost       Cost         `json:"cost"`
}

// ReviewCompleted: the reviewer's typed review artifact.
type ReviewCompleted struct {
	Invocation string         `json:"invocation"`
	Review     ReviewArtifact `json:"review"`
	Cost       Cost           `json:"cost"`
}

// VerifyCompleted: the verifier's VerificationArtifact.
type VerifyCompleted struct {
	Invocation   string               `json:"invocation"`
	Verification VerificationArtifact `json:"verification"`
	Cost         Cost                 `json:"cost"`
}

// Failure classifies an adapter that produced no usable result.
type Failure string

const (
	FailureCrashed       Failure = "crashed"        // the worker process died
	FailureTimeout       Failure = "timeout"        // past its deadline, interrupted and killed
	FailureUnavailable   Failure = "unavailable"    // the adapter could not start
	FailureInvalidResult Failure = "invalid_result" // the result failed validation or the machine refused it
	FailureFailClosed    Failure = "fail_closed"    // sandbox escape, checkout corruption, unverifiable cleanup
)

var failures = []Failure{FailureCrashed, FailureTimeout,
	FailureUnavailable, FailureInvalidResult, FailureFailClosed}

// PhaseFailed: the current invocation of a phase failed.
type PhaseFailed struct {
	Phase      Phase   `json:"phase"`
	Invocation string  `json:"invocation"`
	Failure    Failure `json:"failure"`
	Detail     string  `json:"detail"`
	Cost       Cost    `json:"cost"`
}

// ApprovalGranted: the user approved applying the patch, bound to
// the digests the user was shown.
type ApprovalGranted struct {
	Binding ApprovalBinding `json:"binding"`
}

// ApplyStarted: the apply intent is journaled; files may move.
type ApplyStarted struct {
	Intent ApplyIntent `json:"intent"`
}

// ApplyConflicted: the work tree drifted from the patch's base
// (the 409 conflict); nothing was written.
type ApplyConflicted struct {
	Paths []string `json:"paths"` // sorted, unique
}

// ApplyCompleted: every file of the intent is written. Recovered
// says the apply was finished by crash recovery.
type ApplyCompleted struct {
	Intent    string `json:"intent"`
	Files     int    `json:"files"`
	Recovered bool   `json:"recovered"`
}

// RollbackCause says why an apply was rolled back.
type RollbackCause string

const (
	RollbackDrift     RollbackCause = "drift"           // a file changed under the apply
	RollbackRecovered RollbackCause = "crash_recovered" // recovery undid a crashed apply
	RollbackIO        RollbackCause = "io"              // a write failed
)

var rollbackCauses = []RollbackCause{RollbackDrift, RollbackRecovered, RollbackIO}

// ApplyRolledBack: the apply was undone; the work tree holds none
// of the patch.
type ApplyRolledBack struct {
	Intent string        `json:"intent"`
	Cause  RollbackCause `json:"cause"`
}

// CancelRequested: the user cancelled the lifecycle.
type CancelRequested struct {
	Note string `json:"note"`
}

func (Created) Kind() EventKind            { return EventCreated }
func (ExploreCompleted) Kind() EventKind   { return EventExploreCompleted }
func (ImplementCompleted) Kind() EventKind { return EventImplementCompleted }
func (TestCompleted) Kind() EventKind      { return EventTestCompleted }
func (ReviewCompleted) Kind() EventKind    { return EventReviewCompleted }
func (VerifyCompleted) Kind() EventKind    { return EventVerifyCompleted }
func (PhaseFailed) Kind() EventKind        { return EventPhaseFailed }
func (ApprovalGranted) Kind() EventKind    { return EventApprovalGranted }
func (ApplyStarted) Kind() EventKind       { return EventApplyStarted }
func (ApplyConflicted) Kind() EventKind    { return EventApplyConflicted }
func (ApplyCompleted) Kind() EventKind     { return EventApplyCompleted }
func (ApplyRolledBack) Kind() EventKind    { return EventApplyRolledBack }
func (CancelRequested) Kind() EventKind    { return EventCancelRequested }

// IDPattern is the syntax of an opaque lifecycle id.
var IDPattern = lazyregexp.New(`^lcy_[0-9a-f]{24}$`)

func (ev Created) validate() error {
	if !IDPattern.MatchString(ev.Lifecycle) {
		return fmt.Errorf("lifecycle_id: malformed lifecycle id %q; want lcy_<24 hex>", ev.Lifecycle)
	}
	return ev.Freeze.validate()
}

func (ev ExploreCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), checkIDList("evidence", ev.Evidence, 0, MaxEvidence), ev.Cost.validate(PhaseExplore))
}

func (ev ImplementCompleted) validate() error {
	if err := firstErr(checkID("invocation", ev.Invocation), checkID("base_snapshot", ev.Base),
		checkEnum("outcome", ev.Outcome, patchOutcomes), ev.Cost.validate(PhaseImplement)); err != nil {
		return err
	}
	if ev.Outcome == PatchRejected {
		if ev.Patch != "" || ev.Files != 0 || ev.Bytes != 0 {
			return fmt.Errorf("a rejected patch has no patch_id, files or bytes")
		}
		return checkEventTexts("reasons", ev.Reasons, 1, MaxReasons)
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

func (ev TestCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Evidence.validate(), ev.Cost.validate(PhaseTest))
}

func (ev ReviewCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Review.Validate(), ev.Cost.validate(PhaseReview))
}

func (ev VerifyCompleted) validate() error {
	return firstErr(checkID("invocation", ev.Invocation), ev.Verification.validate(), ev.Cost.validate(PhaseVerify))
}

func (ev PhaseFailed) validate() error {
	if ev.Phase == PhaseApply || !slices.Contains(Phases, ev.Phase) {
		return fmt.Errorf("phase: %q is not a worker phase", ev.Phase)
	}
	return firstErr(checkID("invocation", ev.Invocation), checkEnum("failure", ev.Failure, failures),
		checkEventText("detail", ev.Detail, 0, MaxTextBytes), ev.Cost.validate(ev.Phase))
}

func (ev ApprovalGranted) validate() error {
	b := ev.Binding
	return firstErr(checkID("binding.patch_id", b.Patch), checkID("binding.verification_id", b.Verification),
		checkID("binding.lifecycle_digest", b.Lifecycle))
}

func (ev ApplyStarted) validate() error { return ev.Intent.validate() }

func (ev ApplyConflicted) validate() error {
	return checkPaths("paths", ev.Paths)
}

func (ev ApplyCompleted) validate() error {
	if ev.Files < 1 || ev.Files > MaxPatchFiles {
		return fmt.Errorf("files: want 1 to %d, got %d", MaxPatchFiles, ev.Files)
	}
	return checkID("intent", ev.Intent)
}

func (ev ApplyRolledBack) validate() error {
	return firstErr(checkID("intent", ev.Intent), checkEnum("cause", ev.Cause, rollbackCauses))
}

func (ev CancelRequested) validate() error {
	return checkEventText("note", ev.Note, 0, MaxTextBytes)
}

// Cost is what one adapter run cost: the tokens its workers
// reported, the wall time the kernel measured around it, and how many
// worker runs it counts for. A phase run counts for one, except explore,
// which runs one evidence worker per need evidence could not answer and
// counts for each when it started more than one (Runs; omitted, as in
// every other phase, it is one — and one is never spelled out, so a cost
// has exactly one encoding).
type Cost struct {
	Tokens int64 `json:"tokens"`
	WallMs int64 `json:"wall_ms"`
	Runs   int   `json:"runs,omitempty"`
}

// validate checks a cost of a run of phase p: only explore runs more than
// one worker.
func (c Cost) validate(p Phase) error {
	switch {
	case c.Tokens < 0 || c.Tokens > MaxTokens:
		return fmt.Errorf("cost.tokens: want 0 to %d, got %d", MaxTokens, c.Tokens)
	case c.WallMs < 0 || c.WallMs > MaxWallMs:
		return fmt.Errorf("cost.wall_ms: want 0 to %d, got %d", MaxWallMs, c.WallMs)
	case c.Runs != 0 && (c.Runs < 2 || c.Runs > MaxRunsPerPhase):
		return fmt.Errorf("cost.runs: want it omitted (one run) or 2 to %d, got %d", MaxRunsPerPhase, c.Runs)
	case c.Runs != 0 && p != PhaseExplore:
		return fmt.Errorf("cost.runs: only explore counts for more than one worker run, not %s", p)
	}
	return nil
}

// runs is how many worker runs the cost counts for.
func (c Cost) runs() int { return max(c.Runs, 1) }

// TestOutcome is the result of one test plan. error means the
// test could not be run or judged: unavailable evidence, never a pass.
type TestOutcome string

const (
	TestPassed TestOutcome = "passed"
	TestFailed TestOutcome = "failed"
	TestError  TestOutcome = "error"
)

var TestOutcomes = []TestOutcome{TestPassed, TestFailed, TestError}

// TestResult is the result of running one frozen test plan.
type TestResult struct {
	Plan       string      `json:"plan"`
	Outcome    TestOutcome `json:"outcome"`
	DurationMs int64       `json:"duration_ms"`
	Output     string      `json:"output_digest"` // content id of the captured output
}

// TestEvidence is what the test phase produced for a patch: one
// result per plan, sorted by plan. Its content id is what a verification
// must cite.
type TestEvidence struct {
	Patch   string       `json:"patch_id"`
	Results []TestResult `json:"results"`
	// Dependencies is the content id of what the runs compiled
	// (TestDependencies, drift.go): what apply checks for drift. Empty in
	// evidence recorded before Needle recorded it.
	Dependencies string `json:"dependencies,omitempty"`
}

// ID is the content id of the evidence.
func (e TestEvidence) ID() string { return contentid.MustOf(tagTestEvidence, e) }

func (e TestEvidence) validate() error {
	if err := checkID("evidence.patch_id", e.Patch); err != nil {
		return err
	}
	if e.Dependencies != "" {
		if err := checkID("evidence.dependencies", e.Dependencies); err != nil {
			return err
		}
	}
	if len(e.Results) > MaxTestPlans {
		return fmt.Errorf("evidence.results: %d results; the limit is %d", len(e.Results), MaxTestPlans)
	}
	for i, r := range e.Results {
		p := fmt.Sprintf("evidence.results[%d]", i)
		if err := firstErr(checkID(p+".plan", r.Plan), checkEnum(p+".outcome", r.Outcome, TestOutcomes),
			checkID(p+".output_digest", r.Output)); err != nil {
			return err
		}
		if r.DurationMs < 0 || r.DurationMs > MaxWallMs {
			return fmt.Errorf("%s.duration_ms: want 0 to %d, got %d", p, MaxWallMs, r.DurationMs)
		}
		if i > 0 && e.Results[i-1].Plan >= r.Plan {
			return fmt.Errorf("%s.plan: results are not sorted by plan, or a plan repeats", p)
		}
	}
	return nil
}

// FindingSeverity grades a review finding.
type FindingSeverity string

const (
	FindingInfo  FindingSeverity = "info"
	FindingMinor FindingSeverity = "minor"
	FindingMajor FindingSeverity = "major"
)

var FindingSeverities = []FindingSeverity{FindingInfo, FindingMinor, FindingMajor}

// ReviewFinding is one finding of a review. Criterion is the
// 1-based criterion it concerns, 0 for the patch as a whole.
type ReviewFinding struct {
	Severity  FindingSeverity `json:"severity"`
	Criterion int             `json:"criterion"`
	Summary   string          `json:"summary"`
}

// ReviewArtifact is a review of the current patch. The reviewer
// consumes the patch and the redacted acceptance-criterion digests, never
// their text or a worker transcript. A review is advisory: it is shown at
// approval and can never stand for a verification.
type ReviewArtifact struct {
	Patch    string          `json:"patch_id"`
	Reviewer ProfileRef      `json:"reviewer"`
	Criteria []string        `json:"criteria"` // redacted criterion digests, in order
	Findings []ReviewFinding `json:"findings"`
}

// ID is the content id of the review.
func (r ReviewArtifact) ID() string { return contentid.MustOf(tagReview, r) }

func (r ReviewArtifact) Validate() error {
	if err := firstErr(checkID("review.patch_id", r.Patch), r.Reviewer.validate("review.reviewer"),
		checkCriteria("review.criteria", r.Criteria)); err != nil {
		return err
	}
	if len(r.Findings) > MaxFindings {
		return fmt.Errorf("review.findings: %d findings; the limit is %d", len(r.Findings), MaxFindings)
	}
	for i, f := range r.Findings {
		p := fmt.Sprintf("review.findings[%d]", i)
		if f.Criterion < 0 || f.Criterion > MaxCriteria {
			return fmt.Errorf("%s.criterion: want 0 to %d, got %d", p, MaxCriteria, f.Criterion)
		}
		if err := firstErr(checkEnum(p+".severity", f.Severity, FindingSeverities),
			checkEventText(p+".summary", f.Summary, 1, MaxTextBytes)); err != nil {
			return err
		}
	}
	return nil
}

// CriterionJudgement judges the criterion whose redacted digest it
// names (criteria are numbered from 1).
type CriterionJudgement struct {
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
	Patch        string               `json:"patch_id"`
	Verifier     ProfileRef           `json:"verifier"`
	TestEvidence string               `json:"test_evidence"`
	Criteria     []CriterionJudgement `json:"criteria"`
	Outcome      Verdict              `json:"outcome"`
	Repair       string               `json:"repair_instructions"` // repairable only
}

// ID is the content id of the verification, under a tag of its own: no
// other artifact can have it.
func (v VerificationArtifact) ID() string { return contentid.MustOf(tagVerificationArtifact, v) }

func (v VerificationArtifact) validate() error {
	if err := firstErr(checkID("verification.patch_id", v.Patch), v.Verifier.validate("verification.verifier"),
		checkID("verification.test_evidence", v.TestEvidence), checkEnum("verification.outcome", v.Outcome, Verdicts),
		checkEventText("verification.repair_instructions", v.Repair, 0, MaxRepairBytes)); err != nil {
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
		if err := firstErr(checkID(p+".digest", c.Digest), checkEnum(p+".status", c.Status, CriterionStatuses),
			checkEventText(p+".note", c.Note, 0, MaxTextBytes)); err != nil {
			return err
		}
	}
	return nil
}

// ApprovalBinding is what an approval is bound to: the current
// patch, the current verification and the digest of the lifecycle state
// awaiting approval.
type ApprovalBinding struct {
	Patch        string `json:"patch_id"`
	Verification string `json:"verification_id"`
	Lifecycle    string `json:"lifecycle_digest"`
}

// id is the approval's content id within a lifecycle.
func (b ApprovalBinding) id(lifecycle string) string {
	return contentid.MustOf(tagApproval, struct {
		Lifecycle string          `json:"lifecycle_id"`
		Binding   ApprovalBinding `json:"binding"`
	}{lifecycle, b})
}

// ApplyFile is one file of an apply intent: its path and its
// content digests before and after ("" for an absent file).
type ApplyFile struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// ApplyIntent is journaled before any file of the work tree
// changes: which patch, under which approval, and every file's digests, so
// that recovery can tell a half-applied tree and finish or undo it.
type ApplyIntent struct {
	Patch    string      `json:"patch_id"`
	Approval string      `json:"approval_id"`
	Files    []ApplyFile `json:"files"` // sorted by path
}

// ID is the content id of the intent.
func (in ApplyIntent) ID() string { return contentid.MustOf(tagApplyIntent, in) }

func (in ApplyIntent) validate() error {
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
		return fmt.Errorf("%s: malformed id %q; want b3:<64 hex>", p, safetext.Clip(id, 80))
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
		return fmt.Errorf("%s: unknown value %q; want one of %s", p, safetext.Clip(string(v), 80), enum.List(values))
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
		if err := checkEventText(fmt.Sprintf("%s[%d]", p, i), s, 1, MaxTextBytes); err != nil {
			return err
		}
	}
	return nil
}

// checkPaths checks a sorted list of unique repository paths a patch may
// hold (the rule of CheckPath).
func checkPaths(p string, paths []string) error {
	if len(paths) < 1 || len(paths) > MaxPatchFiles {
		return fmt.Errorf("%s: want 1 to %d paths, got %d", p, MaxPatchFiles, len(paths))
	}
	for i, path := range paths {
		if err := CheckPath(path); err != nil {
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

// MaxEventBytes bounds one event's payload in the journal.
const MaxEventBytes = 64 << 10

// EncodeEvent returns an event's journal form.
func EncodeEvent(ev Event) (kind EventKind, payload []byte, digest string) {
	payload = []byte(contentid.MustCanonical(ev))
	return ev.Kind(), payload, eventDigest(ev.Kind(), payload)
}

// EventDigest is the payload digest of an event: the content id
// of {"kind", "payload"} under the event tag.
func EventDigest(ev Event) string {
	return eventDigest(ev.Kind(), []byte(contentid.MustCanonical(ev)))
}

// eventDigest hashes the canonical JSON of {"kind": kind, "payload":
// payload} given the payload's canonical JSON: the keys in order, the kind
// an ASCII word that needs no escaping. It is what the content id of that
// object is (TestEventDigest holds them equal), without encoding
// the payload twice.
func eventDigest(kind EventKind, payload []byte) string {
	b := make([]byte, 0, len(payload)+len(kind)+24)
	b = append(b, `{"kind":"`...)
	b = append(b, kind...)
	b = append(b, `","payload":`...)
	b = append(b, payload...)
	b = append(b, '}')
	return contentid.OfBytes(tagEvent, b)
}

// DecodeEvent decodes an event from its journal form. The payload
// must be exactly the canonical JSON the encoder writes (so unknown or
// missing fields, duplicate keys, other spellings and trailing data are all
// refused) and valid on its own. Errors are KindInvalidInput.
func DecodeEvent(kind string, payload []byte) (Event, error) {
	k, ok := ParseEventKind(kind)
	if !ok {
		return nil, invalidf("lifecycle.event", "kind", "unknown event kind %q", safetext.Clip(kind, 80))
	}
	if len(payload) > MaxEventBytes {
		return nil, invalidf("lifecycle.event", "payload", "%d bytes; the limit is %d", len(payload), MaxEventBytes)
	}
	ev, err := eventDecoders[k](payload)
	if err != nil {
		return nil, invalidf("lifecycle.event", "payload", "%s: %v", k, err)
	}
	if err := ev.validate(); err != nil {
		return nil, invalidf("lifecycle.event", "payload", "%s: %v", k, err)
	}
	return ev, nil
}

var eventDecoders = map[EventKind]func([]byte) (Event, error){
	EventCreated:            decodeCanonical[Created],
	EventExploreCompleted:   decodeCanonical[ExploreCompleted],
	EventImplementCompleted: decodeCanonical[ImplementCompleted],
	EventTestCompleted:      decodeCanonical[TestCompleted],
	EventReviewCompleted:    decodeCanonical[ReviewCompleted],
	EventVerifyCompleted:    decodeCanonical[VerifyCompleted],
	EventPhaseFailed:        decodeCanonical[PhaseFailed],
	EventApprovalGranted:    decodeCanonical[ApprovalGranted],
	EventApplyStarted:       decodeCanonical[ApplyStarted],
	EventApplyConflicted:    decodeCanonical[ApplyConflicted],
	EventApplyCompleted:     decodeCanonical[ApplyCompleted],
	EventApplyRolledBack:    decodeCanonical[ApplyRolledBack],
	EventCancelRequested:    decodeCanonical[CancelRequested],
}

// decodeCanonical decodes data into a T and insists that data is the
// canonical encoding of what it decoded.
func decodeCanonical[T Event](data []byte) (Event, error) {
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
