package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func pingOnly() map[string]Method { return map[string]Method{"ping": ping} }

func TestServe_ParseError(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	for _, line := range []string{
		"not json",
		`{"jsonrpc":"2.0","id":1,"method":"ping"`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}}`,
		"\x00\xff",
		`{"a":1,}`,
	} {
		p.send(line)
		p.expect(errLine("null", CodeParse, "parse error"))
	}
	p.barrier() // still up
}

func TestServe_InvalidRequest(t *testing.T) {
	for _, tc := range []struct{ name, line, id string }{
		{"Batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "null"},
		{"EmptyBatch", `[]`, "null"},
		{"Number", `42`, "null"},
		{"String", `"ping"`, "null"},
		{"Null", `null`, "null"},
		{"WrongVersion", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, "1"},
		{"NoVersion", `{"id":2,"method":"ping"}`, "2"},
		{"NumericVersion", `{"jsonrpc":2.0,"id":3,"method":"ping"}`, "3"},
		{"NoMethod", `{"jsonrpc":"2.0","id":4}`, "4"},
		{"MethodNotString", `{"jsonrpc":"2.0","id":"m","method":7}`, `"m"`},
		{"IDObject", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null"},
		{"IDArray", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null"},
		{"IDBool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null"},
		{"IDNull", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null"},
		{"ParamsString", `{"jsonrpc":"2.0","id":6,"method":"ping","params":"x"}`, "6"},
		{"ParamsNumber", `{"jsonrpc":"2.0","id":7,"method":"ping","params":1}`, "7"},
		{"ParamsNull", `{"jsonrpc":"2.0","id":8,"method":"ping","params":null}`, "8"},
		{"NotificationWrongVersion", `{"jsonrpc":"1.0","method":"ping"}`, "null"},
		{"KeysAreCaseSensitive", `{"JSONRPC":"2.0","ID":9,"METHOD":"ping"}`, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPeer(t, pingOnly(), Options{})
			p.send(tc.line)
			r := p.recv()
			if r.Error == nil || r.Error.Code != CodeInvalidRequest || string(r.ID) != tc.id {
				t.Fatalf("got id %s error %+v, want id %s code %d", r.ID, r.Error, tc.id, CodeInvalidRequest)
			}
			p.barrier()
		})
	}
}

func TestServe_BlankLines(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	p.send("", "   ", "\t\r", "\r")
	p.barrier() // the first reply is the barrier's
}

func TestServe_LongLine(t *testing.T) {
	const max = 64
	tooLong := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 40) + `"}}`
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request line too long","data":{"maxLineBytes":64}}}`
	t.Run("ErrAndStaysUp", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{MaxLine: max})
		p.send(tooLong)
		p.expect(want)
		p.barrier()
	})
	t.Run("LongerThanReadBuffer", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{MaxLine: max})
		p.send(strings.Repeat("y", 300<<10)) // several bufio refills
		p.expect(want)
		p.barrier()
	})
	t.Run("ExactlyMaxAccepted", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{MaxLine: max})
		line := req("5", "ping")
		p.send(line + strings.Repeat(" ", max-len(line)))
		p.expect(`{"jsonrpc":"2.0","id":5,"result":{}}`)
	})
	t.Run("AtEOF", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{MaxLine: max})
		if _, err := p.in.Write([]byte(tooLong)); err != nil { // no newline
			t.Fatal(err)
		}
		p.in.Close()
		p.expect(want)
		if err := p.wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServe_MethodNotFound(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	p.send(req("1", "server/discover"))
	p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found","data":{"method":"server/discover"}}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/unknown","params":{}}`)
	p.barrier()
}

func TestServe_ClientResponseIgnored(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	p.send(`{"jsonrpc":"2.0","id":9,"result":{}}`, `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`)
	p.barrier()
	if !strings.Contains(p.log.String(), "ignoring a response from the client (id 9)") {
		t.Fatalf("log: %s", p.log)
	}
}

func TestServe_Request(t *testing.T) {
	got := make(chan Request, 2)
	echo := func(_ context.Context, r Request) (any, error) { got <- r; return r.Params, nil }
	p := startPeer(t, map[string]Method{"ping": ping, "echo": {Handle: echo}, "note": {Handle: echo, Notification: true}}, Options{})
	p.send(`{"jsonrpc":"2.0","id":"a-1","method":"echo","params":{"k":[1,2]}}`)
	p.expect(`{"jsonrpc":"2.0","id":"a-1","result":{"k":[1,2]}}`)
	p.send(`{"jsonrpc":"2.0","method":"note","params":[true]}`)
	p.barrier()
	want := []Request{
		{ID: ID(`"a-1"`), Method: "echo", Params: []byte(`{"k":[1,2]}`)},
		{Method: "note", Params: []byte(`[true]`), IsNotification: true},
	}
	if diff := cmp.Diff(want, []Request{<-got, <-got}); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
}

func TestServe_IDEchoedAsSent(t *testing.T) {
	p := startPeer(t, pingOnly(), Options{})
	for _, id := range []string{`"abc"`, `1.50e2`, `-0`, `1e3`, `"\u00e9<>"`, `-9007199254740991`, `9007199254740991`} {
		p.send(req(id, "ping"))
		p.expect(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
	}
}

func TestServe_HandlerErrors(t *testing.T) {
	typed := &Error{Code: CodeInvalidParams, Message: "bad subject", Data: map[string]string{"field": "subject"}}
	fixed := func(result any, err error) Method {
		return Method{Handle: func(context.Context, Request) (any, error) { return result, err }}
	}
	p := startPeer(t, map[string]Method{
		"ping":    ping,
		"typed":   fixed(nil, typed),
		"wrapped": fixed(nil, fmt.Errorf("compile: %w", typed)),
		"plain":   fixed(nil, errors.New("open /secret/path: denied")),
		"result":  fixed(func() {}, nil),
		"data":    fixed(nil, &Error{Code: 7, Message: "m", Data: make(chan int)}),
		"panic":   {Handle: func(context.Context, Request) (any, error) { panic("boom") }},
	}, Options{})
	wantTyped := `{"code":-32602,"message":"bad subject","data":{"field":"subject"}}}`
	for _, tc := range []struct{ id, method, want string }{
		{"1", "typed", `{"jsonrpc":"2.0","id":1,"error":` + wantTyped},
		{"2", "wrapped", `{"jsonrpc":"2.0","id":2,"error":` + wantTyped},
		{"3", "plain", errLine("3", CodeInternal, "internal error")},
		{"4", "result", errLine("4", CodeInternal, "internal error")},
		{"5", "data", errLine("5", 7, "m")},
		{"6", "panic", errLine("6", CodeInternal, "internal error")},
	} {
		p.send(req(tc.id, tc.method))
		p.expect(tc.want)
	}
	p.barrier() // a panic does not take the server down
	for _, want := range []string{"open /secret/path: denied", "panic in panic: boom", "goroutine"} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, p.log)
		}
	}
}

func TestServer_Notify(t *testing.T) {
	t.Run("ErrClosedBeforeServe", func(t *testing.T) {
		if err := NewServer(nil, Options{}).Notify("x", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{})
		p.barrier() // Serve is running
		if err := p.srv.Notify("notifications/progress", map[string]any{"progress": 1, "note": "<ok>"}); err != nil {
			t.Fatal(err)
		}
		p.expect(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"note":"<ok>","progress":1}}`)
		if err := p.srv.Notify("notifications/tools/list_changed", nil); err != nil {
			t.Fatal(err)
		}
		p.expect(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	})
	t.Run("InterleavedWithResponses", func(t *testing.T) {
		p := startPeer(t, pingOnly(), Options{})
		p.barrier()
		const n = 50
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := p.srv.Notify("note", map[string]int{"i": i}); err != nil {
					t.Error(err)
				}
			})
			p.send(req(fmt.Sprint(i), "ping"))
		}
		notes, responses := 0, 0
		for range 2 * n {
			if r := p.recv(); r.Method == "note" {
				notes++
			} else {
				responses++
			}
		}
		wg.Wait()
		if notes != n || responses != n {
			t.Fatalf("got %d notifications and %d responses, want %d of each", notes, responses, n)
		}
	})
}

