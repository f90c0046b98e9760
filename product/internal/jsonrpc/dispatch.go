package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// call is one accepted request or notification on its way to a handler.
type call struct {
	req     Request
	key     string // idKey of req.ID; "" for a notification
	handle  Handler
	ctx     context.Context
	cancel  context.CancelCauseFunc
	isInit  bool // the InitMethod request: its outcome sets the session state
	started bool // guarded by Server.mu; false only while queued
	// abandoned is set (under Server.mu) when the client cancelled the
	// running request: it is never answered.
	abandoned bool
	done      chan struct{} // closed when the call has been answered

	afterMu sync.Mutex
	after   []func(written bool) // OnAnswered callbacks
}

// callKey is the context key of the call a handler runs for.
type callKey struct{}

// OnAnswered registers fn to run once the request whose handler was given
// ctx has been answered: with written true when the handler's result went
// out to the client in full, false when it did not (the handler failed or
// panicked, its result could not be encoded, the write failed, or the
// request was a notification, which is never answered). fn runs on the
// goroutine that answered, after the write and before the next serialized
// request starts and before Serve returns. OnAnswered reports false, and
// fn never runs, when ctx is not a handler's context. A handler uses it to
// record what it answered only once it really was answered.
func OnAnswered(ctx context.Context, fn func(written bool)) bool {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return false
	}
	c.afterMu.Lock()
	defer c.afterMu.Unlock()
	c.after = append(c.after, fn)
	return true
}

// answered runs the OnAnswered callbacks.
func (c *call) answered(written bool) {
	c.afterMu.Lock()
	after := c.after
	c.after = nil
	c.afterMu.Unlock()
	for _, fn := range after {
		fn(written)
	}
}

// handleLine dispatches one non-blank input line. It runs on the reader
// goroutine, so lines are admitted in arrival order.
func (s *Server) handleLine(line []byte) {
	m, rerr := decode(line)
	switch {
	case rerr != nil:
		s.respond(m.id, nil, rerr)
	case m.kind == kindResponse:
		s.log.Printf("ignoring a response from the client (id %s)", m.id)
	case m.kind == kindNotification:
		s.notification(m)
	default:
		c, rerr := s.admit(m)
		if rerr != nil && rerr.Code == CodeOverloaded {
			s.log.Printf("request %s refused: %d calls in flight, the limit", m.id, s.opts.MaxInFlight)
		}
		if rerr != nil {
			// On this goroutine: while the client does not read, the
			// write blocks and no further line is read.
			s.respond(m.id, nil, rerr)
		}
		if c != nil && c.isInit {
			// Nothing but ping may run before the session is initialized,
			// so the reader waits for initialize to be answered: a client
			// that sends its next requests right behind it is not refused.
			<-c.done
		}
	}
}

// admit checks a request against the session and starts or queues it. The
// id is recorded before any other check, so a refused request's id counts
// as used too: the rule is "never twice", not "never twice successfully".
func (s *Server) admit(m message) (*call, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, nil // Serve is returning; the line arrived too late to answer
	}
	if s.used[m.key] {
		return nil, errDuplicateID()
	}
	s.used[m.key] = true
	meth, ok := s.methods[m.method]
	switch {
	case m.method == s.opts.CancelMethod && s.opts.CancelMethod != "", ok && meth.Notification:
		return nil, errNotificationWithID(m.method)
	case !ok:
		return nil, errMethodNotFound(m.method)
	}
	if s.active >= s.opts.MaxInFlight {
		return nil, errOverloaded(s.opts.MaxInFlight)
	}
	isInit := s.opts.InitMethod != "" && m.method == s.opts.InitMethod
	if rerr := s.gate(meth, isInit); rerr != nil {
		return nil, rerr
	}
	c := s.newCall(m, meth)
	c.key, c.isInit = m.key, isInit
	s.inflight[m.key] = c
	s.schedule(c, meth.Serialized)
	return c, nil
}

// gate applies the initialization rules; s.mu is held.
func (s *Server) gate(meth Method, isInit bool) *Error {
	switch {
	case isInit && s.init != initNone:
		return errAlreadyInitialized()
	case isInit:
		s.init = initRunning
	case s.init != initDone && !meth.BeforeInit:
		return errNotInitialized()
	}
	return nil
}

// notification runs a client notification; nothing is ever sent back. A
// request method sent without an id is dropped: a request expects an
// answer, a notification can get none, so running it would do work (spawn a
// worker, store a change, freeze a session) whose outcome nobody can learn.
func (s *Server) notification(m message) {
	if s.opts.CancelMethod != "" && m.method == s.opts.CancelMethod {
		s.cancelRequest(m.params)
		return
	}
	meth, ok := s.methods[m.method]
	switch {
	case !ok:
		s.log.Printf("ignoring unknown notification %q", m.method)
		return
	case !meth.Notification:
		s.log.Printf("dropping %q sent without an id: it is a request; nothing runs", m.method)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopping:
	case s.init != initDone && !meth.BeforeInit:
		s.log.Printf("dropping notification %q before initialization", m.method)
	case s.active >= s.opts.MaxInFlight:
		s.log.Printf("dropping notification %q: %d calls in flight", m.method, s.active)
	default:
		s.schedule(s.newCall(m, meth), meth.Serialized)
	}
}

