package sse

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Defaults of Options.
const (
	DefaultRing         = 1024
	DefaultBuffer       = 256
	DefaultHeartbeat    = 15 * time.Second
	DefaultRetry        = 2 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxSubscribers bounds the live subscriptions.
	DefaultMaxSubscribers = 32
	// MaxData bounds one event's data.
	MaxData = 64 << 10
)

// ResetType is the type of the event that starts a stream whose resume
// point is gone.
const ResetType = "reset"

// ErrClosed is returned by Publish and Subscribe after Close.
var ErrClosed = errors.New("sse: broker closed")

// ErrTooMany is returned by Subscribe when Options.MaxSubscribers
// subscriptions are live.
var ErrTooMany = errors.New("sse: too many subscribers")

// Options configure a Broker; zero values take the defaults.
type Options struct {
	// Ring is how many recent events are kept for resume.
	Ring int
	// Buffer is each subscriber's queue; a subscriber that falls this far
	// behind is dropped.
	Buffer int
	// Heartbeat is the interval of keep-alive comments (negative: none).
	Heartbeat time.Duration
	// Retry is the reconnection delay sent to clients.
	Retry time.Duration
	// WriteTimeout bounds every write to a client.
	WriteTimeout time.Duration
	// MaxSubscribers bounds the live subscriptions (default
	// DefaultMaxSubscribers); ServeHTTP answers one more 503.
	MaxSubscribers int
	// Epoch fixes the id epoch (for tests); random when empty.
	Epoch string
}

// Event is one published event.
type Event struct {
	ID   string // "<epoch>-<seq>"
	Seq  uint64
	Type string
	Data []byte
}

// Broker fans events out to subscribers.
type Broker struct {
	opts  Options
	epoch string

	mu     sync.Mutex
	seq    uint64  // last assigned
	ring   []Event // circular, len ≤ opts.Ring
	head   int     // index of the oldest event once the ring is full
	subs   map[*Subscription]struct{}
	closed bool
	done   chan struct{}
}

// New returns a Broker.
func New(opts Options) *Broker {
	if opts.Ring <= 0 {
		opts.Ring = DefaultRing
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxSubscribers <= 0 {
		opts.MaxSubscribers = DefaultMaxSubscribers
	}
	epoch := opts.Epoch
	if epoch == "" {
		b := make([]byte, 4)
		rand.Read(b)
		epoch = hex.EncodeToString(b)
	}
	return &Broker{opts: opts, epoch: epoch, subs: make(map[*Subscription]struct{}), done: make(chan struct{})}
}

// LastID returns the id of the newest event ("<epoch>-0" before any), the
// resume point to stamp on a snapshot read after it.
func (b *Broker) LastID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id(b.seq)
}

func (b *Broker) id(seq uint64) string { return b.epoch + "-" + strconv.FormatUint(seq, 10) }

// checkEvent validates what Publish is given: a type of [a-z0-9._-] and
// data of valid UTF-8 without CR (a line end to an SSE parser).
func checkEvent(typ string, data []byte) error {
	if typ == "" || len(typ) > 64 || strings.Trim(typ, "abcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
		return fmt.Errorf("sse: event type %q: want 1-64 of [a-z0-9._-]", typ)
	}
	if len(data) > MaxData {
		return fmt.Errorf("sse: event data of %d bytes exceeds %d", len(data), MaxData)
	}
	if !utf8.Valid(data) || strings.IndexByte(string(data), '\r') >= 0 {
		return errors.New("sse: event data must be UTF-8 without CR")
	}
	return nil
}

// Publish appends an event and hands it to every subscriber, dropping the
// ones whose queue is full. It never blocks on a subscriber.
func (b *Broker) Publish(typ string, data []byte) (Event, error) {
	if err := checkEvent(typ, data); err != nil {
		return Event{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return Event{}, ErrClosed
	}
	b.seq++
	ev := Event{ID: b.id(b.seq), Seq: b.seq, Type: typ, Data: append([]byte(nil), data...)}
	if len(b.ring) < b.opts.Ring {
		b.ring = append(b.ring, ev)
	} else {
		b.ring[b.head] = ev
		b.head = (b.head + 1) % len(b.ring)
	}
	for s := range b.subs {
		select {
		case s.c <- ev:
		default:
			s.dropped = true
			b.removeLocked(s)
		}
	}
	return ev, nil
}

// Subscription is one subscriber's view of the stream: first Reset or
// Backlog, then C.
type Subscription struct {
	// Backlog holds the ring's events after the resume id, oldest first.
	Backlog []Event
	// Reset is set when the resume id could not be honoured; ResetReason
	// says why and ResetID is the newest event's id at subscription.
	Reset       bool
	ResetReason string
	ResetID     string
	// C delivers live events; it is closed when the subscription ends:
	// Close, the broker's Close, or a full queue (Dropped).
	C <-chan Event

	c       chan Event
	b       *Broker
	dropped bool // guarded by b.mu
}

// Dropped reports whether the subscription ended because it fell behind.
func (s *Subscription) Dropped() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.dropped
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.removeLocked(s)
}

