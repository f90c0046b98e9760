package product

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/needle-dev/needle/product/internal/appserver"
	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/ndjson"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// defaultWorkerIdle is how long a kept evidence worker waits for the next
// need of its session before it is closed.
const defaultWorkerIdle = 2 * time.Minute

// liveWorker is an evidence worker kept after its request
// (CodexConfig.Continue): its App Server process, its ephemeral thread and
// the disposable checkout the thread read. Ephemeral threads cannot be
// resumed in another process, so the process itself is kept; a thread is
// continued by a new turn/start on it, which is what thread/resume would
// give in the same process. At most one is kept per codexWorker (one per
// engine, and an MCP connection has its own engine), and only while idle.
type liveWorker struct {
	session string
	needs   []string // the needs whose turns the thread holds
	model   string   // the thread's model and effort: a continuation runs under the same
	effort  string
	inv     string // the first request's invocation: names the home and the transcript
	co      *checkout.Checkout
	home    string
	client  *appserver.Client
	thread  string
	stderr  *ndjson.Buffer
	rec     *transcript.Recorder
	counted appserver.Usage // the thread's usage already charged to earlier requests
	idle    *time.Timer
}

// proposeLive answers req with the session's kept worker when it may
// continue (canContinue), else with a fresh one that is then kept. Any
// failure closes the worker: only a worker whose every request succeeded
// and whose checkout verified unchanged is kept.
func (w *codexWorker) proposeLive(ctx context.Context, req workerRequest) (workerResult, error) {
	lw, err := w.takeLive()
	if err != nil {
		return workerResult{}, err
	}
	if lw != nil {
		ok, err := w.canContinue(ctx, lw, req)
		if err == nil && ok {
			return w.continueLive(ctx, lw, req)
		}
		if cerr := lw.close(context.WithoutCancel(ctx)); cerr != nil {
			return workerResult{}, cerr
		}
		if err != nil {
			return workerResult{}, err
		}
	}
	return w.startLive(ctx, req)
}

// canContinue reports whether req may continue lw's thread: the same
// session, a residual or extension of a need the thread answered, the same
// model and effort, a process still running, and — what makes it correct —
// a checkout of the very snapshot the repository holds now, verified still
// to hold it. A work tree that moved since gets a fresh thread in a fresh
// checkout: the thread read a source that is no longer the one proposals
// are validated against.
func (w *codexWorker) canContinue(ctx context.Context, lw *liveWorker, req workerRequest) (bool, error) {
	if lw.session != req.Session || lw.model != req.Model || lw.effort != req.Effort ||
		!slices.ContainsFunc(req.Continues, func(n string) bool { return slices.Contains(lw.needs, n) }) {
		return false, nil
	}
	select {
	case <-lw.client.Exited():
		return false, nil
	default:
	}
	repo, err := snapshot.Open(ctx, req.Repository, nil)
	if err != nil {
		return false, fmt.Errorf("open repository: %w", err)
	}
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("snapshot: %w", err)
	}
	if snap.ID != lw.co.Snapshot {
		return false, nil
	}
	// The thread read the checkout; it is continued only on exactly what it
	// read. A kept checkout that changed while idle is not a reason for a
	// fresh thread but a broken confinement: fail closed.
	if err := lw.co.Verify(ctx); err != nil {
		return false, fmt.Errorf("%w: kept checkout before continuing: %w", errFailClosed, err)
	}
	return true, nil
}

