package web

import "time"

// This file is the versioned JSON contract between the resident runtime
// and the UI (and any API client): the DTOs of /api/v1, which the runtime's
// handlers (product/runtime_api*.go) fill in by hand; the UI's src/api.ts
// mirrors it field for field (api_test.go holds them together).
//
// Every DTO is an explicit projection. None may carry a raw store record,
// a host-local (absolute) path, a transcript, a credential or raw model
// output: paths are repository-relative, plain text fields are bounded
// summaries written by Needle, and ids are content addresses or opaque ids.
// Free text a worker (a model) wrote is never a plain string: it travels
// as a WorkerText, labelled unverified, which the UI shows as the worker's
// words, as the CLI and MCP do ("worker's description (unverified)").
//
// Routes (all under the guard: bearer token or session cookie; POSTs need
// the server's Origin and application/json):
//
//	GET  /api/v1/status                               Status
//	GET  /api/v1/needs?limit=&cursor=                 Page[ResolutionSummary]   newest first
//	GET  /api/v1/evidence/{artifact_id}               EvidenceDetail            freshness checked now
//	GET  /api/v1/accounting                           Accounting
//	GET  /api/v1/lifecycles?limit=&cursor=            Page[LifecycleSummary]    most recently updated first
//	GET  /api/v1/lifecycles/{id}                      LifecycleDetail           journal replayed first
//	                                                  ({id}: lcy_… or its change's chg_…)
//	GET  /api/v1/lifecycles/{id}/events?after=&limit= Page[lifecycle.Event]      ascending seq
//	POST /api/v1/lifecycles/{id}/approvals            ApprovalRequest → 201 Approval | 409 Error(conflict)
//	POST /api/v1/lifecycles/{id}/apply                ApplyRequest → 200 ApplyResult | 409 Error(conflict)
//	POST /api/v1/lifecycles/{id}/cancel               CancelRequest → 200 LifecycleDetail
//	POST /api/v1/logout                               204
//	GET  /api/v1/events?last_event_id=               text/event-stream (see StreamEvent types)
//	GET  /login?code=                                 303 to / with the session cookie; an unknown,
//	                                                  used or expired code is an HTML page (403)
//
// Errors are Error bodies with the HTTP status of their kind: 400
// invalid_input, 401 unauthorized, 403 forbidden_origin, 404 not_found,
// 409 conflict, 415 unsupported_media_type, 421 bad_host, 500 internal
// (message "internal error"; details only in the log), 500 integrity (a
// stored record does not match its content address; the message names
// it), 503 unavailable.

// Page bounds of every list route.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
	// MaxTextBytes bounds every free-text field (task, summaries).
	MaxTextBytes = 512
)

// Page is one bounded page of a list, newest first unless the route says
// otherwise. NextCursor, opaque, fetches the next page; empty at the end.
// EventID is the event stream's id as of just before the page was read:
// a client that opens /api/v1/events?last_event_id=EventID misses nothing
// (it may see an event for something the page already shows; events are
// applied idempotently by id).
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
	EventID    string `json:"event_id"`
}

// Error is the body of every error response.
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong; Conflict is set with status 409.
type ErrorDetail struct {
	Kind     string    `json:"kind"`
	Message  string    `json:"message"`
	Conflict *Conflict `json:"conflict,omitempty"`
}

// Conflict explains a 409: the approval's digests are not the change's
// current ones (digest_mismatch), the work tree drifted from the patch's
// base (work_tree_drift), the lifecycle is not awaiting approval, or not
// approved with this approval (wrong_phase), or it moved on meanwhile
// (moved).
type Conflict struct {
	Reason   string          `json:"reason"`
	Expected ApprovalDigests `json:"expected"`
	Actual   ApprovalDigests `json:"actual"`
	// Paths are the repository-relative paths that drifted (bounded).
	Paths []string `json:"paths"`
}

// Status describes the runtime.
type Status struct {
	Version   string    `json:"version"`
	Schema    int       `json:"schema"`
	StartedAt time.Time `json:"started_at"`
	EventID   string    `json:"event_id"`
	// CommandsServed counts the commands (need resolve, mcp serve, …) the
	// runtime ran for local clients over its IPC socket.
	CommandsServed int64 `json:"commands_served"`
}

