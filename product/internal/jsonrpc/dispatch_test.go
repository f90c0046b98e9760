package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	mcpInit   = "initialize"
	mcpCancel = "notifications/cancelled"
)

var mcpOpts = Options{InitMethod: mcpInit, CancelMethod: mcpCancel}

// initMethod fails when params ask it to, so a failed init can be tested.
var initMethod = Method{Handle: func(_ context.Context, r Request) (any, error) {
	var p struct{ Fail bool }
	_ = json.Unmarshal(r.Params, &p)
	if p.Fail {
		return nil, &Error{Code: CodeInvalidParams, Message: "unsupported"}
	}
	return map[string]string{"protocolVersion": "2025-06-18"}, nil
}}

func TestServe_Init(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		calls := make(chan Request, 8)
		tool := Method{Handle: func(_ context.Context, r Request) (any, error) { calls <- r; return nil, nil }}
		p := startPeer(t, map[string]Method{mcpInit: initMethod, "ping": ping, "tools/list": tool}, mcpOpts)
		p.send(req("1", "tools/list"))
		p.expect(errLine("1", CodeInvalidRequest, "not initialized"))
		p.send(`{"jsonrpc":"2.0","method":"tools/list"}`) // a request without an id: dropped, not run
		p.barrier()                                       // ping is allowed
		p.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"fail":true}}`)
		p.expect(errLine("2", CodeInvalidParams, "unsupported"))
		p.send(req("3", "tools/list"))
		p.expect(errLine("3", CodeInvalidRequest, "not initialized"))
		p.send(req("4", mcpInit))
		p.expect(`{"jsonrpc":"2.0","id":4,"result":{"protocolVersion":"2025-06-18"}}`)
		p.send(req("5", "tools/list"))
		p.expect(`{"jsonrpc":"2.0","id":5,"result":{}}`)
		p.send(req("6", mcpInit))
		p.expect(errLine("6", CodeInvalidRequest, "already initialized"))
		if len(calls) != 1 {
			t.Fatalf("tool ran %d times, want 1", len(calls))
		}
		if want := `dropping "tools/list" sent without an id`; !strings.Contains(p.log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, p.log)
		}
	})
	t.Run("LinesWaitForInit", func(t *testing.T) {
		// The reader holds every line behind initialize until it is
		// answered, so a client that pipelines is never refused.
		g := newGate()
		p := startPeer(t, map[string]Method{mcpInit: {Handle: g.handle}, "ping": ping, "tool": {Handle: ping.Handle}}, mcpOpts)
		p.send(req("1", mcpInit))
		g.next(t)
		sent := make(chan struct{})
		go func() { p.send(req("2", mcpInit), req("3", "tool")); close(sent) }()
		close(g.release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"released":true}}`)
		p.expect(errLine("2", CodeInvalidRequest, "already initialized"))
		p.expect(`{"jsonrpc":"2.0","id":3,"result":{}}`)
		<-sent
	})
}

