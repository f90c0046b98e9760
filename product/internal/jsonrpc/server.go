package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// Handler handles one request or notification. ctx is cancelled when the
// client cancels this request id (see Options.CancelMethod) or the server
// stops. A returned *Error (possibly wrapped) is sent as is; any other error
// is sent as -32603 "internal error" with the detail only in the log. The
// result of a notification is discarded.
type Handler func(ctx context.Context, req Request) (result any, err error)

// Method is one entry of the method table.
type Method struct {
	Handle Handler
	// Serialized requests run one at a time, in arrival order, on one
	// worker; the others run concurrently as they arrive.
	Serialized bool
	// BeforeInit allows the method before the session is initialized
	// (e.g. "ping"). Options.InitMethod is always allowed.
	BeforeInit bool
	// Notification marks a method the client only ever notifies (it has
	// no answer, e.g. "notifications/initialized"). Every other method is a
	// request: sent without an id it is dropped and nothing runs, and a
	// notification method sent with an id is refused with -32600.
	Notification bool
}

// Options configures a Server. The zero value is usable: 1 MiB lines, no
// log, no cancellation method, no initialization required.
type Options struct {
	// DrainOnEOF lets every accepted request finish and be answered after
	// the input ends, instead of cancelling them: a stdio client may send
	// its last requests and close its input at once. ctx still cuts it short.
	DrainOnEOF bool
	// MaxLine bounds one input line in bytes, newline excluded (default
	// 1 MiB). A longer line is answered with -32600 (id null) and skipped.
	MaxLine int
	// Log receives diagnostics; never the protocol stream. nil discards.
	Log io.Writer
	// CancelMethod is the notification that cancels an in-flight request,
	// with params {"requestId": id, ...} (MCP: "notifications/cancelled").
	// "" disables cancellation by the client.
	CancelMethod string
	// InitMethod initializes the session (MCP: "initialize"): the session
	// is initialized once its handler returns without error. "" means the
	// session starts initialized.
	InitMethod string
	// MaxInFlight bounds the calls accepted and not yet finished —
	// running, queued, or writing their answer — (default
	// DefaultMaxInFlight). A request beyond it is answered -32001 "server
	// overloaded" by the reader itself and a notification beyond it is
	// dropped, so a client that sends without reading stalls its own
	// input instead of growing the server.
	MaxInFlight int
}

// DefaultMaxLine is the line bound used when Options.MaxLine is not positive.
const DefaultMaxLine = 1 << 20

// DefaultMaxInFlight is the bound on calls in flight used when
// Options.MaxInFlight is not positive.
const DefaultMaxInFlight = 64

type initState int

const (
	initNone initState = iota
	initRunning
	initDone
)

// Server serves one session: construct it with NewServer and call Serve once.
type Server struct {
	methods map[string]Method
	opts    Options
	log     *log.Logger

	wmu    sync.Mutex     // serializes writes; guards the fields below
	out    *ndjson.Writer // nil until Serve starts
	closed bool           // Serve has returned
	werr   error          // first write error; later writes are not tried

	mu       sync.Mutex // guards the session state below
	served   bool
	stopping bool
	init     initState
	used     map[string]bool  // every accepted request id key, for the session
	inflight map[string]*call // accepted requests not yet answered
	queue    []*call          // serialized calls not yet started, FIFO
	active   int              // accepted calls not yet finished (Options.MaxInFlight)
	wake     chan struct{}    // nudges the serial worker; capacity 1
	base     context.Context  // parent of every handler context
	wg       sync.WaitGroup   // handler goroutines and the serial worker
	pending  sync.WaitGroup   // accepted calls not yet answered (drained at EOF)
}