// Subject is what a need is about.
type Subject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ResolutionSummary is one entry of the need feed.
type ResolutionSummary struct {
	ResolutionID int64     `json:"resolution_id"`
	At           time.Time `json:"at"`
	NeedID       string    `json:"need_id"`
	Route        string    `json:"route"`
	Subject      Subject   `json:"subject"`
	// Kind is the resolution kind (exact_hit … bypass); Hit is true for
	// the kinds answered from certified evidence without a worker.
	Kind          string   `json:"kind"`
	Hit           bool     `json:"hit"`
	WorkerSpawned bool     `json:"worker_spawned"`
	TokensSpent   int64    `json:"tokens_spent"`
	TokensSaved   int64    `json:"tokens_saved"`
	LatencyMS     float64  `json:"latency_ms"`
	CertificateID string   `json:"certificate_id,omitempty"`
	ArtifactIDs   []string `json:"artifact_ids"`
}

// EvidenceDetail is one artifact with its certificate, dependencies and
// their freshness, checked against the current source when requested.
type EvidenceDetail struct {
	Artifact     Artifact     `json:"artifact"`
	Certificate  *Certificate `json:"certificate,omitempty"`
	Dependencies []Dependency `json:"dependencies"`
	Freshness    Freshness    `json:"freshness"`
	EventID      string       `json:"event_id"`
}

// Artifact is a typed piece of evidence, projected: its locations, flow
// steps and tests as the validators certified them, never the worker's
// raw output.
type Artifact struct {
	ArtifactID string     `json:"artifact_id"`
	Kind       string     `json:"kind"`
	Subject    Subject    `json:"subject"`
	Status     string     `json:"status"` // certified, or superseded (a proof replay moved it to a newer artifact)
	Locations  []Location `json:"locations"`
	Steps      []FlowStep `json:"steps"`
	Tests      []TestRef  `json:"tests"`
	// Reasons are the validator's rejection reasons (rejected only; a
	// stored artifact is always certified, so empty).
	Reasons []string `json:"reasons"`
}

// Location is a repository-relative span.
type Location struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Symbol    string `json:"symbol,omitempty"`
}

// FlowStep is one step of a runtime flow. Its location is certified; what
// the step does is the proposer's description, never checked.
type FlowStep struct {
	Ordinal  int      `json:"ordinal"`
	Location Location `json:"location"`
	// Description is what the worker (or operator) that proposed the flow
	// said the step does: unverified.
	Description WorkerText `json:"description"`
}

// WorkerText is free text a worker wrote — a model, or an operator's
// proposal — that no validator checked: shown for what it is, never as a
// finding of Needle's. Text is bounded to MaxTextBytes with control
// characters blanked; Unverified is always true and Source names the
// writer (SourceWorker).
type WorkerText struct {
	Text       string `json:"text"`
	Unverified bool   `json:"unverified"`
	Source     string `json:"source"`
}

// SourceWorker is the Source of text a worker wrote.
const SourceWorker = "worker"

// TestRef is one focused test; Command is derived by Needle.
type TestRef struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	Path    string `json:"path"`
	Command string `json:"command"`
}

// Certificate binds an artifact to the obligations it satisfies.
type Certificate struct {
	CertificateID    string    `json:"certificate_id"`
	ValidatorVersion string    `json:"validator_version"`
	Obligations      []string  `json:"obligations"`
	CreatedAt        time.Time `json:"created_at"`
}

// Dependency is one file or directory listing the evidence depends on and
// its state now: fresh, changed (proof replay may still hold) or missing.
type Dependency struct {
	Kind   string `json:"kind"` // file or dir
	Path   string `json:"path"`
	Digest string `json:"digest"`
	State  string `json:"state"`
}

// Freshness is the verdict on the whole artifact now: fresh (every
// dependency unchanged), replayable (a dependency changed but the cited
// text is intact and re-validates, so the next use re-certifies it at its
// new lines) or stale (never served).
type Freshness struct {
	State     string    `json:"state"`
	CheckedAt time.Time `json:"checked_at"`
	Changed   int       `json:"changed"`
}

// Accounting are the totals over every resolution, and a series for the
// charts (hit rate and tokens saved over time).
type Accounting struct {
	Resolutions    int64             `json:"resolutions"`
	Hits           int64             `json:"hits"`
	HitRate        float64           `json:"hit_rate"`
	WorkerRuns     int64             `json:"worker_runs"`
	TokensSpent    int64             `json:"tokens_spent"`
	TokensSaved    int64             `json:"tokens_saved"`
	TokensBaseline int64             `json:"tokens_baseline"`
	ByKind         map[string]int64  `json:"by_kind"`
	Series         []AccountingPoint `json:"series"`
	EventID        string            `json:"event_id"`
}

// AccountingPoint is one bucket of the series (bounded: at most 200
// equal buckets from the first resolution to the last): the resolutions,
// hits and tokens of that bucket alone, not running totals.
type AccountingPoint struct {
	At          time.Time `json:"at"`
	Resolutions int64     `json:"resolutions"`
	Hits        int64     `json:"hits"`
	TokensSpent int64     `json:"tokens_spent"`
	TokensSaved int64     `json:"tokens_saved"`
}

