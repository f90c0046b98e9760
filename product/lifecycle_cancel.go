package product

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/needle-dev/needle/product/internal/filelock"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Cancelling a lifecycle reaches the work in flight. The cancellation is
// a committed transition (cancel_requested); the runner of the lifecycle,
// wherever it runs, learns of it while its phase's adapter runs and
// cancels the adapter's context: a worker's turn is interrupted and its
// process group killed, a test run's process group killed, the checkout
// removed, and the stop recorded (invocation.go) — all before the runner
// releases the lifecycle's lease. CancelLifecycle returns only once it
// could take that lease, so when it returns the runner's cleanup is done.
//
// The runner learns of it in two ways. A runner in the same process (the
// resident runtime runs every command over one store; a test) is told at
// once through the store's register of running adapters. A runner in
// another process watches the lifecycle's state digest while its adapter
// runs (cancelPoll): any commit it did not make is a cancellation (the
// lease keeps a second runner away), and it stops.

// cancelPoll is how often a runner looks for a cancellation committed by
// another process.
const cancelPoll = 200 * time.Millisecond

// errLifecycleCancelled is the cause of an adapter's context that a
// cancellation of its lifecycle ended.
var errLifecycleCancelled = errors.New("the lifecycle was cancelled")

// watchCancel returns the context an adapter of v runs under: it ends
// when v is cancelled (here or in another process), with cause
// errLifecycleCancelled. stop releases the watch.
func (k *lifecycleKernel) watchCancel(ctx context.Context, v lifecycleView) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	remove := k.e.store.runners.add(v.ID, cancel)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(cancelPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			digest, status, err := k.e.store.lifecycleHead(ctx, v.ID)
			if err == nil && digest != v.Stored.StateDigest && status == lifecycle.StatusCancelled {
				cancel(errLifecycleCancelled)
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		remove()
		cancel(nil)
	}
}

// cancelledRun is what a runner whose phase a cancellation interrupted
// returns: its adapter stopped and cleaned up, nothing was committed.
func cancelledRun(id string, inv lifecycle.Invoke) error {
	return &Error{Op: "lifecycle.run", Kind: kindConflict, Err: fmt.Errorf(
		"lifecycle %s was cancelled while its %s phase ran: the phase was interrupted, its work cleaned up and the stop recorded; nothing was committed",
		id, inv.Phase)}
}

// awaitRunner waits until no runner holds lifecycle id's lease: a runner
// in flight has stopped and cleaned up. ctx bounds the wait. The locks
// directory is made as a runner makes it: a lifecycle cancelled before
// any run of this data directory has no runner to wait for.
func (e *Engine) awaitRunner(ctx context.Context, id string) error {
	dir := filepath.Join(e.cfg.DataDir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &Error{Op: "lifecycle.cancel", Kind: kindIO, Err: err}
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(dir, id+".lock"))
	if err != nil {
		return &Error{Op: "lifecycle.cancel", Kind: kindIO, Err: fmt.Errorf("wait for the runner of %s to stop: %w", id, err)}
	}
	unlock()
	return nil
}
