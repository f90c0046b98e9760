package product

import (
	"context"
	"database/sql"
)

// putWorkerRun records one worker run in the accounting ledger and, when
// obs is not nil, folds its economic observation into the cost aggregates
// in the same transaction.
func (s *store) putWorkerRun(ctx context.Context, root, needID string, missing []obligation, res workerResult, u workerUsage, runErr error, obs *observation) error {
	status, msg := "completed", ""
	if runErr != nil {
		status, msg = "failed", runErr.Error()
	}
	return s.inTx(ctx, "store.worker_run", func(tx *sql.Tx, now string) error {
		_, err := tx.Exec(`INSERT INTO worker_runs (root, need_id, invocation, obligations, status, error, proposals,
			input_tokens, output_tokens, total_tokens, cost_usd, latency_ms, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			root, needID, res.Invocation, mustJSON(missing), status, msg, len(res.Proposals),
			u.InputTokens, u.OutputTokens, u.TotalTokens, u.CostUSD, u.LatencyMs, now)
		if err != nil || obs == nil {
			return err
		}
		delta := costBook{}
		delta.observe(*obs)
		return s.foldCosts(ctx, tx, now, delta)
	})
}

// workerTotals sums the worker runs recorded for root.
func (s *store) workerTotals(ctx context.Context, root string) (WorkerTotals, error) {
	var t WorkerTotals
	err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(status = 'failed'), 0), coalesce(sum(input_tokens), 0),
		coalesce(sum(output_tokens), 0), coalesce(sum(total_tokens), 0), coalesce(sum(cost_usd), 0) FROM worker_runs WHERE root = ?`, root).
		Scan(&t.Runs, &t.Failed, &t.InputTokens, &t.OutputTokens, &t.TotalTokens, &t.CostUSD)
	if err != nil {
		return t, storeError("store.worker_totals", err)
	}
	return t, nil
}
