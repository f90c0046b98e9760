package product

import (
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Bounds of a prepare_change request. Like the need bounds they are part of
// the MCP contract: the inputSchema advertises the same numbers. As JSON
// text a request is bounded as a need is (maxRequestBytes, parseJSONTree).
const (
	// maxCriteria bounds the acceptance criteria (at least one).
	maxCriteria = lifecycle.MaxCriteria
	// maxCriterionChars bounds one acceptance criterion (code points).
	maxCriterionChars = 512
	// maxScopes bounds the path scopes (at least one).
	maxScopes = 16
	// maxScopePathChars bounds one scope path (code points).
	maxScopePathChars = lifecycle.MaxPathChars
	// maxChangeRefs bounds artifact_ids and claim_ids each.
	maxChangeRefs = 16
	// maxConstraintNotes bounds constraints.notes; maxNoteChars one note
	// (code points).
	maxConstraintNotes = 4
	maxNoteChars       = 256
	// maxPatchFiles bounds the files one patch may touch (constraints.max_files
	// may lower it); maxPatchBytes bounds the new content of one patch
	// (constraints.max_bytes may lower it).
	maxPatchFiles = lifecycle.MaxPatchFiles
	maxPatchBytes = lifecycle.MaxPatchBytes
)

// Scope kinds: an exact file path, or a directory subtree.
const (
	scopeExact   = "exact"
	scopeSubtree = "subtree"
)

// changeRequest is a prepare_change request as decoded.
type changeRequest struct {
	Task        string            `json:"task"`
	Criteria    []string          `json:"acceptance_criteria"`
	Scopes      []pathScope       `json:"scopes"`
	ArtifactIDs []string          `json:"artifact_ids"`
	ClaimIDs    []string          `json:"claim_ids"`
	Constraints changeConstraints `json:"constraints"`
}

// pathScope is one path the patch worker may write: a file (exact) or
// every file below a directory (subtree; "." is the whole repository).
type pathScope struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// changeConstraints bound a patch further; zero values take the maxima.
type changeConstraints struct {
	MaxFiles int      `json:"max_files"`
	MaxBytes int      `json:"max_bytes"`
	Notes    []string `json:"notes"`
}

// changeIDPattern is the syntax of an opaque change id.
var changeIDPattern = lifecycle.ChangeIDPattern

// inScope reports whether a repository path is one the scopes declare,
// comparing in NFC (the scopes are NFC already).
func inScope(scopes []pathScope, p string) bool {
	p = norm.NFC.String(p)
	for _, s := range scopes {
		switch {
		case s.Kind == scopeExact && s.Path == p:
			return true
		case s.Kind == scopeSubtree && (s.Path == "." || strings.HasPrefix(p, s.Path+"/")):
			return true
		}
	}
	return false
}

// The states of a change, each with its valid values in one place.

// changeStatus is the state of a change (changes.status): what
// prepare_change made of it, then what its newest verification said.
type changeStatus string

const (
	ChangePrepared             changeStatus = "prepared"              // a patch was built, not yet verified
	changeRejected             changeStatus = "rejected"              // the patch broke a rule: no patch
	changeFailed               changeStatus = "failed"                // the patch worker failed: no patch
	changeVerified             changeStatus = "verified"              // the verifier found every criterion met
	changeVerificationRejected changeStatus = "verification_rejected" // the verifier rejected the approach
	changeRepairable           changeStatus = "repairable"            // a small fix would meet the criteria
	changeInconclusive         changeStatus = "inconclusive"          // the verifier could not tell
)

// prepareStatuses are the statuses prepare_change answers with.
var prepareStatuses = []changeStatus{ChangePrepared, changeRejected, changeFailed}

// verdictStatus is the status a change takes from the verdict.
func verdictStatus(v lifecycle.Verdict) changeStatus {
	switch v {
	case lifecycle.VerdictVerified:
		return changeVerified
	case lifecycle.VerdictRejected:
		return changeVerificationRejected
	case lifecycle.VerdictRepairable:
		return changeRepairable
	}
	return changeInconclusive
}

// coverageStatus is what the patch worker said of one acceptance criterion.
type coverageStatus string

const (
	coverageClaimed      coverageStatus = "claimed"       // the worker says it addressed the criterion
	coverageNotAddressed coverageStatus = "not_addressed" // the worker says it did not
	coverageUnreported   coverageStatus = "unreported"    // the worker's report does not say
)

var allCoverageStatuses = []coverageStatus{coverageClaimed, coverageNotAddressed, coverageUnreported}

// repairStatus says what happened to the one repair a change may use.
type repairStatus string

const (
	repairNotNeeded repairStatus = "not_needed" // no repairable verdict
	repairApplied   repairStatus = "applied"    // a repair patch was built and verified again
	repairRejected  repairStatus = "rejected"   // the repair patch was refused: the first verdict stands
	repairFailed    repairStatus = "failed"     // the repair worker failed: the first verdict stands
	repairExhausted repairStatus = "exhausted"  // repairable again after the repair: no second one
)

var allRepairStatuses = []repairStatus{repairNotNeeded, repairApplied, repairRejected, repairFailed, repairExhausted}

// patchStatus is the fate of one patch worker run (patches.status).
type patchStatus string

const (
	patchAccepted patchStatus = "accepted" // Needle built a patch within every rule
	patchRejected patchStatus = "rejected" // the change broke a rule: no patch
	patchFailed   patchStatus = "failed"   // the worker failed: no patch
)

// changeStatus is the status a change takes from its first patch run.
func (s patchStatus) changeStatus() changeStatus {
	switch s {
	case patchAccepted:
		return ChangePrepared
	case patchRejected:
		return changeRejected
	}
	return changeFailed
}

// repairStatus is what a repair whose patch run ended so amounts to.
func (s patchStatus) repairStatus() repairStatus {
	switch s {
	case patchAccepted:
		return repairApplied
	case patchRejected:
		return repairRejected
	}
	return repairFailed
}

// patchOp is what a patch does to one file.
type patchOp string

const (
	patchAdd    patchOp = checkout.OpAdd
	patchModify patchOp = checkout.OpModify
	patchDelete patchOp = checkout.OpDelete
)

var allPatchOps = []patchOp{patchAdd, patchModify, patchDelete}

// PatchOperation is one file operation of a patch. Before and After are
// content digests ("" for an absent file); the full new content is kept in
// SQLite, never returned.
type PatchOperation struct {
	Op         patchOp `json:"op"`
	Path       string  `json:"path"`
	Before     string  `json:"before"`
	After      string  `json:"after"`
	Executable bool    `json:"executable"`
	Bytes      int     `json:"bytes"` // size of the new content
}

// storedOperation is a PatchOperation with its blob, as stored.
type storedOperation struct {
	PatchOperation
	Content string `json:"content"`
}

// criterionCoverage is what the patch worker reported for one acceptance
// criterion: a claim, checked only by verify_change.
type criterionCoverage struct {
	Criterion int            `json:"criterion"`
	Status    coverageStatus `json:"status"`
	Note      string         `json:"note"`
}

// changeAccounting is the bounded accounting of one call.
type changeAccounting struct {
	WorkerRuns   int     `json:"worker_runs"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	LatencyMs    float64 `json:"latency_ms"`
	Files        int     `json:"files"`
	Bytes        int     `json:"bytes"`
}

func (a *changeAccounting) add(u workerUsage) {
	a.WorkerRuns++
	a.InputTokens += u.InputTokens
	a.OutputTokens += u.OutputTokens
	a.TotalTokens += u.TotalTokens
	a.LatencyMs += u.LatencyMs
}

// changeResult is the result of prepare_change.
type changeResult struct {
	ChangeID           string              `json:"change_id"`
	Status             changeStatus        `json:"status"` // prepared | rejected | failed
	PatchID            string              `json:"patch_id"`
	Revision           int                 `json:"revision"`
	Operations         []PatchOperation    `json:"operations"`
	Acceptance         []criterionCoverage `json:"acceptance"`
	Accounting         changeAccounting    `json:"accounting"`
	ResidualRisks      []string            `json:"residual_risks"`
	Reasons            []string            `json:"reasons"`
	VerificationStatus string              `json:"verification_status"`
	Context            string              `json:"context"`
}

// repairOutcome says what happened to the one repair a change may use.
type repairOutcome struct {
	Status      repairStatus `json:"status"`
	FromPatchID string       `json:"from_patch_id"`
	Reasons     []string     `json:"reasons"`
}

// verifyResult is the result of verify_change.
type verifyResult struct {
	ChangeID           string             `json:"change_id"`
	PatchID            string             `json:"patch_id"`
	Revision           int                `json:"revision"`
	Verdict            lifecycle.Verdict  `json:"verdict"`
	Criteria           []criterionVerdict `json:"criteria"`
	Operations         []PatchOperation   `json:"operations"`
	Repair             repairOutcome      `json:"repair"`
	RepairAvailable    bool               `json:"repair_available"`
	Recorded           bool               `json:"recorded"` // the stored verdict, no worker ran
	Tests              []changeTest       `json:"tests"`    // the certified tests run on the patch in force
	Lifecycle          string             `json:"lifecycle_id"`
	Status             string             `json:"status"` // where the lifecycle is now (phase/status)
	Accounting         changeAccounting   `json:"accounting"`
	ResidualRisks      []string           `json:"residual_risks"`
	Reasons            []string           `json:"reasons"`
	VerificationStatus lifecycle.Verdict  `json:"verification_status"`
	Context            string             `json:"context"`
}

// changeTest is one certified test's outcome on the patch in force.
type changeTest struct {
	Test       string                `json:"test"`
	Command    string                `json:"command"`
	Outcome    lifecycle.TestOutcome `json:"outcome"`
	DurationMs int64                 `json:"duration_ms"`
}

// criterionVerdict is a verifier's judgement of one acceptance criterion.
type criterionVerdict struct {
	Criterion int                       `json:"criterion"`
	Status    lifecycle.CriterionStatus `json:"status"`
	Reason    string                    `json:"reason"`
}