func TestNewServer_Panics(t *testing.T) {
	for name, build := range map[string]func(){
		"NilHandler":    func() { NewServer(map[string]Method{"x": {}}, Options{}) },
		"NoInitHandler": func() { NewServer(pingOnly(), Options{InitMethod: "initialize"}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			build()
		})
	}
}

// TestServer_BoundsCallsInFlight: past Options.MaxInFlight calls that have
// not finished, a request is answered -32001 at once and runs nothing, a
// notification is dropped, and a slot frees only when a call's answer is
// written.
func TestServer_BoundsCallsInFlight(t *testing.T) {
	g := newGate()
	var notes atomic.Int32
	p := startPeer(t, map[string]Method{"wait": {Handle: g.handle}, "ping": ping,
		"note": {Notification: true, Handle: func(context.Context, Request) (any, error) { notes.Add(1); return nil, nil }}},
		Options{MaxInFlight: 3})
	p.send(req("1", "wait"), req("2", "wait"), req("3", "wait"))
	for range 3 {
		g.next(t)
	}
	overloaded := `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"server overloaded: too many requests in flight","data":{"maxInFlight":3}}}`
	p.send(req("4", "wait"), `{"jsonrpc":"2.0","method":"note"}`, req("5", "ping"))
	p.expect(fmt.Sprintf(overloaded, "4"))
	p.expect(fmt.Sprintf(overloaded, "5"))
	close(g.release)
	for range 3 {
		if r := p.recv(); string(r.Result) != `{"released":true}` {
			t.Errorf("a call in flight got %+v", r)
		}
	}
	p.barrier() // a slot is free again
	if rest := p.rest(); len(rest) != 0 || notes.Load() != 0 {
		t.Errorf("after the bound: lines %q, %d notifications ran", rest, notes.Load())
	}
	if !strings.Contains(p.log.String(), "request 4 refused: 3 calls in flight") || !strings.Contains(p.log.String(), `dropping notification "note"`) {
		t.Errorf("log:\n%s", p.log)
	}
}

