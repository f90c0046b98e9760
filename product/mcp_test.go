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

	"github.com/santhosh-tekuri/jsonschema/v6"
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

func TestMCP_NeedContext(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(locNewSearcher)
	for _, version := range []string{"2025-06-18", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			p := MustMCP(t, te, true)
			p.initialize(version)
			list := p.call(1, "tools/list", `{}`)
			tools := list["result"].(map[string]any)["tools"].([]any)
			tool := tools[0].(map[string]any)
			if len(tools) != 1 || tool["name"] != "need_context" {
				t.Fatalf("tools %v", tools)
			}
			_, hasOut := tool["outputSchema"]
			if hasOut != (version == "2025-06-18") {
				t.Errorf("outputSchema present %v on %s", hasOut, version)
			}
			r := p.call(2, "tools/call", `{"name":"need_context","arguments":`+needLocateNewSearcher+`}`)
			res := r["result"].(map[string]any)
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.Contains(text, "search.go:15-17") {
				t.Errorf("context %q", text)
			}
			sc, structured := res["structuredContent"].(map[string]any)
			if structured != (version == "2025-06-18") {
				t.Fatalf("structuredContent present %v on %s", structured, version)
			}
			if structured {
				if sc["context"] != text {
					t.Error("content[0].text != structuredContent.context")
				}
				schema := compileSchema(t, tool["outputSchema"])
				if err := schema.Validate(sc); err != nil {
					t.Errorf("structuredContent does not match the outputSchema: %v", err)
				}
			}
		})
	}
}

func TestMCP_InvalidParams(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Routes = RouteSet{RouteLocateImplementation, RouteTraceStateFlow} })
	p := MustMCP(t, te, true)
	p.initialize("2025-06-18")
	id := 10
	for _, tt := range invalidCases {
		if !json.Valid([]byte(tt.src)) || !strings.HasPrefix(strings.TrimSpace(tt.src), "{") || len(tt.src) > 32<<10 {
			continue // not an arguments object: the JSON-RPC layer rejects it first
		}
		id++
		r := p.call(id, "tools/call", `{"name":"need_context","arguments":`+tt.src+`}`)
		e, _ := r["error"].(map[string]any)
		if errCode(r) != -32602 || !strings.Contains(fmt.Sprint(e["message"]), tt.path) {
			t.Errorf("%s: reply %v, want -32602 naming %s", tt.name, r, tt.path)
		}
	}
	var n int
	if err := te.store.db.QueryRow(`SELECT count(*) FROM resolutions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("invalid calls resolved %d needs (%v)", n, err)
	}
}

func compileSchema(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", schema); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// slowWorker blocks its first request until it is cancelled; later
// requests fail at once.
type slowWorker struct {
	started   chan struct{}
	cancelled chan struct{}
	mu        sync.Mutex
	calls     int
}

func (w *slowWorker) Propose(ctx context.Context, _ WorkerRequest) (WorkerResult, error) {
	w.mu.Lock()
	w.calls++
	first := w.calls == 1
	w.mu.Unlock()
	if !first {
		return WorkerResult{}, fmt.Errorf("busy")
	}
	close(w.started)
	<-ctx.Done()
	close(w.cancelled)
	return WorkerResult{}, ctx.Err()
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
	first, second := p.recv(), p.recv()
	if first["id"].(float64) != 1 || second["id"].(float64) != 2 {
		t.Fatalf("replies out of order: %v then %v", first, second)
	}
	var status string
	if err := te.store.db.QueryRow(`SELECT status FROM worker_runs ORDER BY run_id LIMIT 1`).Scan(&status); err != nil || status != "failed" {
		t.Errorf("the cancelled worker run was not recorded: %q %v", status, err)
	}
}
