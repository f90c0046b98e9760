package product

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/threadprio"
)

// The evidence refresher: Refresh (refresh.go) run in the background of
// needle mcp serve, so that the needs of a session find the evidence of a
// changed source already re-proven. It runs on an engine of its own (its
// own turn: a need being served never waits for it) that never spawns a
// worker. It looks once an interval after it starts (a host's new session
// often follows a checkout), then polls cheaply — the lstat of every file the
// checkout's evidence depends on, and the evidence generation, whose moves
// add the new evidence's files to the watch — and looks again only when a
// file changed. A look compares the evidence's dependency digests through
// the stat cache first and runs Refresh only when one no longer holds.
// Between two changes it reads no file and runs nothing.
//
// What a refresh relied on is stamped before it begins, so an edit made
// while it runs is seen by the next poll, never lost; a stamp taken within
// snapshot.RacyWindow of a file's change asks for one more refresh once the
// window has passed (a rewrite within one timestamp tick keeps the lstat).
// Refreshers of one repository in several processes, or several sessions
// of one resident runtime, take turns through a lock in the data
// directory: the one that waits refreshes after the other, and finds
// everything fresh at the price of the stats.

// refreshWatch is what a refresh relied on, as it was when it began: the
// evidence generation and the lstat of each dependency.
type refreshWatch struct {
	gen   int64
	stamp snapshot.Stamp
}

// stampDependencies adds to w the lstat, at now, of every dependency of
// the evidence a Refresh of this checkout looks at.
func (e *Engine) stampDependencies(ctx context.Context, w *refreshWatch, now time.Time) error {
	deps, err := e.store.refreshDependencies(ctx, e.root)
	if err != nil {
		return err
	}
	paths := make([]string, len(deps))
	for i, d := range deps {
		paths[i] = filepath.Join(e.root, filepath.FromSlash(d.Path))
	}
	w.stamp.Add(now, paths...)
	return nil
}

// watchRefresh records what a refresh starting now relies on.
func (e *Engine) watchRefresh(ctx context.Context, now time.Time) (*refreshWatch, error) {
	w := &refreshWatch{}
	var err error
	if w.gen, err = e.store.evidenceGeneration(ctx); err != nil {
		return nil, err
	}
	if err := e.stampDependencies(ctx, w, now); err != nil {
		return nil, err
	}
	return w, nil
}

// refreshDue reports whether something w watches may have changed: a
// dependency's lstat (snapshot.Stamp.Changed). A certificate stored since
// (new evidence, a need certificate, a replay) was proven on the current
// source, so it is nothing to refresh: its dependencies are added to the
// watch, stamped now, and w moves to the new generation.
func (e *Engine) refreshDue(ctx context.Context, w *refreshWatch, now time.Time) (bool, error) {
	if w.stamp.Changed(now) {
		return true, nil
	}
	gen, err := e.store.evidenceGeneration(ctx)
	if err != nil || gen == w.gen {
		return false, err
	}
	if err := e.stampDependencies(ctx, w, now); err != nil {
		return false, err
	}
	w.gen = gen
	return false, nil
}

// anyStale reports whether some evidence a Refresh would look at is not
// fresh: a dependency digest that no longer holds (through the stat cache:
// a stat per file, a read only of a file that changed) or a certificate of
// another validator version.
func (e *Engine) anyStale(ctx context.Context) (bool, error) {
	if err := e.turn.lock(ctx); err != nil {
		return false, err
	}
	defer e.turn.unlock()
	defer e.flushStats()
	defer e.repo.Release()
	deps, older, err := e.store.refreshState(ctx, e.root, validatorVersion)
	if err != nil || older {
		return older, err
	}
	fresh, err := isFresh(ctx, e.repo, deps)
	return !fresh, err
}

// refreshLock is the lock refreshers of this repository take turns by.
func (e *Engine) refreshLock() (func(), error) {
	sum := sha256.Sum256([]byte(e.root))
	return e.lock("refresh-"+hex.EncodeToString(sum[:8]), "an evidence refresh of this repository")
}

// errRefreshBusy: another refresher of the repository holds the lock.
var errRefreshBusy = errors.New("another refresher of the repository is refreshing")

// refreshOnce refreshes and returns what the refresh relied on, for the
// next poll. A refresh that failed returns its watch as well, so it is
// retried at the next change and not before.
func (e *Engine) refreshOnce(ctx context.Context, now func() time.Time) (RefreshReport, *refreshWatch, error) {
	unlock, err := e.refreshLock()
	if KindOf(err) == kindConflict {
		return RefreshReport{}, nil, fmt.Errorf("%w: %v", errRefreshBusy, err)
	}
	if err != nil {
		return RefreshReport{}, nil, err
	}
	defer unlock()
	w, err := e.watchRefresh(ctx, now())
	if err != nil {
		return RefreshReport{}, nil, err
	}
	// Most looks find nothing to re-prove (a host's new session on an
	// unchanged checkout, a touch that kept the content): the digests are
	// compared first, through the stat cache, and Refresh runs only when
	// one differs.
	stale, err := e.anyStale(ctx)
	if err != nil || !stale {
		return RefreshReport{}, w, err
	}
	rep, rerr := e.Refresh(ctx)
	// The certificates the refresh stored are no change to refresh for;
	// a dependency that only they have is stamped now.
	gen, err := e.store.evidenceGeneration(ctx)
	if err != nil {
		return rep, nil, errors.Join(rerr, err)
	}
	if gen != w.gen {
		w.gen = gen
		if err := e.stampDependencies(ctx, w, now()); err != nil {
			return rep, nil, errors.Join(rerr, err)
		}
	}
	return rep, w, rerr
}

