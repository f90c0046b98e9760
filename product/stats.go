package product

import "context"

// proofKind is how a certificate's proof was made, as needle stats
// counts it.
type proofKind string

const (
	proofTypes     proofKind = "types"     // go/types over the exact source (a location)
	proofParser    proofKind = "parser"    // Python's own parser over the exact source (a Python location)
	proofExecution proofKind = "execution" // Needle ran it in the sandbox and saw it (a test's reach, a flow)
	proofStatic    proofKind = "static"    // only checked statically: every call resolved by go/types, nothing run (a flow)
	proofLexical   proofKind = "lexical"   // definition-shaped lines of a language Needle cannot type-check
)

// proofKindOf classifies a certificate by its level, its reach and the
// path of its first cited location.
func proofKindOf(level, reach, cited string) proofKind {
	switch {
	case level == levelLexical || reach == reachLexical:
		return proofLexical
	case reach == reachExecuted:
		return proofExecution
	case reach == reachStatic:
		return proofStatic
	case isPython(cited):
		return proofParser
	}
	return proofTypes
}

// Stats is what a data directory's store shows Needle saved (needle
// stats): answers, hits, tokens, the stale evidence it did not serve and
// the proofs it made.
type Stats struct {
	// Answers are the recorded resolutions; Hits those answered from
	// certified evidence alone (exact, coverage, composite or claim hits),
	// by kind in HitsByKind; PartialHits took part of their answer from
	// evidence.
	Answers     int64            `json:"answers"`
	Hits        int64            `json:"hits"`
	HitsByKind  map[string]int64 `json:"hits_by_kind"`
	PartialHits int64            `json:"partial_hits"`
	WorkerRuns  int64            `json:"worker_runs"`
	// TokensSaved are the worker tokens reuse avoided, each estimated when
	// its answer was recorded from the mean tokens per obligation of the
	// worker runs before it (0 while none had run); TokensSpent those
	// workers used.
	TokensSaved int64 `json:"tokens_saved"`
	TokensSpent int64 `json:"tokens_spent"`
	Stale       struct {
		// Withheld are the needs answered "stale": their certified
		// evidence no longer matched the source and was not returned.
		Withheld int64 `json:"withheld"`
		// Reproven are the proof replays that certified changed evidence
		// again before it was served; Superseded the artifacts whose lines
		// moved, which a replayed one replaced.
		Reproven   int64 `json:"reproven"`
		Superseded int64 `json:"superseded"`
	} `json:"stale"`
	// Proofs counts the artifact certificates (every proof, re-proofs
	// included) by how the proof was made: types, execution, static,
	// lexical.
	Proofs map[string]int64 `json:"proofs"`
}

// Stats reads the store's totals (needle stats); it writes nothing.
func (h dataHome) Stats(ctx context.Context) (Stats, error) {
	t, err := h.st.accounting(ctx)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Answers: t.Resolutions, Hits: t.Hits, HitsByKind: map[string]int64{}, PartialHits: t.ByKind[resolutionPartial],
		WorkerRuns: t.WorkerRuns, TokensSaved: t.TokensSaved, TokensSpent: t.TokensSpent, Proofs: map[string]int64{}}
	for _, k := range hitKinds {
		st.HitsByKind[string(k)] = t.ByKind[k]
	}
	sc, err := h.st.staleCounts(ctx)
	if err != nil {
		return Stats{}, err
	}
	st.Stale.Withheld, st.Stale.Reproven, st.Stale.Superseded = sc.Withheld, sc.Reproven, sc.Superseded
	proofs, err := h.st.proofCounts(ctx)
	if err != nil {
		return Stats{}, err
	}
	for _, k := range []proofKind{proofTypes, proofParser, proofExecution, proofStatic, proofLexical} {
		st.Proofs[string(k)] = proofs[k]
	}
	return st, nil
}
