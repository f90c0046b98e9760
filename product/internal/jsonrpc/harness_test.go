package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// failsafe only bounds a hung test; no test waits for it to elapse.
const failsafe = 10 * time.Second

// peer is the client end of one served session: raw lines go in through an
// io.Pipe (so the test can close it for EOF), replies come back through a
// net.Pipe and every one of them is checked to be a JSON-RPC message.
type peer struct {
	tb     testing.TB
	srv    *Server
	in     *io.PipeWriter
	srvOut net.Conn
	lines  chan string // output lines without their newline
	log    *lockedBuffer
	served chan error // Serve's result, once
	once   sync.Once
	result error
	nextID int
}

func startPeer(tb testing.TB, methods map[string]Method, opts Options) *peer {
	tb.Helper()
	return startPeerContext(tb, context.Background(), methods, opts)
}

func startPeerContext(tb testing.TB, ctx context.Context, methods map[string]Method, opts Options) *peer {
	tb.Helper()
	p := &peer{tb: tb, lines: make(chan string, 1024), log: &lockedBuffer{}, served: make(chan error, 1)}
	if opts.Log == nil {
		opts.Log = p.log
	}
	p.srv = NewServer(methods, opts)
	inR, inW := io.Pipe()
	srvOut, cliOut := net.Pipe()
	p.in, p.srvOut = inW, srvOut
	go func() { p.served <- p.srv.Serve(ctx, inR, srvOut) }()
	readDone := make(chan struct{})
	go p.readReplies(cliOut, readDone)
	tb.Cleanup(func() {
		inW.Close()
		inR.Close() // frees a reader left blocked by a cancelled ctx
		p.wait()
		srvOut.Close()
		<-readDone
	})
	return p
}

func (p *peer) readReplies(conn net.Conn, done chan<- struct{}) {
	defer close(done)
	defer close(p.lines)
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if line != "" {
				p.tb.Errorf("unterminated output line %q", line)
			}
			return
		}
		if _, err := checkLine([]byte(line)); err != nil {
			p.tb.Errorf("bad output line %q: %v", line, err)
		}
		p.lines <- strings.TrimSuffix(line, "\n")
	}
}

// send writes each line plus a newline.
func (p *peer) send(lines ...string) {
	p.tb.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.tb.Fatalf("send %q: %v", l, err)
		}
	}
}

// recvLine returns the next output line.
func (p *peer) recvLine() string {
	p.tb.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.tb.Fatal("output closed, expected a reply")
		}
		return line
	case <-time.After(failsafe):
		p.tb.Fatal("no reply")
	}
	return ""
}

func (p *peer) recv() reply {
	p.tb.Helper()
	r, err := checkLine([]byte(p.recvLine() + "\n"))
	if err != nil {
		p.tb.Fatal(err)
	}
	return r
}

// expect receives one line and compares it with want exactly.
func (p *peer) expect(want string) {
	p.tb.Helper()
	if got := p.recvLine(); got != want {
		p.tb.Fatalf("reply:\n got %s\nwant %s", got, want)
	}
}

// rest closes the input, waits for Serve to return and returns every line
// written after those already received: the whole rest of the session.
func (p *peer) rest() []string {
	p.tb.Helper()
	p.in.Close()
	if err := p.wait(); err != nil {
		p.tb.Fatalf("Serve: %v", err)
	}
	p.srvOut.Close()
	var out []string
	for l := range p.lines {
		out = append(out, l)
	}
	return out
}

// noReplyFor fails if any of lines answers id (its JSON text).
func noReplyFor(tb testing.TB, lines []string, id string) {
	tb.Helper()
	for _, l := range lines {
		if r, err := checkLine([]byte(l + "\n")); err == nil && string(r.ID) == id {
			tb.Errorf("request %s was answered: %s", id, l)
		}
	}
}

// barrier proves that every line sent before it has been handled without a
// reply: lines are dispatched in order on one goroutine, and any reply of
// theirs would be written before the ping is even admitted.
func (p *peer) barrier() {
	p.tb.Helper()
	p.nextID++
	id := fmt.Sprintf(`"barrier-%d"`, p.nextID)
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
}

// wait closes nothing; it returns Serve's result once Serve has returned.
func (p *peer) wait() error {
	p.tb.Helper()
	p.once.Do(func() {
		select {
		case p.result = <-p.served:
		case <-time.After(failsafe):
			p.result = errors.New("Serve did not return")
		}
	})
	return p.result
}

// reply is a parsed output line.
type reply struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *Error
	Method string
	Params json.RawMessage
}

// checkLine parses one output line and checks it is exactly one JSON-RPC
// 2.0 response or notification object and nothing else.
func checkLine(line []byte) (reply, error) {
	var r reply
	body, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok || bytes.ContainsAny(body, "\r\n") {
		return r, errors.New("not exactly one line")
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return r, fmt.Errorf("not a JSON object: %v", err)
	}
	for k := range f {
		if !strings.Contains(" jsonrpc id result error method params ", " "+k+" ") {
			return r, fmt.Errorf("unexpected member %q", k)
		}
	}
	if string(f["jsonrpc"]) != `"2.0"` {
		return r, fmt.Errorf("jsonrpc is %s", f["jsonrpc"])
	}
	if _, isNote := f["method"]; isNote {
		return r, checkNotification(f, &r)
	}
	return r, checkResponse(f, &r)
}

func checkNotification(f map[string]json.RawMessage, r *reply) error {
	if len(f) > 3 || json.Unmarshal(f["method"], &r.Method) != nil {
		return errors.New("bad notification")
	}
	r.Params = f["params"]
	return nil
}

func checkResponse(f map[string]json.RawMessage, r *reply) error {
	id, ok := f["id"]
	if _, isKey := idKey(id); !ok || (!isKey && string(id) != "null") {
		return fmt.Errorf("bad response id %s", id)
	}
	r.ID, r.Result = id, f["result"]
	errRaw, hasErr := f["error"]
	if (r.Result != nil) == hasErr || len(f) != 3 {
		return errors.New("need exactly one of result and error")
	}
	if !hasErr {
		return nil
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
		Data    any     `json:"data"`
	}
	if err := json.Unmarshal(errRaw, &e); err != nil || e.Code == nil || e.Message == nil {
		return fmt.Errorf("bad error object %s", errRaw)
	}
	r.Error = &Error{Code: *e.Code, Message: *e.Message, Data: e.Data}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for the server's log and Serve's out.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ping is allowed before initialization and answers {} (a nil result).
var ping = Method{BeforeInit: true, Handle: func(context.Context, Request) (any, error) { return nil, nil }}

// gate is a handler that announces each start and then blocks until it is
// released or its context ends; it reports the context's state as result.
type gate struct {
	started chan Request // buffered, so starting never blocks
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan Request, 64), release: make(chan struct{})}
}

func (g *gate) handle(ctx context.Context, req Request) (any, error) {
	g.started <- req
	select {
	case <-g.release:
		return map[string]bool{"released": true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next returns the id of the next started request.
func (g *gate) next(tb testing.TB) string {
	tb.Helper()
	select {
	case req := <-g.started:
		return string(req.ID)
	case <-time.After(failsafe):
		tb.Fatal("handler did not start")
	}
	return ""
}

func req(id, method string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"}`
}

func cancelLine(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`
}

func errLine(id string, code int, msg string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, msg)
}