func (b *Broker) removeLocked(s *Subscription) {
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.c)
	}
}

// Subscribe starts a subscription resuming after lastID ("" for live
// events only); ErrTooMany when Options.MaxSubscribers are live. Backlog and the live channel are cut at one instant, so
// nothing falls between them.
func (b *Broker) Subscribe(lastID string) (*Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if len(b.subs) >= b.opts.MaxSubscribers {
		return nil, ErrTooMany
	}
	c := make(chan Event, b.opts.Buffer)
	s := &Subscription{C: c, c: c, b: b}
	if lastID != "" {
		if reason := b.resumeLocked(lastID, s); reason != "" {
			s.Reset, s.ResetReason, s.ResetID = true, reason, b.id(b.seq)
		}
	}
	b.subs[s] = struct{}{}
	return s, nil
}

// resumeLocked fills s.Backlog with the events after lastID, or returns
// why it cannot.
func (b *Broker) resumeLocked(lastID string, s *Subscription) string {
	epoch, num, ok := strings.Cut(lastID, "-")
	if !ok || epoch != b.epoch {
		return "unknown event id (the server restarted or the id is not ours)"
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil || seq > b.seq {
		return "unknown event id"
	}
	oldest := b.seq - uint64(len(b.ring)) + 1 // seq of the ring's oldest event
	if seq+1 < oldest {
		return fmt.Sprintf("events after %s are no longer kept (the oldest kept is %s)", lastID, b.id(oldest))
	}
	for i := range len(b.ring) {
		ev := b.ring[(b.head+i)%len(b.ring)]
		if ev.Seq > seq {
			s.Backlog = append(s.Backlog, ev)
		}
	}
	return ""
}

// Close ends every subscription and refuses new ones. It is safe to call
// more than once.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
	for s := range b.subs {
		b.removeLocked(s)
	}
}

// Subscribers returns the number of live subscriptions.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// ServeHTTP streams events to one client, resuming after its Last-Event-ID
// header or, failing that, its last_event_id query parameter.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sub, ok := b.subscribeRequest(w, r)
	if !ok {
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(chunk []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(b.opts.WriteTimeout))
		if _, err := w.Write(chunk); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(b.streamHead(sub)) {
		return
	}
	var tick <-chan time.Time
	if b.opts.Heartbeat > 0 {
		t := time.NewTicker(b.opts.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok || !send(Encode(ev)) {
				return
			}
		case <-tick:
			if !send([]byte(": keep-alive\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		case <-b.done:
			return
		}
	}
}

// subscribeRequest subscribes a GET request after the event ID it last
// saw; otherwise it answers the request with the error and reports false.
func (b *Broker) subscribeRequest(w http.ResponseWriter, r *http.Request) (*Subscription, bool) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return nil, false
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	sub, err := b.Subscribe(last)
	if errors.Is(err, ErrTooMany) {
		w.Header().Set("Retry-After", strconv.Itoa(max(int(b.opts.Retry.Seconds()), 1)))
		http.Error(w, fmt.Sprintf("too many event streams (the limit is %d)", b.opts.MaxSubscribers), http.StatusServiceUnavailable)
		return nil, false
	}
	if err != nil {
		http.Error(w, "event stream closed", http.StatusServiceUnavailable)
		return nil, false
	}
	return sub, true
}

// streamHead is what a stream starts with, sent in one write: the retry
// interval, a reset event when the client's position is lost, the backlog.
func (b *Broker) streamHead(sub *Subscription) []byte {
	head := fmt.Appendf(nil, "retry: %d\n\n", b.opts.Retry.Milliseconds())
	if sub.Reset {
		data, _ := json.Marshal(struct {
			Reason string `json:"reason"`
		}{sub.ResetReason})
		head = append(head, Encode(Event{ID: sub.ResetID, Type: ResetType, Data: data})...)
	}
	for _, ev := range sub.Backlog {
		head = append(head, Encode(ev)...)
	}
	return head
}

// Encode spells ev in the event stream format: id, event, one data line per
// line of Data, and the blank line that dispatches it.
func Encode(ev Event) []byte {
	var out []byte
	if ev.ID != "" {
		out = append(out, "id: "+ev.ID+"\n"...)
	}
	if ev.Type != "" {
		out = append(out, "event: "+ev.Type+"\n"...)
	}
	for line := range strings.SplitSeq(string(ev.Data), "\n") {
		out = append(out, "data: "+line+"\n"...)
	}
	return append(out, '\n')
}
