package product

// NeedResult is the structured result of need_context, as the MCP seed
// specifies it. Context is the FrontierView text.
type NeedResult struct {
	Status        string           `json:"status"` // hit | partial | worker | bypass
	Route         Route            `json:"route"`
	Subject       Subject          `json:"subject"`
	NeedID        string           `json:"need_id"`
	Step          StepInfo         `json:"step"`
	Satisfied     []CapabilityKind `json:"satisfied"`
	Missing       []CapabilityKind `json:"missing"`
	Resolution    Resolution       `json:"resolution"`
	ReuseUnit     string           `json:"reuse_unit"` // artifact | claim | none
	ClaimIDs      []string         `json:"claim_ids"`
	CacheHit      bool             `json:"cache_hit"`
	WorkerSpawned bool             `json:"worker_spawned"`
	ResultDigest  string           `json:"result_digest"`
	Context       string           `json:"context"`
}

// StepInfo places a need in its session ledger.
type StepInfo struct {
	Ordinal  int      `json:"ordinal"`
	Relation Relation `json:"relation"`
}

// Resolution is the tagged outcome with the ids that back it.
type Resolution struct {
	Kind          ResolutionKind `json:"kind"`
	ArtifactIDs   []string       `json:"artifact_ids"`
	CertificateID string         `json:"certificate_id"`
	PlanID        string         `json:"plan_id"`
}

// statusOf maps a resolution to the status the main model acts on.
func statusOf(k ResolutionKind, missing int, worker bool) string {
	switch {
	case k == ResolutionExact || k == ResolutionCoverage || k == ResolutionComposite || k == ResolutionClaim:
		return "hit"
	case k == ResolutionPartial && missing > 0:
		return "partial"
	case (k == ResolutionPartial || k == ResolutionMiss) && worker:
		return "worker"
	}
	return "bypass"
}
