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
// publishes each new one (then the new accounting totals), and the
// lifecycle journal (change_events) likewise, through the lifecycles
// updated since the last pass, each entry with its lifecycle's summary,
// replayed and checked. Events are read
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
	// since is the newest lifecycle update seen, and seqs how far each
	// lifecycle's journal was published (or present at start).
	since time.Time
	seqs  map[string]int
}

// journalSlack is how far before the newest update seen the tail looks
// again. Two reasons: the stamps are RFC3339Nano, whose trimmed fractions
// do not sort as strings within a second (".12Z" > ".1234Z"), and a writer
// may stamp its transaction before another one commits a newer stamp. The
// lifecycles read again are skipped by their seq.
const journalSlack = time.Minute

// journalFloor is the updated_at bound of the tail's query: a prefix that
// sorts at or below every stamp of the second journalSlack before since.
func journalFloor(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return since.Add(-journalSlack).UTC().Format("2006-01-02T15:04:05")
}

// markSeen moves since to the update at, a stored stamp.
func (t *eventTail) markSeen(at string) {
	if u, err := time.Parse(time.RFC3339Nano, at); err == nil && u.After(t.since) {
		t.since = u
	}
}

// tailBatch bounds the rows published per pass.
const tailBatch = 200

func startEventTail(ctx context.Context, rt *Runtime) (*eventTail, error) {
	last, err := rt.store.lastResolutionID(ctx)
	if err != nil {
		return nil, err
	}
	t := &eventTail{rt: rt, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), lastID: last,
		seqs: map[string]int{}}
	present, err := rt.store.lifecyclesUpdatedSince(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, p := range present {
		t.seqs[p.ID] = p.Seq
		t.markSeen(p.UpdatedAt)
	}
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

// publishNew publishes every resolution and lifecycle journal entry
// committed since the last pass.
func (t *eventTail) publishNew(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.publishJournal(ctx); err != nil {
		t.rt.log.Printf("event stream: lifecycles: %v", err)
	}
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

// publishJournal publishes the lifecycle journal entries committed since
// the last pass, each with its lifecycle's summary as it is now: each
// lifecycle's entries in journal order.
func (t *eventTail) publishJournal(ctx context.Context) error {
	moved, err := t.rt.store.lifecyclesUpdatedSince(ctx, journalFloor(t.since))
	if err != nil {
		return err
	}
	for _, p := range moved {
		t.markSeen(p.UpdatedAt)
		if p.Seq <= t.seqs[p.ID] {
			continue
		}
		changes, err := t.lifecycleChanges(ctx, p, t.seqs[p.ID])
		if err != nil {
			// A lifecycle that does not replay is never shown; its reads
			// fail too. Skip it rather than stall the stream.
			t.rt.log.Printf("event stream: lifecycle %s: %v", p.ID, err)
		}
		for _, data := range changes {
			if _, err := t.rt.broker.Publish(web.EventLifecycle, data); err != nil {
				return nil // the stream is closed: shutting down
			}
		}
		t.seqs[p.ID] = p.Seq
	}
	return nil
}

// lifecycleChanges is the event data of a lifecycle's journal entries
// after seq: each entry with the lifecycle's summary as it is now.
func (t *eventTail) lifecycleChanges(ctx context.Context, p lifecycleProgress, after int) ([][]byte, error) {
	e, err := t.rt.rootEngine(ctx, p.Root)
	if err != nil {
		return nil, err
	}
	evs, err := e.LifecycleEvents(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	summary, err := t.rt.lifecycleSummary(ctx, p.lifecycleRef)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, ev := range evs {
		if ev.Seq <= after {
			continue
		}
		data, err := json.Marshal(web.LifecycleChange{Summary: summary, Event: lifecycleEventDTO(ev)})
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return out, nil
}
