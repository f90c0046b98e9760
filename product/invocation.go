package product

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/needle-dev/needle/product/internal/failpoint"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Invocation records: how the lifecycle's adapters deduplicate their side
// effects by invocation id. The kernel persists a phase's artifact only
// after its adapter returned, so without more a kill between a worker's
// completion and that persist would run the worker again on the next run —
// its side effects (a model's tokens, a checkout, tests run) twice for one
// invocation. The seed's remedy is the deterministic invocation id
// (lifecycle, phase, attempt), and the kernel wraps every adapter in
// recorded (part 0). The Codex explore adapter also records each need it
// resolves (parts 1…n): the start and result of each evidence worker
// inside the one explore invocation (a kill anywhere inside it still fails
// the whole invocation as interrupted, by part 0).
//
// The rule, precisely:
//
//   - Before a worker runs, its start is committed (invocation_runs). The
//     moment it returns, its result is committed (invocation_results) —
//     a success, or a failure with its class and message — and then handed
//     to the kernel. Invoked again with the same id, the adapter returns
//     the recorded result and runs nothing.
//   - A run that was started and has neither a result nor a clean stop was
//     interrupted by a crash: its side effects happened (some of them) and
//     its result is lost. It is never run again under its id: it is
//     recorded as failed (crashed, "interrupted"), so the kernel commits a
//     phase_failed and the machine's one retry runs the phase under a new
//     invocation id — in the journal, never silently.
//   - A run that was cancelled, or that stopped because the work tree
//     moved (a conflict), produced nothing and is recorded as stopped: the
//     next run starts it again under the same id (the kernel commits
//     nothing for it either).
//
// The budget counts a recorded run's wall time when its result is returned
// again (the kernel charges the longer of its own measure and the recorded
// time).

// recordAll wraps every adapter of a so that it runs at most once per
// invocation id (part 0), and not at all again after an interrupted run.
func recordAll(e *Engine, a lifecycleAdapters) lifecycleAdapters {
	out := lifecycleAdapters{}
	if f := a.Explore; f != nil {
		out.Explore = func(ctx context.Context, req exploreRequest) (exploreResult, error) {
			return recorded(ctx, e, req.AdapterCall, 0, func(ctx context.Context) (exploreResult, error) { return f(ctx, req) })
		}
	}
	if f := a.Implement; f != nil {
		out.Implement = func(ctx context.Context, req implementRequest) (implementResult, error) {
			return recorded(ctx, e, req.AdapterCall, 0, func(ctx context.Context) (implementResult, error) { return f(ctx, req) })
		}
	}
	if f := a.Test; f != nil {
		out.Test = func(ctx context.Context, req testRequest) (testResult, error) {
			return recorded(ctx, e, req.AdapterCall, 0, func(ctx context.Context) (testResult, error) { return f(ctx, req) })
		}
	}
	if f := a.Review; f != nil {
		out.Review = func(ctx context.Context, req reviewRequest) (reviewResult, error) {
			return recorded(ctx, e, req.AdapterCall, 0, func(ctx context.Context) (reviewResult, error) { return f(ctx, req) })
		}
	}
	if f := a.Verify; f != nil {
		out.Verify = func(ctx context.Context, req verifyRequest) (verifierResult, error) {
			return recorded(ctx, e, req.AdapterCall, 0, func(ctx context.Context) (verifierResult, error) { return f(ctx, req) })
		}
	}
	return out
}

// errInterrupted is the detail of an invocation whose worker a crash
// interrupted.
const errInterrupted = "interrupted: its worker was started and its runner died before it recorded a result; it is not run again under this invocation id"

// producedNothing reports whether an adapter's error means the run
// produced nothing to commit: it was cancelled, or the work tree moved
// under it (a conflict). The kernel commits nothing for such a run, and
// no record is kept of it.
func producedNothing(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || KindOf(err) == kindConflict)
}

// recorded runs one recorded unit of an invocation (part) at most once: it
// returns the recorded result when there is one, and otherwise runs run and
// records what it returned before returning it. What is returned is always
// the record as stored, so a first run and a repeat hand the kernel the
// same value.
func recorded[R any](ctx context.Context, e *Engine, call AdapterCall, part int, run func(context.Context) (R, error)) (R, error) {
	var zero R
	rec, ok, err := e.store.invocationResult(ctx, call.Invocation, part)
	if err != nil || ok {
		if err != nil {
			return zero, err
		}
		return replayRecord[R](rec)
	}
	seq, started, err := e.store.invocationRun(ctx, call.Invocation, part)
	if err != nil {
		return zero, err
	}
	rec = invocationRecord{Invocation: call.Invocation, Part: part, Lifecycle: call.Lifecycle, Phase: call.Phase,
		Attempt: call.Attempt, Result: mustJSON(zero)}
	if started {
		rec.Failure, rec.Detail = lifecycle.FailureCrashed, errInterrupted
	} else {
		if err := e.store.putInvocationRun(ctx, call, part, seq+1, "started"); err != nil {
			return zero, err
		}
		start := time.Now()
		res, err := run(ctx)
		if producedNothing(ctx, err) {
			if serr := e.store.putInvocationRun(context.WithoutCancel(ctx), call, part, seq+2, "stopped"); serr != nil {
				return res, fmt.Errorf("%w (and recording the stop: %v)", err, serr)
			}
			return res, err
		}
		failpoint.Hit("adapter.before_record")
		rec.Result, rec.WallMs = mustJSON(res), max(time.Since(start).Milliseconds(), 0)
		if err != nil {
			rec.Failure, rec.Detail = failureOf(err), clip(err.Error(), 4<<10)
		}
	}
	if rec, err = e.store.putInvocationResult(context.WithoutCancel(ctx), rec); err != nil {
		return zero, err
	}
	failpoint.Hit("adapter.after_record")
	return replayRecord[R](rec)
}

// replayRecord decodes a record's result and its failure.
func replayRecord[R any](rec invocationRecord) (R, error) {
	var res R
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return res, &Error{Op: "lifecycle.invocation", Kind: kindStore,
			Err: fmt.Errorf("the recorded result of %s part %d does not decode: %w", rec.Invocation, rec.Part, err)}
	}
	if rec.Failure != "" {
		return res, &recordedFailure{Failure: rec.Failure, Detail: rec.Detail}
	}
	return res, nil
}