// NewServer returns a server for methods, which it copies. It panics if a
// method has no handler or Options.InitMethod is not in the table: those
// are programming errors, and the second would refuse every session.
// Options.CancelMethod is handled by the server; a table entry for it is
// never called.
func NewServer(methods map[string]Method, opts Options) *Server {
	s := &Server{
		methods:  make(map[string]Method, len(methods)),
		opts:     opts,
		used:     make(map[string]bool),
		inflight: make(map[string]*call),
		wake:     make(chan struct{}, 1),
	}
	for name, m := range methods {
		if m.Handle == nil {
			panic(fmt.Sprintf("jsonrpc: method %q has no handler", name))
		}
		s.methods[name] = m
	}
	if m, ok := s.methods[opts.InitMethod]; opts.InitMethod != "" && (!ok || m.Notification) {
		panic(fmt.Sprintf("jsonrpc: init method %q is not a request method of the table", opts.InitMethod))
	}
	if s.opts.MaxLine <= 0 {
		s.opts.MaxLine = DefaultMaxLine
	}
	if s.opts.MaxInFlight <= 0 {
		s.opts.MaxInFlight = DefaultMaxInFlight
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	s.log = log.New(logw, "jsonrpc: ", log.LstdFlags|log.Lmicroseconds)
	if opts.InitMethod == "" {
		s.init = initDone
	}
	return s
}

// Serve reads lines from in and writes responses to out until in reaches
// EOF, then stops (see the package doc) and returns nil; when ctx ends first
// it stops the same way and returns ctx.Err(). A read error other than EOF
// is returned after stopping.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	base, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.begin(base, out); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.serialWorker()
	readDone := make(chan error, 1)
	go func() { readDone <- s.readLoop(in) }()
	var err error
	select {
	case err = <-readDone:
		if err == nil && s.opts.DrainOnEOF {
			err = s.drain(ctx)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.shutdown(stop)
	return err
}

// drain lets every accepted call finish after the client closed its input:
// a client may send its last requests and close stdin at once, and still
// read the answers. ctx ending cuts the drain short.
func (s *Server) drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.pending.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) begin(base context.Context, out io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served {
		return errors.New("jsonrpc: Serve called twice")
	}
	s.served, s.base = true, base
	s.wmu.Lock()
	s.out = ndjson.NewWriter(out)
	s.wmu.Unlock()
	return nil
}

// shutdown refuses new work, answers the queue, cancels running handlers
// and waits for them; only then is out closed to writes.
func (s *Server) shutdown(stop context.CancelFunc) {
	s.mu.Lock()
	s.stopping = true
	queued := s.queue
	s.queue = nil
	for _, c := range queued {
		delete(s.inflight, c.key)
	}
	s.mu.Unlock()
	stop()
	for _, c := range queued {
		c.cancel(nil)
		if !c.req.IsNotification {
			s.respond(c.req.ID, nil, errCancelled())
		}
		close(c.done) // it will never run
		s.finished()
	}
	s.wg.Wait()
	s.wmu.Lock()
	s.closed = true
	s.wmu.Unlock()
}

// readLoop feeds lines to the dispatcher until EOF or shutdown.
func (s *Server) readLoop(in io.Reader) error {
	lr := ndjson.NewReader(in, s.opts.MaxLine)
	lr.SkipTooLong = true // answered with an error; the server stays up
	for !s.isStopping() {
		line, err := lr.Next()
		switch {
		case errors.Is(err, ndjson.ErrTooLong):
			s.log.Printf("input line longer than %d bytes skipped", s.opts.MaxLine)
			s.respond(nil, nil, errLineTooLong(s.opts.MaxLine))
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("jsonrpc: read: %w", err)
		case !isBlank(line):
			s.handleLine(line)
		}
	}
	return nil
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// Notify sends a server-to-client notification; params may be nil. It
// returns ErrClosed unless Serve is running.
func (s *Server) Notify(method string, params any) error {
	msg := notification{JSONRPC: "2.0", Method: method}
	if params != nil {
		raw, err := marshal(params)
		if err != nil {
			return fmt.Errorf("jsonrpc: encode %s params: %w", method, err)
		}
		msg.Params = raw
	}
	line, err := marshal(msg)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode %s: %w", method, err)
	}
	return s.write(line)
}

// respond writes the response to id (null if nil): e if set, else result,
// where a nil result is sent as {} because MCP results are objects. It
// reports whether result was written in full (not an error in its place).
func (s *Server) respond(id ID, result any, e *Error) bool {
	msg := response{JSONRPC: "2.0", ID: id, Error: e}
	if id == nil {
		msg.ID = nullID
	}
	if e == nil {
		msg.Result = s.encodeResult(result)
		if msg.Result != nil {
			return s.write(resultLine(msg.ID, msg.Result)) == nil
		}
		msg.Error = errInternal()
	}
	line, err := marshal(msg)
	if err != nil { // only Error.Data can fail: send the error without it
		s.log.Printf("encode error data for id %s: %v", msg.ID, err)
		msg.Error = &Error{Code: msg.Error.Code, Message: msg.Error.Message}
		line, _ = marshal(msg)
	}
	werr := s.write(line) // a failed write is logged there; the peer is gone
	return werr == nil && msg.Error == nil
}

// encodeResult returns nil if result cannot be encoded.
func (s *Server) encodeResult(result any) []byte {
	raw, err := marshal(result)
	if err != nil {
		s.log.Printf("encode result: %v", err)
		return nil
	}
	if string(raw) == "null" {
		return []byte("{}")
	}
	return raw
}

// write sends one encoded line. After the first failure nothing more is
// tried: a broken stdout does not heal, and a partial line must not be
// followed by another.
func (s *Server) write(line []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.out == nil || s.closed {
		return ErrClosed
	}
	if s.werr != nil {
		return s.werr
	}
	if err := s.out.WriteLine(line); err != nil {
		s.werr = fmt.Errorf("jsonrpc: write: %w", err)
		s.log.Print(s.werr)
		return s.werr
	}
	return nil
}
