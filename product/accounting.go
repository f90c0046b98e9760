package product

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/threadprio"
)

// answerAccount is the accounting of one answer: its ledger step, its
// resolution record and its economic observation. It is recorded after the
// answer was given (doc.go, "Durability"), never before.
type answerAccount struct {
	Root, Session string
	Task          string // the step's task wording
	Result        NeedResult
	Plan          Plan
	Observation   *observation // nil when the answer is not priced (not a hit)
	Cost          resolutionCost
}

// maxAccountQueue bounds the accounting waiting to be written: at most
// that many answers' accounting can be lost to a crash. A full queue makes
// the next answer wait for the writer.
const maxAccountQueue = 256

// accountItem is one hand-over to the accountant.
type accountItem struct {
	sessions []sessionStart // written before the answers
	answers  []answerAccount
	stats    *statRows
	synced   chan struct{} // closed once everything queued before it was written
}

// accountant writes the accounting of answers and the stat-cache entries
// off the request path: one goroutine takes what is queued, drains
// whatever else is waiting and commits it all in one transaction (a group
// commit). It commits on a connection of its own at synchronous NORMAL
// (store_pragma.go, openAccountingConn): no commit of its waits for an
// fsync, which the durability rule allows for accounting alone.
type accountant struct {
	store *store
	queue chan accountItem
	done  chan struct{}
	conn  *accountingConn // the writer's connection, nil until its first commit or after it broke

	mu     sync.RWMutex // held for reading by senders, for writing by close
	closed bool

	errMu sync.Mutex
	err   error // the first write failure, reported by close
}

func newAccountant(s *store) *accountant {
	a := &accountant{store: s, queue: make(chan accountItem, maxAccountQueue), done: make(chan struct{})}
	go a.run()
	return a
}

// enqueue hands item to the writer; it waits while the queue is full. After
// close nothing is accepted: it reports false.
func (a *accountant) enqueue(item accountItem) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return false
	}
	a.queue <- item
	return true
}

// flush waits until everything queued before it has been written, or failed
// to be (close reports failures; what must find a row checks for it).
func (a *accountant) flush(ctx context.Context) error {
	item := accountItem{synced: make(chan struct{})}
	if !a.enqueue(item) {
		return errors.New("accounting is closed")
	}
	select {
	case <-item.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close writes what is queued, stops the writer and returns the first
// write failure.
func (a *accountant) close() error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	<-a.done
	return a.firstError()
}

func (a *accountant) firstError() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}