// LifecycleSummary is one change lifecycle in the list.
type LifecycleSummary struct {
	LifecycleID string `json:"lifecycle_id"` // lcy_…
	ChangeID    string `json:"change_id"`    // chg_…
	Task        string `json:"task"`         // bounded to MaxTextBytes
	Phase       string `json:"phase"`        // explore implement test review verify apply
	// Status is running, awaiting_approval, approved or applying, or
	// terminal: applied, rejected, inconclusive, failed, cancelled (with
	// Reason); or corrupt: the lifecycle's stored records do not check
	// (Corrupt says what), and its detail, approval and apply answer the
	// integrity error.
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	Round       int       `json:"round"` // 2 after the one repair
	UpdatedAt   time.Time `json:"updated_at"`
	Events      int       `json:"events"` // journal length (the state's seq)
	StateDigest string    `json:"state_digest"`
	// Corrupt is set with status corrupt: what does not check, bounded to
	// MaxTextBytes (ids and digests only).
	Corrupt string `json:"corrupt,omitempty"`
}

// LifecycleDetail is one lifecycle, replayed and checked from its journal
// when requested.
type LifecycleDetail struct {
	Summary LifecycleSummary `json:"summary"`
	Phases  []PhaseState     `json:"phases"`
	// Criteria are the acceptance criteria by digest, in order.
	Criteria []string `json:"criteria"`
	// Acceptance are the same criteria as the user wrote them, each with
	// the verifier's verdict and reason once verified.
	Acceptance []AcceptanceCriterion `json:"acceptance"`
	Tests      []TestOutcome         `json:"tests"`
	Patch      *Patch                `json:"patch,omitempty"`
	// Diff is the patch as a unified diff Needle computed from the stored
	// patch against its base (needle change diff), with the patch.
	Diff         *Diff         `json:"diff,omitempty"`
	Review       *Review       `json:"review,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
	// Approval is what the user would approve now: the three digests the
	// approval binds, shown verbatim before the user approves; and the
	// approval once given.
	Approval ApprovalState `json:"approval"`
	Apply    *ApplyState   `json:"apply,omitempty"`
	EventID  string        `json:"event_id"`
}

// PhaseState is one phase of the fixed order and where it stands.
type PhaseState struct {
	Phase  string `json:"phase"`
	Status string `json:"status"` // pending active done failed skipped
}

// TestOutcome is one frozen test plan and how the current patch fared.
type TestOutcome struct {
	Test       string `json:"test"`
	Command    string `json:"command"`
	Outcome    string `json:"outcome"` // passed failed error, or "" before the test phase
	DurationMS int64  `json:"duration_ms"`
}

// Patch is the change's current patch, projected.
type Patch struct {
	PatchID  string      `json:"patch_id"`
	Revision int         `json:"revision"`
	Files    []PatchFile `json:"files"`
}

// PatchFile is one file the patch touches.
type PatchFile struct {
	Path  string `json:"path"`
	Op    string `json:"op"`    // add modify delete
	Bytes int    `json:"bytes"` // size of the new content
}

// AcceptanceCriterion is one acceptance criterion: its text as the user
// wrote it (bounded to MaxTextBytes), its digest, and the verifier's
// status of it (met, unmet, unknown; "" before verification) with the
// verifier's reason, model text.
type AcceptanceCriterion struct {
	Ordinal int        `json:"ordinal"` // 1-based
	Digest  string     `json:"digest"`
	Text    string     `json:"text"`
	Status  string     `json:"status"`
	Reason  WorkerText `json:"reason"`
}

// Diff is a patch as unified diff lines, in order. It is bounded to
// MaxDiffBytes of line text; Truncated says lines were left out. Error,
// set instead of lines, says why Needle could not compute it (the base
// is neither in the work tree nor at HEAD).
type Diff struct {
	Lines     []DiffLine `json:"lines"`
	Truncated bool       `json:"truncated"`
	Error     string     `json:"error,omitempty"`
}

// MaxDiffBytes bounds a Diff's line text.
const MaxDiffBytes = 512 << 10

// DiffLine is one line of a diff. Kind is file (a "diff --git" header,
// Path set), meta (mode, ---, +++), hunk (@@), add, del or context; Text
// is the line without its marker character for add, del and context, with
// tabs kept and other control characters blanked.
type DiffLine struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Path string `json:"path,omitempty"`
}

// Review is the reviewer's advisory review of the patch: its findings are
// model text.
type Review struct {
	ReviewID string    `json:"review_id"`
	Findings []Finding `json:"findings"`
}

// Finding is one review finding: its severity (info, minor, major), the
// 1-based criterion it concerns (0: the patch as a whole), and what the
// reviewer wrote, unverified.
type Finding struct {
	Severity  string     `json:"severity"`
	Criterion int        `json:"criterion"`
	Summary   WorkerText `json:"summary"`
}

// Verification is the independent verifier's verdict on the patch.
type Verification struct {
	VerificationID string      `json:"verification_id"`
	Verdict        string      `json:"verdict"` // verified rejected repairable inconclusive
	Criteria       []Criterion `json:"criteria"`
}

// Criterion is one acceptance criterion by digest and the verifier's
// judgement of it (met, unmet, unknown) with its reason, model text.
type Criterion struct {
	Digest string     `json:"digest"`
	Status string     `json:"status"`
	Reason WorkerText `json:"reason"`
}

// ApprovalState says whether an approval is possible now, with what, and
// the approval once given.
type ApprovalState struct {
	Awaiting bool            `json:"awaiting"`
	Digests  ApprovalDigests `json:"digests"`
	Approval *Approval       `json:"approval,omitempty"`
}

// ApprovalDigests are the three digests an approval binds.
type ApprovalDigests struct {
	Patch        string `json:"patch"`
	Verification string `json:"verification"`
	Lifecycle    string `json:"lifecycle"`
}

// ApprovalRequest is the body of POST …/approvals: the digests the user
// saw. Any that is not current is a 409 digest_mismatch.
type ApprovalRequest struct {
	Digests ApprovalDigests `json:"digests"`
}

// Approval is a recorded approval.
type Approval struct {
	ApprovalID string          `json:"approval_id"`
	ChangeID   string          `json:"change_id"`
	Digests    ApprovalDigests `json:"digests"`
	ApprovedAt time.Time       `json:"approved_at"`
}

// CancelRequest is the body of POST …/cancel: why (optional, at most
// MaxTextBytes), recorded in the journal. The lifecycle has no reject
// verb: the UI's Reject is a cancel whose note says so. The answer is the cancelled lifecycle's LifecycleDetail,
// given once the work in flight is interrupted and cleaned up.
type CancelRequest struct {
	Note string `json:"note"`
}

// ApplyRequest is the body of POST …/apply: the approval to apply.
type ApplyRequest struct {
	ApprovalID string `json:"approval_id"`
}

// ApplyResult reports an apply that wrote the patch to the work tree. A
// repeated apply of an applied lifecycle answers the same: the first
// apply's outcome and AppliedAt.
type ApplyResult struct {
	ChangeID  string    `json:"change_id"`
	PatchID   string    `json:"patch_id"`
	Files     int       `json:"files"`
	AppliedAt time.Time `json:"applied_at"`
	// Notes report changes since the snapshot the proof did not depend on
	// (HEAD moved, other files), which the apply allowed; bounded text
	// with ids only. Only the apply that wrote gives them.
	Notes []string `json:"notes,omitempty"`
}

// ApplyState is the newest apply of the change, from its journal: done,
// rolled_back (with the cause: drift, crash_recovered, io) or intent (one
// in flight, or a crashed one awaiting recovery), and its paths.
type ApplyState struct {
	Status string   `json:"status"`
	Cause  string   `json:"cause,omitempty"`
	Paths  []string `json:"paths"`
}

// lifecycle.Event is one entry of a lifecycle's journal, in seq order,
// with the phase and status it left the lifecycle in.
type LifecycleEvent struct {
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // created explore_completed … apply_completed
	Phase   string    `json:"phase"`
	Status  string    `json:"status"`
	Summary string    `json:"summary"` // bounded, written by Needle: ids, counts, outcomes
	// Detail is a failed phase's failure as its worker run reported it
	// (the App Server's message, or why the worker's answer was refused,
	// which may quote it): unverified. Absent for other events.
	Detail        *WorkerText `json:"detail,omitempty"`
	PayloadDigest string      `json:"payload_digest"`
	StateDigest   string      `json:"state_digest"`
}

// Event stream types (GET /api/v1/events). Data is the JSON of:
//
//	resolution  ResolutionSummary   a need was resolved
//	lifecycle   LifecycleChange     a lifecycle moved
//	accounting  Accounting          totals changed (series omitted)
//	reset       {"reason": "…"}     resume impossible: reload state
const (
	EventResolution = "resolution"
	EventLifecycle  = "lifecycle"
	EventAccounting = "accounting"
)

// LifecycleChange is the data of a lifecycle event.
type LifecycleChange struct {
	Summary LifecycleSummary `json:"summary"`
	Event   LifecycleEvent   `json:"event"`
}