func TestServe_DuplicateID(t *testing.T) {
	t.Run("InFlight", func(t *testing.T) {
		g := newGate()
		p := startPeer(t, map[string]Method{"ping": ping, "block": {Handle: g.handle}}, Options{})
		p.send(req("1", "block"))
		g.next(t)
		p.send(req("1", "block"), req("1", "ping"))
		p.expect(errLine("1", CodeInvalidRequest, "duplicate request id"))
		p.expect(errLine("1", CodeInvalidRequest, "duplicate request id"))
		close(g.release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"released":true}}`)
		if len(g.started) != 0 {
			t.Fatal("a duplicate ran")
		}
	})
	t.Run("Reused", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{})
		for _, tc := range []struct{ id, want string }{
			{`7`, `{"jsonrpc":"2.0","id":7,"result":{}}`},
			{`7`, errLine("7", CodeInvalidRequest, "duplicate request id")},
			{`"7"`, `{"jsonrpc":"2.0","id":"7","result":{}}`}, // a string is not a number
			{`"a"`, `{"jsonrpc":"2.0","id":"a","result":{}}`},
			{`"\u0061"`, errLine(`"\u0061"`, CodeInvalidRequest, "duplicate request id")},
			{`10`, `{"jsonrpc":"2.0","id":10,"result":{}}`},
			{`10.0`, errLine("10.0", CodeInvalidRequest, "duplicate request id")}, // numbers by value
			{`1e1`, errLine("1e1", CodeInvalidRequest, "duplicate request id")},
			{`-0`, `{"jsonrpc":"2.0","id":-0,"result":{}}`},
			{`0`, errLine("0", CodeInvalidRequest, "duplicate request id")},
			{`0.0e7`, errLine("0.0e7", CodeInvalidRequest, "duplicate request id")},
		} {
			p.send(req(tc.id, "ping"))
			p.expect(tc.want)
		}
	})
	t.Run("RefusedIDCounts", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{})
		p.send(req("20", "nope"), req("20", "ping"))
		p.expect(`{"jsonrpc":"2.0","id":20,"error":{"code":-32601,"message":"method not found","data":{"method":"nope"}}}`)
		p.expect(errLine("20", CodeInvalidRequest, "duplicate request id"))
	})
}

func TestServe_SerializedFIFO(t *testing.T) {
	g := newGate()
	g.release = make(chan struct{}, 3) // one token per request
	p := startPeer(t, map[string]Method{"ping": ping, "resolve": {Serialized: true, Handle: g.handle}}, Options{})
	p.send(req("1", "resolve"), req("2", "resolve"), req("3", "resolve"))
	var order []string
	order = append(order, g.next(t))
	p.barrier() // concurrent methods are answered while a serialized one runs
	for _, id := range []string{"1", "2", "3"} {
		if len(g.started) != 0 {
			t.Fatal("a second serialized request started while one was running")
		}
		g.release <- struct{}{}
		p.expect(`{"jsonrpc":"2.0","id":` + id + `,"result":{"released":true}}`)
		if id != "3" {
			order = append(order, g.next(t))
		}
	}
	if diff := cmp.Diff([]string{"1", "2", "3"}, order); diff != "" {
		t.Fatalf("start order (-want +got):\n%s", diff)
	}
}

// choosy answers a cancelled request with a result of its own choosing.
func choosy(ctx context.Context, _ Request) (any, error) {
	<-ctx.Done()
	return map[string]bool{"partial": true}, nil
}

// TestServe_Cancel: a request the client cancelled is never answered (MCP:
// "receivers of a cancellation notification SHOULD NOT send a response"),
// whether it was running or still queued, and whatever its handler returns.
func TestServe_Cancel(t *testing.T) {
	t.Run("Running", func(t *testing.T) {
		g := newGate()
		p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, mcpOpts.without(mcpInit))
		p.send(req(`"r1"`, "slow"))
		g.next(t)
		p.send(cancelLine(`"r1"`))
		p.barrier()
		noReplyFor(t, p.rest(), `"r1"`)
		if !strings.Contains(p.log.String(), `request "r1" was cancelled by the client; not answered`) {
			t.Errorf("the handler did not end, or its end was not logged:\n%s", p.log)
		}
	})
	t.Run("HandlerResultNotSent", func(t *testing.T) {
		causes := make(chan error, 1)
		partial := func(ctx context.Context, _ Request) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return map[string]bool{"partial": true}, nil
		}
		p := startPeer(t, map[string]Method{"ping": ping, "slow": {Handle: partial}}, mcpOpts.without(mcpInit))
		p.send(req("1", "slow"), cancelLine("1"))
		if cause := <-causes; !errors.Is(cause, ErrCancelledByClient) {
			t.Errorf("the handler's context ended with cause %v; want ErrCancelledByClient", cause)
		}
		noReplyFor(t, p.rest(), "1")
	})
	t.Run("Queued", func(t *testing.T) {
		g := newGate()
		p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, mcpOpts.without(mcpInit))
		p.send(req("1", "slow"), req("2", "slow"))
		g.next(t)
		p.send(cancelLine("2"))
		p.barrier() // while 1 still runs
		close(g.release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"released":true}}`)
		p.barrier()
		if len(g.started) != 0 {
			t.Fatal("the cancelled queued request ran")
		}
		noReplyFor(t, p.rest(), "2")
	})
	t.Run("ByValueOfTheID", func(t *testing.T) {
		g := newGate()
		p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, mcpOpts.without(mcpInit))
		p.send(req("7", "slow"))
		g.next(t)
		p.send(cancelLine("7.0")) // the same id by the id rule
		p.barrier()
		noReplyFor(t, p.rest(), "7")
	})
	t.Run("StrictParams", func(t *testing.T) {
		// A cancellation whose params fold keys or repeat them names no
		// request: the request runs on and is answered.
		g := newGate()
		p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, mcpOpts.without(mcpInit))
		p.send(req("1", "slow"))
		g.next(t)
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`)
		p.barrier()
		close(g.release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"released":true}}`)
	})
	t.Run("Ignored", func(t *testing.T) {
		p := startPeer(t, pingOnly(), mcpOpts.without(mcpInit))
		p.send(req("1", "ping"))
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		p.send(cancelLine("1"), cancelLine("99"), cancelLine(`{"a":1}`),
			`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}`)
		p.barrier()
	})
	t.Run("InitNotCancellable", func(t *testing.T) {
		g := newGate()
		p := startPeer(t, map[string]Method{mcpInit: {Handle: g.handle}, "ping": ping}, mcpOpts)
		p.send(req("1", mcpInit))
		g.next(t)
		sent := make(chan struct{})
		go func() { p.send(cancelLine("1")); close(sent) }()
		close(g.release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":{"released":true}}`)
		<-sent
		p.barrier()
	})
}