// signalWriter is a log that announces when a line holding want arrives.
type signalWriter struct {
	lockedBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(b []byte) (int, error) {
	n, err := w.lockedBuffer.Write(b)
	if strings.Contains(w.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// blockedWriter is a client's end of stdout that it never reads: every
// write blocks until the test ends.
type blockedWriter struct{ done chan struct{} }

func (w blockedWriter) Write(b []byte) (int, error) {
	<-w.done
	return 0, io.ErrClosedPipe
}

// TestServer_ClientThatNeverReads: a client that writes requests and never
// reads its answers gets at most MaxInFlight calls run; the next request's
// refusal is written by the reader itself, whose write then blocks like
// the others, so the server reads no further line and grows no further.
func TestServer_ClientThatNeverReads(t *testing.T) {
	const max = 4
	var ran atomic.Int32
	exceeded := make(chan struct{})
	var exceedOnce sync.Once
	started := make(chan struct{}, 50*max)
	count := Method{BeforeInit: true, Handle: func(context.Context, Request) (any, error) {
		started <- struct{}{}
		if ran.Add(1) > max {
			exceedOnce.Do(func() { close(exceeded) })
		}
		return nil, nil
	}}
	log := &signalWriter{want: "refused", seen: make(chan struct{})}
	srv := NewServer(map[string]Method{"count": count}, Options{MaxInFlight: max, Log: log})
	var lines strings.Builder
	for i := range 50 * max {
		lines.WriteString(req(strconv.Itoa(i+1), "count") + "\n")
	}
	out := blockedWriter{done: make(chan struct{})}
	served := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { served <- srv.Serve(ctx, strings.NewReader(lines.String()), out) }()
	select {
	case <-exceeded:
		t.Errorf("more than %d calls ran while the client read nothing", max)
	case <-log.seen:
		// The reader is blocked writing the refusal: the calls admitted
		// before it run (their answers block too), and nothing more is
		// admitted.
		for range max {
			select {
			case <-started:
			case <-time.After(failsafe):
				t.Fatal("an admitted call never ran")
			}
		}
		if n := ran.Load(); n != max {
			t.Errorf("%d calls ran, want %d", n, max)
		}
	case <-time.After(failsafe):
		t.Fatal("neither a refusal nor a call past the bound")
	}
	cancel()
	close(out.done)
	<-served
}