// startLive runs req in a fresh worker and keeps the worker.
func (w *codexWorker) startLive(ctx context.Context, req workerRequest) (res workerResult, err error) {
	started := time.Now()
	spec := evidenceSpec(req)
	repo, err := snapshot.Open(ctx, req.Repository, nil)
	if err != nil {
		return res, fmt.Errorf("open repository: %w", err)
	}
	co, err := checkout.Create(ctx, repo, w.checkouts())
	if err != nil {
		return res, fmt.Errorf("checkout: %w", err)
	}
	lw := &liveWorker{session: req.Session, model: req.Model, effort: req.Effort, co: co,
		stderr: ndjson.NewBuffer(8 << 10), rec: transcript.NewRecorder()}
	lw.inv = spec.invocation(co.Snapshot)
	res.Invocation = lw.inv
	defer func() {
		if err != nil {
			if cerr := lw.close(context.WithoutCancel(ctx)); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	if lw.home, err = w.codexHome(lw.inv); err != nil {
		return res, err
	}
	hctx, cancel := context.WithTimeout(ctx, w.cfg.Deadline)
	defer cancel()
	lw.client, lw.thread, err = w.startThread(hctx, spec, lw.inv, co.Dir, lw.home, lw.rec, lw.stderr)
	if err != nil {
		if rerr := w.recordLive(lw); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return res, err
	}
	return w.answerLive(ctx, lw, req, spec, lw.inv, started)
}

// continueLive runs req as new turns on lw's thread: the prompts ask only
// for req's missing obligations, in the checkout the thread already read.
func (w *codexWorker) continueLive(ctx context.Context, lw *liveWorker, req workerRequest) (workerResult, error) {
	started := time.Now()
	spec := evidenceSpec(req)
	for i, ob := range req.Missing {
		spec.Turns[i].Prompt = continuePrompt(req, ob)
	}
	return w.answerLive(ctx, lw, req, spec, invocationID(req, lw.co.Snapshot), started)
}

// answerLive runs spec's turns on lw's thread, charges req the thread's
// usage since the last request, records the transcript and verifies the
// checkout unchanged; then keeps lw, or closes it on any failure.
func (w *codexWorker) answerLive(ctx context.Context, lw *liveWorker, req workerRequest, spec sessionSpec, inv string, started time.Time) (res workerResult, err error) {
	res.Invocation = inv
	finals, err := w.turns(ctx, lw.client, lw.thread, spec, lw.co.Dir, lw.stderr)
	total := lw.client.ThreadUsage(lw.thread)
	res.Usage = usageOf(appserver.Usage{InputTokens: total.InputTokens - lw.counted.InputTokens,
		OutputTokens: total.OutputTokens - lw.counted.OutputTokens, TotalTokens: total.TotalTokens - lw.counted.TotalTokens})
	lw.counted = total
	res.Usage.LatencyMs = sinceMs(started)
	res.Usage.CostUSD = float64(res.Usage.TotalTokens) / 1e6 * w.cfg.USDPerMillionTokens
	if rerr := w.recordLive(lw); rerr != nil && err == nil {
		err = rerr
	}
	if err == nil {
		// A read-only worker that changed its checkout voids the request,
		// and the checkout is never read again.
		if verr := lw.co.Verify(context.WithoutCancel(ctx)); verr != nil {
			err = fmt.Errorf("%w: checkout after worker: %w", errFailClosed, verr)
		}
	}
	if err != nil {
		if cerr := lw.close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return res, err
	}
	for _, text := range finals {
		res.Proposals = append(res.Proposals, []byte(text))
	}
	lw.needs = append(lw.needs, req.NeedID)
	w.keep(lw)
	return res, nil
}

// continuePrompt is the turn prompt of a continued thread: the obligation's
// prompt, told that the checkout is the one the thread already read.
func continuePrompt(req workerRequest, ob obligation) string {
	return "Continue in the same checkout: it is unchanged since the earlier turns of this thread, so what you read there still holds; " +
		"read only what you still need.\n" + workerPrompt(req, ob)
}

// recordLive freezes lw's transcript so far into RecordDir, under its
// first invocation: the replay server finds the whole session by the home's
// name, which is that invocation's.
func (w *codexWorker) recordLive(lw *liveWorker) error {
	if w.cfg.RecordDir == "" {
		return nil
	}
	return w.record(workerScenario, lw.inv, lw.co.Dir, lw.home, lw.rec)
}

// takeLive takes the kept worker out, if any, so that no idle timeout
// closes it under the request; a kept worker's cleanup that failed since
// fails this request (fail closed) and is reported once.
func (w *codexWorker) takeLive() (*liveWorker, error) {
	w.mu.Lock()
	lw, cerr := w.live, w.cleanErr
	w.live, w.cleanErr = nil, nil
	w.mu.Unlock()
	if lw != nil {
		lw.idle.Stop()
	}
	if cerr != nil {
		if lw != nil {
			cerr = errors.Join(cerr, lw.close(context.Background()))
		}
		return nil, cerr
	}
	return lw, nil
}

// keep makes lw the kept worker until its idle timeout, the next request
// or Close; after Close it is closed at once.
func (w *codexWorker) keep(lw *liveWorker) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.noteCleanup(lw.close(context.Background()))
		return
	}
	old := w.live
	w.live = lw
	lw.idle = time.AfterFunc(w.cfg.Idle, func() { w.expire(lw) })
	w.mu.Unlock()
	if old != nil { // one request at a time makes this unreachable; keep the bound anyway
		old.idle.Stop()
		w.noteCleanup(old.close(context.Background()))
	}
}

// expire closes lw when its idle timeout fires while it is still kept.
func (w *codexWorker) expire(lw *liveWorker) {
	w.mu.Lock()
	if w.live != lw {
		w.mu.Unlock()
		return
	}
	w.live = nil
	w.mu.Unlock()
	w.noteCleanup(lw.close(context.Background()))
}

// noteCleanup keeps a cleanup failure that no request was there to
// return: the next request and Close return it.
func (w *codexWorker) noteCleanup(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	w.cleanErr = errors.Join(w.cleanErr, err)
	w.mu.Unlock()
}

// Close closes the kept worker, if any, and keeps none after; it returns
// any cleanup that failed (a checkout left behind is swept by the next
// worker backend that opens the data directory).
func (w *codexWorker) Close() error {
	w.mu.Lock()
	lw, err := w.live, w.cleanErr
	w.live, w.cleanErr, w.closed = nil, nil, true
	w.mu.Unlock()
	if lw != nil {
		lw.idle.Stop()
		err = errors.Join(err, lw.close(context.Background()))
	}
	return err
}

// close stops the App Server (stdin closed, then its process group
// killed after the grace period), removes the worker's home and removes
// and verifies the removal of its checkout; a checkout that cannot be
// removed fails closed.
func (lw *liveWorker) close(ctx context.Context) error {
	if lw.client != nil {
		_ = lw.client.Close(ctx)
	}
	if lw.home != "" {
		os.RemoveAll(lw.home)
	}
	if err := lw.co.Remove(ctx); err != nil {
		return fmt.Errorf("%w: checkout cleanup: %w", errFailClosed, err)
	}
	return nil
}
