package product

// NeedResult is the structured result of need_context (its outputSchema is
// needContextOutputSchema). Context is the FrontierView text.
type NeedResult struct {
	Status        resultStatus     `json:"status"`
	Route         route            `json:"route"`
	Subject       Subject          `json:"subject"`
	NeedID        string           `json:"need_id"`
	Step          stepInfo         `json:"step"`
	Satisfied     []CapabilityKind `json:"satisfied"`
	Missing       []CapabilityKind `json:"missing"`
	Resolution    Resolution       `json:"resolution"`
	ReuseUnit     reuseUnit        `json:"reuse_unit"`
	ClaimIDs      []string         `json:"claim_ids"`
	CacheHit      bool             `json:"cache_hit"`
	WorkerSpawned bool             `json:"worker_spawned"`
	ResultDigest  string           `json:"result_digest"`
	Context       string           `json:"context"`
	// Failure says what failed when an operational failure, not a
	// decision, left the result short. It is not part of the wire result
	// (nor of result_digest): the context says it to the main model.
	Failure failure `json:"-"`
	// Replays counts the pieces of evidence this resolution re-proved by
	// proof replay (a dependency had changed). Like Failure it is not part
	// of the wire result nor of result_digest; benchmarks tell replayed
	// hits from exact ones by it.
	Replays int `json:"-"`
}

// resultStatus is what the main model acts on.
type resultStatus string

const (
	resultHit     resultStatus = "hit"     // answered from certified evidence
	resultPartial resultStatus = "partial" // some obligations answered, some missing
	resultWorker  resultStatus = "worker"  // a worker answered what evidence could not
	resultBypass  resultStatus = "bypass"  // no reusable answer: do the work natively
)

var allResultStatuses = []resultStatus{resultHit, resultPartial, resultWorker, resultBypass}

// reuseUnit is what a result reuses: whole artifacts, claims drawn from
// them, or nothing.
type reuseUnit string

const (
	reuseArtifact reuseUnit = "artifact"
	reuseClaim    reuseUnit = "claim"
	reuseNone     reuseUnit = "none"
)

var allReuseUnits = []reuseUnit{reuseArtifact, reuseClaim, reuseNone}

// failureReason classifies an operational failure behind a result.
type failureReason string

const (
	failureNone          failureReason = ""                        // nothing failed
	FailureWorker        failureReason = "worker_failed"           // the worker run returned an error
	failureWorkerNothing failureReason = "worker_proposed_nothing" // the worker ran but proposed nothing for a need without evidence
	failureUndecided     failureReason = "undecided"               // the worker's proposal could not be decided here (it is kept and tried again)
)

// failure is an operational failure behind a result: its reason and, for
// a log, the error.
type failure struct {
	Reason failureReason
	Detail string
}

// stepInfo places a need in its session ledger.
type stepInfo struct {
	Ordinal  int      `json:"ordinal"`
	Relation relation `json:"relation"`
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
func statusOf(k ResolutionKind, missing int, worker bool) resultStatus {
	switch {
	case k == ResolutionExact || k == ResolutionCoverage || k == resolutionComposite || k == resolutionClaim:
		return resultHit
	case k == resolutionPartial && missing > 0:
		return resultPartial
	case (k == resolutionPartial || k == resolutionMiss) && worker:
		return resultWorker
	}
	return resultBypass
}
