package product

import "context"

// staleCounts are what the store shows of evidence that changed under it.
type staleCounts struct {
	Withheld, Reproven, Superseded int64
}

// staleCounts counts the resolutions of kind stale (a need whose only
// evidence no longer matched the source and was withheld), the proof
// replays that certified changed evidence again before it was served, and
// the artifacts a replay superseded (moved lines; the old one is no longer
// served).
func (s *store) staleCounts(ctx context.Context) (staleCounts, error) {
	var c staleCounts
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM resolutions WHERE kind = ?),
		(SELECT count(*) FROM attempts WHERE source = 'replay' AND status = 'certified'),
		(SELECT count(*) FROM superseded_artifacts)`, string(resolutionStale)).Scan(&c.Withheld, &c.Reproven, &c.Superseded)
	if err != nil {
		return c, storeError("store.stats", err)
	}
	return c, nil
}

// proofCounts counts the artifact certificates (every proof made, re-proofs
// by replay included) by proofKind.
func (s *store) proofCounts(ctx context.Context) (map[proofKind]int64, error) {
	type row struct {
		level, reach, cited string
		n                   int64
	}
	rows, err := queryAll(ctx, s.db, "store.stats", `SELECT level, coalesce(json_extract(body, '$.reach'), ''),
		coalesce(json_extract(body, '$.cited[0].path'), ''), count(*)
		FROM certificates WHERE scope = 'artifact' GROUP BY 1, 2, 3`, nil,
		func(rs rowScanner, r *row) error { return rs.Scan(&r.level, &r.reach, &r.cited, &r.n) })
	if err != nil {
		return nil, err
	}
	out := map[proofKind]int64{}
	for _, r := range rows {
		out[proofKindOf(r.level, r.reach, r.cited)] += r.n
	}
	return out, nil
}
