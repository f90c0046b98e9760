package product

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The store's invocation records: each adapter run's start and result,
// so that no worker runs twice under one invocation id (invocation.go).

// invocationRecord is one row of invocation_results.
type invocationRecord struct {
	Invocation string
	Part       int
	Lifecycle  string
	Phase      lifecycle.Phase
	Attempt    int
	Failure    lifecycle.Failure // "" when the run completed
	Detail     string            // the failure's message
	Result     string            // the adapter's result, JSON
	WallMs     int64
}

// invocationResult reads the record of one part of an invocation
// (invocation.go).
func (s *store) invocationResult(ctx context.Context, invocation string, part int) (invocationRecord, bool, error) {
	r := invocationRecord{Invocation: invocation, Part: part}
	var outcome string
	err := s.db.QueryRowContext(ctx, `SELECT lifecycle_id, phase, attempt, outcome, failure, detail, result, wall_ms
		FROM invocation_results WHERE invocation = ? AND part = ?`, invocation, part).
		Scan(&r.Lifecycle, &r.Phase, &r.Attempt, &outcome, &r.Failure, &r.Detail, &r.Result, &r.WallMs)
	if errNoRows(err) {
		return r, false, nil
	}
	if err != nil {
		return r, false, storeError("store.invocation_result", err)
	}
	return r, true, nil
}

// putInvocationResult records one part of an invocation unless it has a
// record already, and returns the record as stored: the first one wins.
func (s *store) putInvocationResult(ctx context.Context, r invocationRecord) (invocationRecord, error) {
	outcome := "completed"
	if r.Failure != "" {
		outcome = "failed"
	}
	err := s.inTx(ctx, "store.invocation_result", func(tx *sql.Tx, now string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO invocation_results (invocation, part, lifecycle_id, phase, attempt, outcome,
			failure, detail, result, wall_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (invocation, part) DO NOTHING`,
			r.Invocation, r.Part, r.Lifecycle, r.Phase, r.Attempt, outcome, r.Failure, r.Detail, r.Result, r.WallMs, now)
		return err
	})
	if err != nil {
		return r, err
	}
	stored, ok, err := s.invocationResult(ctx, r.Invocation, r.Part)
	if err == nil && !ok {
		err = storeError("store.invocation_result", fmt.Errorf("the record of %s vanished", r.Invocation))
	}
	return stored, err
}

// invocationWallMs is the wall time recorded for an invocation's adapter
// run (part 0, which the kernel records around the whole adapter).
func (s *store) invocationWallMs(ctx context.Context, invocation string) (int64, error) {
	var ms int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(wall_ms), 0) FROM invocation_results WHERE invocation = ? AND part = 0`, invocation).Scan(&ms)
	if err != nil {
		return 0, storeError("store.invocation_result", err)
	}
	return ms, nil
}

// invocationRun is the last run event of one part of an invocation: its
// seq (0: never started) and whether it is started (the run is live or
// was interrupted).
func (s *store) invocationRun(ctx context.Context, invocation string, part int) (seq int, started bool, err error) {
	var event string
	err = s.db.QueryRowContext(ctx, `SELECT seq, event FROM invocation_runs WHERE invocation = ? AND part = ?
		ORDER BY seq DESC LIMIT 1`, invocation, part).Scan(&seq, &event)
	if errNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, storeError("store.invocation_run", err)
	}
	return seq, event == "started", nil
}

// putInvocationRun appends a run event of one part of an invocation at
// seq; a seq already taken means another runner got there first (a
// kindConflict) and nothing is written.
func (s *store) putInvocationRun(ctx context.Context, call AdapterCall, part, seq int, event string) error {
	err := s.inTx(ctx, "store.invocation_run", func(tx *sql.Tx, now string) error {
		var last int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM invocation_runs WHERE invocation = ? AND part = ?`,
			call.Invocation, part).Scan(&last); err != nil {
			return err
		}
		if last != seq-1 {
			return errInvocationRaced
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO invocation_runs (invocation, part, seq, event, lifecycle_id, phase, attempt, pid, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, call.Invocation, part, seq, event, call.Lifecycle, call.Phase, call.Attempt, os.Getpid(), now)
		return err
	})
	if errors.Is(err, errInvocationRaced) {
		return &Error{Op: "lifecycle.invocation", Kind: kindConflict,
			Err: fmt.Errorf("invocation %s part %d was started or stopped by another runner meanwhile", call.Invocation, part)}
	}
	return err
}

var errInvocationRaced = errors.New("invocation run raced")