// newCall builds a call whose context ends with the server; s.mu is held.
func (s *Server) newCall(m message, meth Method) *call {
	ctx, cancel := context.WithCancelCause(s.base)
	req := Request{ID: m.id, Method: m.method, Params: m.params, IsNotification: m.kind == kindNotification}
	c := &call{req: req, handle: meth.Handle, cancel: cancel, done: make(chan struct{})}
	c.ctx = context.WithValue(ctx, callKey{}, c)
	return c
}

// schedule queues a serialized call or starts any other; s.mu is held and
// s.stopping is false, so wg.Add cannot race with shutdown's wg.Wait.
func (s *Server) schedule(c *call, serialized bool) {
	s.pending.Add(1)
	s.active++
	if serialized {
		s.queue = append(s.queue, c)
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
		return
	}
	c.started = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(c)
	}()
}

// serialWorker runs the serialized queue one call at a time until shutdown.
func (s *Server) serialWorker() {
	defer s.wg.Done()
	for {
		if c := s.popSerial(); c != nil {
			s.run(c)
			continue
		}
		select {
		case <-s.wake:
		case <-s.base.Done():
			return
		}
	}
}

func (s *Server) popSerial() *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || len(s.queue) == 0 {
		return nil
	}
	c := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	c.started = true
	return c
}

// run calls the handler and answers a request, unless the client
// cancelled it while it ran: MCP says the receiver of a cancellation should
// not answer the request, so whatever the handler made of its cancelled
// context (a partial result, a bypass, an error) is logged, never sent.
// Deciding under s.mu makes "cancelled" and "answered" exclusive: a
// cancellation that arrives after this point finds nothing in flight.
func (s *Server) run(c *call) {
	result, err := s.invoke(c)
	ctxErr := c.ctx.Err()
	c.cancel(nil)
	s.mu.Lock()
	abandoned := c.abandoned
	if !c.req.IsNotification {
		delete(s.inflight, c.key)
	}
	if c.isInit { // before the response is written: see the package doc
		s.init = initDone
		if err != nil {
			s.init = initNone // a failed init may be retried
		}
	}
	s.mu.Unlock()
	defer s.finished() // after the answer is written: a blocked write holds its slot
	defer close(c.done)
	written := false
	switch {
	case abandoned:
		s.log.Printf("request %s was cancelled by the client; not answered (handler error: %v)", c.req.ID, err)
	case !c.req.IsNotification && err != nil:
		s.respond(c.req.ID, nil, s.replyError(c.req.Method, err, ctxErr))
	case !c.req.IsNotification:
		written = s.respond(c.req.ID, result, nil)
	case err != nil:
		s.log.Printf("notification %s: %v", c.req.Method, err)
	}
	c.answered(written)
}

// invoke calls the handler, turning a panic into an internal error so that
// one bad request cannot take the session down.
func (s *Server) invoke(c *call) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic in %s: %v\n%s", c.req.Method, p, debug.Stack())
			result, err = nil, errInternal()
		}
	}()
	return c.handle(c.ctx, c.req)
}

// cancelParams is the payload of the cancel notification; MCP also sends
// an optional "reason", which only matters to the log.
type cancelParams struct {
	RequestID jsontext.Value `json:"requestId"`
	Reason    string         `json:"reason"`
}

// decodeCancelParams decodes the cancel notification's params by the
// envelope's rule (DecodeParams) and the id rule.
func decodeCancelParams(params json.RawMessage) (cancelParams, string, error) {
	var p cancelParams
	if err := DecodeParams(params, &p); err != nil {
		return p, "", err
	}
	key, ok := idKey(json.RawMessage(p.RequestID))
	if !ok {
		return p, "", errors.New("no valid requestId")
	}
	return p, key, nil
}

// cancelRequest cancels the named in-flight request. A queued one is
// dropped and never runs; a running one learns through its context (whose
// cause is ErrCancelledByClient) and is not answered. Neither gets a reply.
func (s *Server) cancelRequest(params json.RawMessage) {
	p, key, err := decodeCancelParams(params)
	if err != nil {
		s.log.Printf("ignoring malformed cancellation: %v", err)
		return
	}
	c, queued := s.takeForCancel(key)
	if c == nil {
		s.log.Printf("ignoring cancellation of request %s: not in flight or not cancellable", p.RequestID)
		return
	}
	s.log.Printf("cancelling request %s (reason %q); it will not be answered", p.RequestID, p.Reason)
	c.cancel(ErrCancelledByClient)
	if queued {
		close(c.done) // it will never run
		s.finished()
	}
}

// finished releases an accepted call's slot: it was answered (or dropped)
// and is no longer in flight.
func (s *Server) finished() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
	s.pending.Done()
}

// takeForCancel finds a cancellable in-flight call and, if it is still
// queued, removes it so the worker never sees it.
func (s *Server) takeForCancel(key string) (c *call, queued bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c = s.inflight[key]
	if c == nil || c.isInit {
		return nil, false
	}
	if c.started {
		c.abandoned = true
		return c, false
	}
	delete(s.inflight, key)
	for i, q := range s.queue {
		if q == c {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	return c, true
}
