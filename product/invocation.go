package product

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/needle-dev/needle/product/internal/failpoint"
)

// Invocation records: how the lifecycle's real adapters deduplicate their
// side effects. The kernel persists a phase's artifact only after its
// adapter returned, so a kill between a worker's completion and that
// persist would run the worker again on the next run — tokens paid twice
// for one invocation. The seed's remedy is the deterministic invocation
// id (lifecycle, phase, attempt): the moment a worker run completes, the
// adapter records its result in invocation_results under that id, before
// it hands the result to the kernel; invoked again with the same id it
// returns the recorded result and runs nothing.
//
// The rule, precisely:
//
//   - A worker run whose result was recorded never runs again for that
//     invocation id, whether it succeeded or failed (a failure is recorded
//     with its class and message, and returned again as that failure).
//   - A worker run killed before its record committed — in flight, or
//     after its session ended and before the record's transaction
//     (building the patch, verifying and removing the checkout) —
//     produced no result: the next run runs it again, in full. That is
//     the one window in which a worker can run twice, and it is as short
//     as recording allows: the record is written the moment the adapter
//     holds a result it can stand behind (a patch built and a checkout
//     verified and removed, never a half-inspected one).
//   - A run that was cancelled, or that stopped because the work tree
//     moved (a conflict), ran nothing that counts and is not recorded:
//     the kernel commits nothing for it either.
//
// Explore resolves each of its needs apart, so each need is recorded as
// its own part: a kill between two needs re-runs neither the first need's
// evidence worker nor anything it recorded. The budget still counts a
// recorded run's wall time when its result is returned again (the kernel
// charges the longer of its own measure and the recorded time).

// invocationRecord is one row of invocation_results.
type invocationRecord struct {
	Invocation string
	Part       int
	Lifecycle  string
	Phase      Phase
	Attempt    int
	Failure    LifecycleFailure // "" when the run completed
	Detail     string           // the failure's message
	Result     string           // the adapter's result, JSON
	WallMs     int64
}

// recordedFailure is a failure returned from a record: its message is the
// original error's, its class the one the original was given.
type recordedFailure struct {
	Failure LifecycleFailure
	Detail  string
}

func (e *recordedFailure) Error() string { return e.Detail }

// producedNothing reports whether an adapter's error means the run
// produced nothing to commit: it was cancelled, or the work tree moved
// under it (a conflict). The kernel commits nothing for such a run, and
// no record is kept of it.
func producedNothing(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || KindOf(err) == KindConflict)
}

// recorded runs one recorded unit of an invocation (part) at most once: it
// returns the recorded result when there is one, and otherwise runs run and
// records what it returned before returning it. What is returned is always
// the record as stored, so a first run and a repeat hand the kernel the
// same value.
func recorded[R any](ctx context.Context, e *Engine, call AdapterCall, part int, run func(context.Context) (R, error)) (R, error) {
	rec, ok, err := e.store.invocationResult(ctx, call.Invocation, part)
	if err != nil {
		var zero R
		return zero, err
	}
	if !ok {
		start := time.Now()
		res, err := run(ctx)
		if producedNothing(ctx, err) {
			return res, err
		}
		failpoint.Hit("adapter.before_record")
		rec = invocationRecord{Invocation: call.Invocation, Part: part, Lifecycle: call.Lifecycle, Phase: call.Phase,
			Attempt: call.Attempt, Result: mustJSON(res), WallMs: max(time.Since(start).Milliseconds(), 0)}
		if err != nil {
			rec.Failure, rec.Detail = failureOf(err), clip(err.Error(), 4<<10)
		}
		if rec, err = e.store.putInvocationResult(context.WithoutCancel(ctx), rec); err != nil {
			return res, err
		}
		failpoint.Hit("adapter.after_record")
	}
	return replayRecord[R](rec)
}

// replayRecord decodes a record's result and its failure.
func replayRecord[R any](rec invocationRecord) (R, error) {
	var res R
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return res, &Error{Op: "lifecycle.invocation", Kind: KindStore,
			Err: fmt.Errorf("the recorded result of %s part %d does not decode: %w", rec.Invocation, rec.Part, err)}
	}
	if rec.Failure != "" {
		return res, &recordedFailure{Failure: rec.Failure, Detail: rec.Detail}
	}
	return res, nil
}