func (a *accountant) fail(err error) {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// accountLinger is how long the accountant lets a batch gather after its
// first item before it commits (unless the batch fills, someone waits in
// flush, or the accountant closes): answers given in a stream then share a
// transaction, which writes each page they touch once, instead of costing
// a transaction each. It is short because a batch is committed in one
// burst of CPU, which delays whatever request it overlaps on a machine
// with few cores: needlebench experiment mcp-hit-latency measured hit p99
// worse than with a commit per answer at 20 ms, and no worse at 2 ms,
// with the same p50. It is the "last moments" of doc.go's durability rule:
// the accounting a crash may lose is that of at most this long of
// answers (and the commit after it), and at most maxAccountQueue of them.
const accountLinger = 2 * time.Millisecond

// accountNice is how much lower than the process's the CPU priority of
// the accountant's thread is: on a machine with few cores, the commit of
// answers already given must not delay the next request (nor the client
// waiting for it); the writer takes the cores nobody else wants.
const accountNice = 10

func (a *accountant) run() {
	defer close(a.done)
	defer a.dropConn() // before done: the store may close once done is
	threadprio.Lower(accountNice)
	linger := time.NewTimer(accountLinger)
	linger.Stop()
	for item := range a.queue {
		batch := []accountItem{item}
		if item.synced == nil {
			linger.Reset(accountLinger)
		gather:
			for len(batch) < maxAccountQueue {
				select {
				case next, ok := <-a.queue:
					if !ok {
						break gather
					}
					batch = append(batch, next)
					if next.synced != nil {
						break gather
					}
				case <-linger.C:
					break gather
				}
			}
			linger.Stop()
		}
	drain:
		for len(batch) < maxAccountQueue {
			select {
			case next, ok := <-a.queue:
				if !ok {
					break drain
				}
				batch = append(batch, next)
			default:
				break drain
			}
		}
		a.commit(batch)
	}
}

// commit writes a batch in one transaction. When that fails, each answer
// is tried on its own so that one bad record loses only itself.
func (a *accountant) commit(batch []accountItem) {
	var sessions []sessionStart
	var answers []answerAccount
	var stats []*statRows
	for _, it := range batch {
		sessions = append(sessions, it.sessions...)
		answers = append(answers, it.answers...)
		if it.stats != nil {
			stats = append(stats, it.stats)
		}
	}
	if len(sessions) > 0 || len(answers) > 0 || len(stats) > 0 {
		ctx := context.Background() // the writer outlives the requests it writes for
		if err := a.write(ctx, sessions, answers, stats); err != nil {
			for _, s := range sessions {
				if err := a.write(ctx, []sessionStart{s}, nil, nil); err != nil {
					a.fail(err)
				}
			}
			for _, ans := range answers {
				if err := a.write(ctx, nil, []answerAccount{ans}, nil); err != nil {
					a.fail(err)
				}
			}
			_ = a.write(ctx, nil, nil, stats) // a lost stat entry costs a rehash, never correctness
		}
	}
	for _, it := range batch {
		if it.synced != nil {
			close(it.synced)
		}
	}
}

// write commits on the accountant's connection, taken on first use. When
// it cannot be had, the commit goes to the pool, durably: slower, never
// less safe. A connection that broke is dropped and taken again next
// time; a commit that failed for its rows (a constraint) keeps it.
func (a *accountant) write(ctx context.Context, sessions []sessionStart, answers []answerAccount, stats []*statRows) error {
	if a.conn == nil {
		a.conn, _ = a.store.openAccountingConn(ctx)
	}
	err := a.store.putAccountingOn(ctx, a.conn, sessions, answers, stats)
	if a.conn != nil && a.conn.broken(err) {
		a.dropConn()
	}
	return err
}

func (a *accountant) dropConn() {
	if a.conn != nil {
		closeAccountingConn(a.conn)
		a.conn = nil
	}
}

// answerHook holds the accounting of a request's answers until the
// transport says whether the answer was written: a transport that writes
// answers (MCP over stdio) puts one in the request's context.
type answerHook struct {
	mu   sync.Mutex
	held []answerAccount
}

type answerHookKey struct{}

// withAnswerHook returns ctx carrying a new hook.
func withAnswerHook(ctx context.Context) (context.Context, *answerHook) {
	h := &answerHook{}
	return context.WithValue(ctx, answerHookKey{}, h), h
}

func answerHookFrom(ctx context.Context) *answerHook {
	h, _ := ctx.Value(answerHookKey{}).(*answerHook)
	return h
}

func (h *answerHook) hold(a answerAccount) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, a)
}

// answered hands the held accounting to e's accountant when the answer was
// written, and drops it when it was not: an answer that never reached the
// client is never recorded.
func (h *answerHook) answered(e *Engine, written bool) {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	if written && len(held) > 0 {
		e.acct.enqueue(accountItem{answers: held})
	}
}

// account records the accounting of an answer: held by the request's
// answer hook until the transport wrote the answer, or, for a caller that
// has the answer once NeedContext returns (the API, the CLI), queued now.
func (e *Engine) account(ctx context.Context, a answerAccount) {
	if h := answerHookFrom(ctx); h != nil {
		h.hold(a)
		return
	}
	e.acct.enqueue(accountItem{answers: []answerAccount{a}})
}

// flushStats queues the stat-cache entries recorded since the last flush.
func (e *Engine) flushStats() {
	if rows := e.stats.takePending(); rows != nil {
		e.acct.enqueue(accountItem{stats: rows})
	}
}