// without returns the options with InitMethod cleared when it is name.
func (o Options) without(name string) Options {
	if o.InitMethod == name {
		o.InitMethod = ""
	}
	return o
}

func TestServe_EOF(t *testing.T) {
	g := newGate()
	p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, Options{})
	p.send(req("1", "slow"), req("2", "slow"))
	g.next(t)
	if _, err := p.in.Write([]byte(req("3", "ping"))); err != nil { // last line, no newline
		t.Fatal(err)
	}
	p.in.Close()
	if err := p.wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := p.srv.Notify("late", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after Serve: %v, want ErrClosed", err)
	}
	got := map[string]string{}
	for range 3 {
		r := p.recv()
		got[string(r.ID)] = summary(r)
	}
	want := map[string]string{
		"1": "error -32800", // the running handler saw its context end
		"2": "error -32800", // the queued one never ran
		"3": "result {}",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replies (-want +got):\n%s", diff)
	}
	if len(g.started) != 0 {
		t.Fatal("the queued request ran")
	}
}

func TestServe_DrainOnEOF(t *testing.T) {
	g := newGate()
	p := startPeer(t, map[string]Method{"ping": ping, "slow": {Serialized: true, Handle: g.handle}}, Options{DrainOnEOF: true})
	p.send(req("1", "slow"), req("2", "slow"), req("3", "ping"))
	g.next(t)
	p.in.Close()
	close(g.release) // the client is gone, but what it asked for is still answered
	got := map[string]string{}
	for range 3 {
		r := p.recv()
		got[string(r.ID)] = summary(r)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	want := map[string]string{"1": `result {"released":true}`, "2": `result {"released":true}`, "3": "result {}"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replies (-want +got):\n%s", diff)
	}
}

// summary is a reply's outcome without its id.
func summary(r reply) string {
	if r.Error != nil {
		return fmt.Sprintf("error %d", r.Error.Code)
	}
	return "result " + string(r.Result)
}

func TestServe_ContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := newGate()
	p := startPeerContext(t, ctx, map[string]Method{"ping": ping, "slow": {Handle: g.handle}}, Options{})
	p.send(req("1", "slow"))
	g.next(t)
	cancel() // stdin stays open
	if err := p.wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v, want context.Canceled", err)
	}
	p.expect(errLine("1", CodeRequestCancelled, "request cancelled"))
}

func TestServe_Twice(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	p.barrier()
	if err := p.srv.Serve(context.Background(), nil, nil); err == nil {
		t.Fatal("second Serve succeeded")
	}
}

// TestServe_RequestsAndNotifications: the method table says which methods
// are requests and which notifications. A request sent without an id does
// nothing at all (initialize included: it would freeze a session nobody
// learns of), and a notification sent with an id is refused.
func TestServe_RequestsAndNotifications(t *testing.T) {
	calls := make(chan string, 8)
	record := func(name string) Handler {
		return func(context.Context, Request) (any, error) { calls <- name; return nil, nil }
	}
	methods := map[string]Method{
		mcpInit:                     {Handle: record(mcpInit)},
		"ping":                      ping,
		"tools/call":                {Handle: record("tools/call"), Serialized: true},
		"notifications/initialized": {Handle: record("initialized"), BeforeInit: true, Notification: true},
	}
	p := startPeer(t, methods, mcpOpts)
	p.send(`{"jsonrpc":"2.0","method":"initialize","params":{}}`)
	p.barrier()
	p.send(req("1", mcpInit)) // the real one is not "already initialized"
	p.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	p.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`)
	p.send(req("2", "notifications/initialized"))
	p.expect(errLine("2", CodeInvalidRequest, "invalid request: notifications/initialized is a notification and takes no id"))
	p.send(req("3", mcpCancel))
	p.expect(errLine("3", CodeInvalidRequest, "invalid request: notifications/cancelled is a notification and takes no id"))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(req("4", "tools/call")) // served after anything queued before it
	p.expect(`{"jsonrpc":"2.0","id":4,"result":{}}`)
	p.rest()
	close(calls)
	var got []string
	for c := range calls {
		got = append(got, c)
	}
	slices.Sort(got) // the notification runs concurrently with the rest
	if diff := cmp.Diff([]string{mcpInit, "initialized", "tools/call"}, got); diff != "" {
		t.Fatalf("handlers run (-want +got):\n%s", diff)
	}
}
