package product

import (
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Bounds of a prepare_change request. Like the need bounds they are part of
// the MCP contract: the inputSchema advertises the same numbers.
const (
	// MaxChangeRequestBytes bounds a prepare_change request as JSON text.
	MaxChangeRequestBytes = 64 << 10
	// MaxCriteria bounds the acceptance criteria (at least one).
	MaxCriteria = lifecycle.MaxCriteria
	// MaxCriterionChars bounds one acceptance criterion (code points).
	MaxCriterionChars = 512
	// MaxScopes bounds the path scopes (at least one).
	MaxScopes = 16
	// MaxScopePathChars bounds one scope path (code points).
	MaxScopePathChars = lifecycle.MaxPathChars
	// MaxChangeRefs bounds artifact_ids and claim_ids each.
	MaxChangeRefs = 16
	// MaxConstraintNotes bounds constraints.notes; MaxNoteChars one note
	// (code points).
	MaxConstraintNotes = 4
	MaxNoteChars       = 256
	// MaxPatchFiles bounds the files one patch may touch (constraints.max_files
	// may lower it); MaxPatchBytes bounds the new content of one patch
	// (constraints.max_bytes may lower it).
	MaxPatchFiles = lifecycle.MaxPatchFiles
	MaxPatchBytes = lifecycle.MaxPatchBytes
)

// Scope kinds: an exact file path, or a directory subtree.
const (
	ScopeExact   = "exact"
	ScopeSubtree = "subtree"
)

// ChangeRequest is a prepare_change request as decoded.
type ChangeRequest struct {
	Task        string            `json:"task"`
	Criteria    []string          `json:"acceptance_criteria"`
	Scopes      []PathScope       `json:"scopes"`
	ArtifactIDs []string          `json:"artifact_ids"`
	ClaimIDs    []string          `json:"claim_ids"`
	Constraints ChangeConstraints `json:"constraints"`
}

// PathScope is one path the patch worker may write: a file (exact) or
// every file below a directory (subtree; "." is the whole repository).
type PathScope struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// ChangeConstraints bound a patch further; zero values take the maxima.
type ChangeConstraints struct {
	MaxFiles int      `json:"max_files"`
	MaxBytes int      `json:"max_bytes"`
	Notes    []string `json:"notes"`
}

// ChangeIDPattern is the syntax of an opaque change id.
var ChangeIDPattern = lifecycle.ChangeIDPattern

// inScope reports whether a repository path is one the scopes declare,
// comparing in NFC (the scopes are NFC already).
func inScope(scopes []PathScope, p string) bool {
	p = norm.NFC.String(p)
	for _, s := range scopes {
		switch {
		case s.Kind == ScopeExact && s.Path == p:
			return true
		case s.Kind == ScopeSubtree && (s.Path == "." || strings.HasPrefix(p, s.Path+"/")):
			return true
		}
	}
	return false
}

// The states of a change, each with its valid values in one place.

// ChangeStatus is the state of a change (changes.status): what
// prepare_change made of it, then what its newest verification said.
type ChangeStatus string

const (
	ChangePrepared             ChangeStatus = "prepared"              // a patch was built, not yet verified
	ChangeRejected             ChangeStatus = "rejected"              // the patch broke a rule: no patch
	ChangeFailed               ChangeStatus = "failed"                // the patch worker failed: no patch
	ChangeVerified             ChangeStatus = "verified"              // the verifier found every criterion met
	ChangeVerificationRejected ChangeStatus = "verification_rejected" // the verifier rejected the approach
	ChangeRepairable           ChangeStatus = "repairable"            // a small fix would meet the criteria
	ChangeInconclusive         ChangeStatus = "inconclusive"          // the verifier could not tell
)

// prepareStatuses are the statuses prepare_change answers with.
var prepareStatuses = []ChangeStatus{ChangePrepared, ChangeRejected, ChangeFailed}

// verdictStatus is the status a change takes from the verdict.
func verdictStatus(v lifecycle.Verdict) ChangeStatus {
	switch v {
	case lifecycle.VerdictVerified:
		return ChangeVerified
	case lifecycle.VerdictRejected:
		return ChangeVerificationRejected
	case lifecycle.VerdictRepairable:
		return ChangeRepairable
	}
	return ChangeInconclusive
}

// CoverageStatus is what the patch worker said of one acceptance criterion.
type CoverageStatus string

const (
	CoverageClaimed      CoverageStatus = "claimed"       // the worker says it addressed the criterion
	CoverageNotAddressed CoverageStatus = "not_addressed" // the worker says it did not
	CoverageUnreported   CoverageStatus = "unreported"    // the worker's report does not say
)

var allCoverageStatuses = []CoverageStatus{CoverageClaimed, CoverageNotAddressed, CoverageUnreported}

// RepairStatus says what happened to the one repair a change may use.
type RepairStatus string

const (
	RepairNotNeeded RepairStatus = "not_needed" // no repairable verdict
	RepairApplied   RepairStatus = "applied"    // a repair patch was built and verified again
	RepairRejected  RepairStatus = "rejected"   // the repair patch was refused: the first verdict stands
	RepairFailed    RepairStatus = "failed"     // the repair worker failed: the first verdict stands
	RepairExhausted RepairStatus = "exhausted"  // repairable again after the repair: no second one
)

var allRepairStatuses = []RepairStatus{RepairNotNeeded, RepairApplied, RepairRejected, RepairFailed, RepairExhausted}

// PatchStatus is the fate of one patch worker run (patches.status).
type PatchStatus string

const (
	PatchAccepted PatchStatus = "accepted" // Needle built a patch within every rule
	PatchRejected PatchStatus = "rejected" // the change broke a rule: no patch
	PatchFailed   PatchStatus = "failed"   // the worker failed: no patch
)

// changeStatus is the status a change takes from its first patch run.
func (s PatchStatus) changeStatus() ChangeStatus {
	switch s {
	case PatchAccepted:
		return ChangePrepared
	case PatchRejected:
		return ChangeRejected
	}
	return ChangeFailed
}

// repairStatus is what a repair whose patch run ended so amounts to.
func (s PatchStatus) repairStatus() RepairStatus {
	switch s {
	case PatchAccepted:
		return RepairApplied
	case PatchRejected:
		return RepairRejected
	}
	return RepairFailed
}

// PatchOp is what a patch does to one file.
type PatchOp string

const (
	PatchAdd    PatchOp = checkout.OpAdd
	PatchModify PatchOp = checkout.OpModify
	PatchDelete PatchOp = checkout.OpDelete
)

var allPatchOps = []PatchOp{PatchAdd, PatchModify, PatchDelete}

// PatchOperation is one file operation of a patch. Before and After are
// content digests ("" for an absent file); the full new content is kept in
// SQLite, never returned.
type PatchOperation struct {
	Op         PatchOp `json:"op"`
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

// CriterionCoverage is what the patch worker reported for one acceptance
// criterion: a claim, checked only by verify_change.
type CriterionCoverage struct {
	Criterion int            `json:"criterion"`
	Status    CoverageStatus `json:"status"`
	Note      string         `json:"note"`
}

// ChangeAccounting is the bounded accounting of one call.
type ChangeAccounting struct {
	WorkerRuns   int     `json:"worker_runs"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	LatencyMs    float64 `json:"latency_ms"`
	Files        int     `json:"files"`
	Bytes        int     `json:"bytes"`
}

func (a *ChangeAccounting) add(u WorkerUsage) {
	a.WorkerRuns++
	a.InputTokens += u.InputTokens
	a.OutputTokens += u.OutputTokens
	a.TotalTokens += u.TotalTokens
	a.LatencyMs += u.LatencyMs
}

// ChangeResult is the result of prepare_change.
type ChangeResult struct {
	ChangeID           string              `json:"change_id"`
	Status             ChangeStatus        `json:"status"` // prepared | rejected | failed
	PatchID            string              `json:"patch_id"`
	Revision           int                 `json:"revision"`
	Operations         []PatchOperation    `json:"operations"`
	Acceptance         []CriterionCoverage `json:"acceptance"`
	Accounting         ChangeAccounting    `json:"accounting"`
	ResidualRisks      []string            `json:"residual_risks"`
	Reasons            []string            `json:"reasons"`
	VerificationStatus string              `json:"verification_status"`
	Context            string              `json:"context"`
}

// RepairOutcome says what happened to the one repair a change may use.
type RepairOutcome struct {
	Status      RepairStatus `json:"status"`
	FromPatchID string       `json:"from_patch_id"`
	Reasons     []string     `json:"reasons"`
}

// VerifyResult is the result of verify_change.
type VerifyResult struct {
	ChangeID           string             `json:"change_id"`
	PatchID            string             `json:"patch_id"`
	Revision           int                `json:"revision"`
	Verdict            lifecycle.Verdict  `json:"verdict"`
	Criteria           []CriterionVerdict `json:"criteria"`
	Operations         []PatchOperation   `json:"operations"`
	Repair             RepairOutcome      `json:"repair"`
	RepairAvailable    bool               `json:"repair_available"`
	Recorded           bool               `json:"recorded"` // the stored verdict, no worker ran
	Accounting         ChangeAccounting   `json:"accounting"`
	ResidualRisks      []string           `json:"residual_risks"`
	Reasons            []string           `json:"reasons"`
	VerificationStatus lifecycle.Verdict  `json:"verification_status"`
	Context            string             `json:"context"`
}

// CriterionVerdict is a verifier's judgement of one acceptance criterion.
type CriterionVerdict struct {
	Criterion int                       `json:"criterion"`
	Status    lifecycle.CriterionStatus `json:"status"`
	Reason    string                    `json:"reason"`
}