// refreshNice is how much lower than the process's the CPU priority of
// the refresher's thread is (as the accountant's, accounting.go).
const refreshNice = 10

// refresher runs an engine's refreshes in the background (see above).
type refresher struct {
	engine *Engine
	every  time.Duration // the poll interval
	log    io.Writer     // one line per refresh that did something, and errors
	prefix string        // of each line ("needle mcp serve: ")
	now    func() time.Time
	// ticks, when set, replaces the poll interval's ticker (tests).
	ticks <-chan time.Time
	// failed is the last error logged: the same error again (a store
	// that stays unreadable) is not logged at every poll.
	failed string
	// warm, when set, readies the serving engine after a refresh that
	// renewed need certificates (Engine.Warm): the next asks are answered
	// from its memory. It returns how many needs it readied.
	warm func(context.Context) (int, error)
}

// run refreshes now and then at every change until ctx ends.
func (r *refresher) run(ctx context.Context) {
	now := r.now
	if now == nil {
		now = time.Now
	}
	ticks := r.ticks
	if ticks == nil {
		tick := time.NewTicker(r.every)
		defer tick.Stop()
		ticks = tick.C
	}
	// The first look waits one interval: a session's start (the host's
	// first calls right after initialize) does not share the cores with it,
	// and a host's model takes longer than that to ask its first need.
	select {
	case <-ctx.Done():
		return
	case <-ticks:
	}
	var w *refreshWatch // nil: refresh at the next turn
	for {
		due := w == nil
		if !due {
			var err error
			if due, err = r.engine.refreshDue(ctx, w, now()); err != nil && ctx.Err() == nil {
				r.fail("evidence refresh: watching for change: %v", err)
			}
		}
		if due {
			var stop bool
			if w, stop = r.refreshTurn(ctx, w, now); stop {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// refreshTurn refreshes once and logs what it did, readying the serving
// engine when it renewed need certificates. It returns the watch to poll
// next (w again while another refresh is under way or after a failure that
// recorded nothing), and stop once ctx ended.
func (r *refresher) refreshTurn(ctx context.Context, w *refreshWatch, now func() time.Time) (*refreshWatch, bool) {
	rep, next, err := r.engine.refreshOnce(ctx, now)
	switch {
	case ctx.Err() != nil:
		// refreshOnce returns only after its cleanup: the test runs
		// it started are killed and their checkouts removed.
		// A cleanup that failed may come joined with the cancellation.
		if err != nil && (errors.Is(err, checkout.ErrCleanup) || !errors.Is(err, context.Canceled)) {
			r.logf("evidence refresh: cancelled; its cleanup failed: %v", err)
		} else {
			r.logf("evidence refresh: cancelled; what it ran was stopped and cleaned up")
		}
		return w, true
	case errors.Is(err, errRefreshBusy):
		// Refresh after the other one, on the same watch.
	case err != nil:
		r.fail("evidence refresh: %v (tried again at the next change)", err)
		if next == nil && w == nil {
			// Failed before it could record what it relied on:
			// the next certificate stored is the change.
			next = &refreshWatch{}
			next.gen, _ = r.engine.store.evidenceGeneration(ctx)
		}
		if next != nil {
			w = next
		}
	default:
		w, r.failed = next, ""
		if rep.Reproven > 0 || rep.Renewed > 0 {
			r.logf("evidence refresh: %d of %d pieces of evidence re-proven (%d stale), %d of %d need certificates renewed (%d unanswerable), %.1f ms",
				rep.Reproven, rep.Evidence, rep.Stale, rep.Renewed, rep.Needs, rep.Unanswerable, rep.Ms)
		}
		if rep.Renewed > 0 && r.warm != nil && !r.warmRenewed(ctx, now) {
			return w, true
		}
	}
	return w, false
}

// warmRenewed readies the serving engine for the renewed needs and logs
// how it went; it returns false once ctx ended.
func (r *refresher) warmRenewed(ctx context.Context, now func() time.Time) bool {
	started := now()
	n, err := r.warm(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		r.fail("evidence refresh: readying the session for the renewed needs: %v", err)
	default:
		r.logf("evidence refresh: %d needs readied in %.1f ms", n, float64(now().Sub(started).Microseconds())/1000)
	}
	return true
}

func (r *refresher) logf(format string, args ...any) {
	if r.log != nil {
		fmt.Fprintf(r.log, r.prefix+format+"\n", args...)
	}
}

// fail logs an error unless it is the one logged last.
func (r *refresher) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if msg == r.failed {
		return
	}
	r.failed = msg
	r.logf("%s", msg)
}

// startRefresher runs a refresher on the engine open returns, once it
// returns one (nil, nil: none to refresh), until the returned stop is
// called: stop cancels it (a refresh under way stops, a test it runs is
// killed through the context), waits for it and closes its engine.
func startRefresher(ctx context.Context, r refresher, open func(context.Context) (*Engine, error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Background work takes the cores the requests do not want: its
		// thread (and the git and test processes it starts) run at a lower
		// priority; the thread ends with the goroutine.
		threadprio.Lower(refreshNice)
		eng, err := open(ctx)
		if err != nil && ctx.Err() == nil {
			r.logf("evidence refresh: %v (no background refresh in this session)", err)
		}
		if eng == nil || err != nil {
			return
		}
		defer eng.Close()
		r.engine = eng
		r.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
