package product

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/web"
)

// eventTail turns committed rows into the runtime's event stream: it
// follows the resolutions table past the last row it published and
// publishes each new one (then the new accounting totals). Events are read
// back from SQLite after commit, so none is published for a write that
// rolled back, and none is lost when the row was written by another
// process (a command that ran before the runtime started, a client of
// another build): the runtime's own commits wake it at once, a timer
// catches the others.
type eventTail struct {
	rt     *Runtime
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	lastID int64 // the newest resolution published (or present at start)
}

// tailBatch bounds the rows published per pass.
const tailBatch = 200

func startEventTail(ctx context.Context, rt *Runtime) (*eventTail, error) {
	last, err := rt.store.lastResolutionID(ctx)
	if err != nil {
		return nil, err
	}
	t := &eventTail{rt: rt, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), lastID: last}
	rt.store.onCommit = t.nudge
	go t.run()
	return t, nil
}

// nudge wakes the tail; it never blocks a committing writer.
func (t *eventTail) nudge() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *eventTail) run() {
	defer close(t.done)
	tick := time.NewTicker(t.rt.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-t.quit:
			return
		case <-t.wake:
		case <-tick.C:
		}
		if err := t.publishNew(context.Background()); err != nil {
			t.rt.log.Printf("event stream: %v", err)
		}
	}
}

// publishNew publishes every resolution committed since the last pass.
func (t *eventTail) publishNew(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	published := 0
	for {
		rows, err := t.rt.store.resolutionsAfter(ctx, t.lastID, tailBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			data, err := json.Marshal(resolutionDTO(r))
			if err != nil {
				return err
			}
			if _, err := t.rt.broker.Publish(web.EventResolution, data); err != nil {
				return nil // the stream is closed: shutting down
			}
			t.lastID = r.ID
			published++
		}
		if len(rows) < tailBatch {
			break
		}
	}
	if published == 0 {
		return nil
	}
	acct, err := t.rt.accounting(ctx, false)
	if err != nil {
		return err
	}
	data, err := json.Marshal(acct)
	if err != nil {
		return err
	}
	t.rt.broker.Publish(web.EventAccounting, data)
	return nil
}

// stop ends the tail; safe to call more than once.
func (t *eventTail) stop() {
	t.once.Do(func() {
		close(t.quit)
		<-t.done
	})
}
