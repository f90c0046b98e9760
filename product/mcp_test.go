package product

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpPeer is a raw-line MCP client connected to ServeMCP through pipes.
type mcpPeer struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	done chan error
}

func MustMCP(t *testing.T, te *testEngine, cacheOnly bool, mutate ...func(*MCPConfig)) *mcpPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &mcpPeer{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	rev := ProfileRevision{ID: DefaultProfileID, Revision: 1, Profile: defaultProfile}
	if err := te.store.ensureDefaultProfile(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := MCPConfig{Engine: te.Engine, Repository: te.repo, MainModel: "test-model", Profile: rev, CacheOnly: cacheOnly, Log: io.Discard}
	for _, m := range mutate {
		m(&cfg)
	}
	go func() {
		err := ServeMCP(context.Background(), cfg, inR, outW)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return p
}

// send writes one raw line.
func (p *mcpPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads one reply line as a generic object.
func (p *mcpPeer) recv() map[string]any {
	p.t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() { l, err := p.out.ReadString('\n'); ch <- result{l, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatalf("read reply: %v", r.err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			p.t.Fatalf("reply is not one JSON object: %q", r.line)
		}
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatal("no reply within 30s")
	}
	return nil
}

// call sends a request and returns its reply.
func (p *mcpPeer) call(id int, method, params string) map[string]any {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	return p.recv()
}

func (p *mcpPeer) initialize(version string) map[string]any {
	p.t.Helper()
	r := p.call(0, "initialize", `{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

func TestMCP_Transport(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	p := MustMCP(t, te, true)
	if r := p.call(1, "tools/list", `{}`); errCode(r) != -32600 {
		t.Errorf("tools/list before initialize: %v", r)
	}
	if r := p.call(2, "ping", `{}`); r["result"] == nil {
		t.Errorf("ping before initialize: %v", r)
	}
	if r := p.call(3, "server/discover", `{}`); errCode(r) != -32601 {
		t.Errorf("server/discover: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":`)
	if r := p.recv(); errCode(r) != -32700 {
		t.Errorf("malformed line: %v", r)
	}
	init := p.initialize("2099-01-01")
	if res, _ := init["result"].(map[string]any); res["protocolVersion"] != "2025-06-18" {
		t.Errorf("an unsupported version was not answered with the latest supported: %v", init)
	}
	if r := p.call(5, "no/such/method", `{}`); errCode(r) != -32601 {
		t.Errorf("unknown method: %v", r)
	}
	if r := p.call(5, "ping", `{}`); errCode(r) != -32600 {
		t.Errorf("reused request id: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping","params":{},"pad":"` + strings.Repeat("x", 2<<20) + `"}`)
	if r := p.recv(); errCode(r) != -32600 {
		t.Errorf("over-long line: %v", r)
	}
	if r := p.call(7, "ping", `{}`); r["result"] == nil {
		t.Errorf("the server did not stay up: %v", r)
	}
	p.in.Close()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("Serve after EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit on stdin EOF")
	}
}

// slowWorker blocks its first request until it is cancelled; later
// requests fail at once.
type slowWorker struct {
	started   chan struct{}
	cancelled chan struct{}
	mu        sync.Mutex
	calls     int
}

func (w *slowWorker) Propose(ctx context.Context, _ workerRequest) (workerResult, error) {
	w.mu.Lock()
	w.calls++
	first := w.calls == 1
	w.mu.Unlock()
	if !first {
		return workerResult{}, fmt.Errorf("busy")
	}
	close(w.started)
	<-ctx.Done()
	close(w.cancelled)
	return workerResult{}, ctx.Err()
}

func TestMCP_CancelAndFIFO(t *testing.T) {
	w := &slowWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
	p := MustMCP(t, te, false)
	p.initialize("2025-06-18")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"need_context","arguments":` + needLocateNewSearcher + `}}`)
	<-w.started
	// A second resolution waits its turn; ping is answered meanwhile.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"need_context","arguments":` + needLocateCRLF + `}}`)
	if r := p.call(3, "ping", `{}`); r["id"].(float64) != 3 {
		t.Fatalf("ping during a resolution: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`)
	select {
	case <-w.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("cancellation did not reach the worker")
	}
	// The cancelled request is never answered (MCP: the receiver of a
	// cancellation does not respond); the queued one runs next.
	if r := p.recv(); r["id"].(float64) != 2 {
		t.Fatalf("first reply after the cancellation: %v; want request 2's", r)
	}
	p.in.Close()
	for {
		line, err := p.out.ReadString('\n')
		if strings.Contains(line, `"id":1,`) {
			t.Errorf("the cancelled request was answered: %s", line)
		}
		if err != nil {
			break
		}
	}
	var status string
	if err := te.store.db.QueryRow(`SELECT status FROM worker_runs ORDER BY run_id LIMIT 1`).Scan(&status); err != nil || status != "failed" {
		t.Errorf("the cancelled worker run was not recorded: %q %v", status, err)
	}
}

// TestMCP_TypedResultsKeepKeyOrder holds the typed MCP results to the bytes
// of the generic maps they replaced: fields in the order of their JSON
// names, so re-encoding the decoded map gives the same bytes.
func TestMCP_TypedResultsKeepKeyOrder(t *testing.T) {
	for _, v := range []any{
		initializeResult{ProtocolVersion: "2025-06-18", Instructions: mcpInstructions, ServerInfo: serverInfo{Name: "n", Title: "t", Version: "v"}},
		toolsListResult{Tools: []toolInfo{{Name: "a", Title: "A", Description: "d", InputSchema: map[string]any{"type": "object"}, OutputSchema: map[string]any{"type": "object"}}}},
		callResult{Meta: callMeta{Session: "s", Definition: "d", Protocol: "p"}, Content: []textContent{{Type: "text", Text: "x"}}, StructuredContent: map[string]any{"b": 1, "a": 2}},
		callResult{Meta: callMeta{Session: "s"}, Content: []textContent{{Type: "text", Text: "x"}}, IsError: true},
	} {
		typed, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var generic any
		if err := json.Unmarshal(typed, &generic); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(generic)
		if string(typed) != string(again) {
			t.Errorf("%T encodes as\n%s\nnot in key order\n%s", v, typed, again)
		}
	}
}
