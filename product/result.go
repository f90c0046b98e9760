package product

// NeedResult is the structured result of need_context (its outputSchema is
// needContextOutputSchema). Context is the FrontierView text.
type NeedResult struct {
	Status        ResultStatus     `json:"status"`
	Route         Route            `json:"route"`
	Subject       Subject          `json:"subject"`
	NeedID        string           `json:"need_id"`
	Step          StepInfo         `json:"step"`
	Satisfied     []CapabilityKind `json:"satisfied"`
	Missing       []CapabilityKind `json:"missing"`
	Resolution    Resolution       `json:"resolution"`
	ReuseUnit     ReuseUnit        `json:"reuse_unit"`
	ClaimIDs      []string         `json:"claim_ids"`
	CacheHit      bool             `json:"cache_hit"`
	WorkerSpawned bool             `json:"worker_spawned"`
	ResultDigest  string           `json:"result_digest"`
	Context       string           `json:"context"`
	// Failure says what failed when an operational failure, not a
	// decision, left the result short. It is not part of the wire result
	// (nor of result_digest): the context says it to the main model.
	Failure Failure `json:"-"`
	// Replays counts the pieces of evidence this resolution re-proved by
	// proof replay (a dependency had changed). Like Failure it is not part
	// of the wire result nor of result_digest; benchmarks tell replayed
	// hits from exact ones by it.
	Replays int `json:"-"`
}

// ResultStatus is what the main model acts on.
type ResultStatus string

const (
	ResultHit     ResultStatus = "hit"     // answered from certified evidence
	ResultPartial ResultStatus = "partial" // some obligations answered, some missing
	ResultWorker  ResultStatus = "worker"  // a worker answered what evidence could not
	ResultBypass  ResultStatus = "bypass"  // no reusable answer: do the work natively
)

var allResultStatuses = []ResultStatus{ResultHit, ResultPartial, ResultWorker, ResultBypass}

// ReuseUnit is what a result reuses: whole artifacts, claims drawn from
// them, or nothing.
type ReuseUnit string

const (
	ReuseArtifact ReuseUnit = "artifact"
	ReuseClaim    ReuseUnit = "claim"
	ReuseNone     ReuseUnit = "none"
)

var allReuseUnits = []ReuseUnit{ReuseArtifact, ReuseClaim, ReuseNone}

// FailureReason classifies an operational failure behind a result.
type FailureReason string

const (
	FailureNone          FailureReason = ""                        // nothing failed
	FailureWorker        FailureReason = "worker_failed"           // the worker run returned an error
	FailureWorkerNothing FailureReason = "worker_proposed_nothing" // the worker ran but proposed nothing for a need without evidence
	FailureUndecided     FailureReason = "undecided"               // the worker's proposal could not be decided here (it is kept and tried again)
)

// Failure is an operational failure behind a result: its reason and, for
// a log, the error.
type Failure struct {
	Reason FailureReason
	Detail string
}

// StepInfo places a need in its session ledger.
type StepInfo struct {
	Ordinal  int      `json:"ordinal"`
	Relation Relation `json:"relation"`
}

// Resolution is the tagged outcome with the ids that back it. Undecided
// names, for proposals the validators could neither certify nor reject
// here, what their proof needs (a dependency missing from the module
// cache, a working sandbox, a toolchain, a run within its deadline): such
// a proposal is no rejection; it is kept and tried again.
type Resolution struct {
	Kind          ResolutionKind `json:"kind"`
	ArtifactIDs   []string       `json:"artifact_ids"`
	CertificateID string         `json:"certificate_id"`
	PlanID        string         `json:"plan_id"`
	Undecided     []string       `json:"undecided"`
}

// statusOf maps a resolution to the status the main model acts on.
func statusOf(k ResolutionKind, missing int, worker bool) ResultStatus {
	switch {
	case k == ResolutionExact || k == ResolutionCoverage || k == ResolutionComposite || k == ResolutionClaim:
		return ResultHit
	case k == ResolutionPartial && missing > 0:
		return ResultPartial
	case (k == ResolutionPartial || k == ResolutionMiss) && worker:
		return ResultWorker
	}
	return ResultBypass
}
