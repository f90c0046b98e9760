package product

import (
	"context"
	"database/sql"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// putResolution records the answer to a need, exactly as returned.
func (s *Store) putResolution(ctx context.Context, root, sessionID string, r NeedResult, plan Plan) error {
	return s.inTx(ctx, "store.resolution", func(tx *sql.Tx, now string) error {
		var cert any
		if r.Resolution.CertificateID != "" {
			cert = r.Resolution.CertificateID
		}
		_, err := tx.Exec(`INSERT INTO resolutions (root, session_id, ordinal, need_id, kind, certificate_id, plan_id, plan, result, result_digest, worker_spawned, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			root, sessionID, r.Step.Ordinal, r.NeedID, string(r.Resolution.Kind), cert, r.Resolution.PlanID,
			mustJSON(plan), mustJSON(r), r.ResultDigest, boolInt(r.WorkerSpawned), now)
		return err
	})
}

// observe records the cost of one plan operator.
func (s *Store) observe(ctx context.Context, o Observation) error {
	return s.inTx(ctx, "store.observe", func(tx *sql.Tx, now string) error {
		_, err := tx.Exec(`INSERT INTO observations (operator, tokens, cost_usd, latency_ms, created_at) VALUES (?, ?, ?, ?, ?)`,
			o.Operator, o.Tokens, o.CostUSD, o.LatencyMs, now)
		return err
	})
}

// observations returns the newest observations (at most 200 per operator).
func (s *Store) observations(ctx context.Context) ([]Observation, error) {
	return queryAll(ctx, s.db, "store.observations", `SELECT operator, tokens, cost_usd, latency_ms FROM (
		SELECT *, row_number() OVER (PARTITION BY operator ORDER BY observation_id DESC) AS n FROM observations)
		WHERE n <= 200 ORDER BY observation_id`, nil,
		func(rows rowScanner, o *Observation) error {
			return rows.Scan(&o.Operator, &o.Tokens, &o.CostUSD, &o.LatencyMs)
		})
}

var _ snapshot.StatCache = statCache{}
