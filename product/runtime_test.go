package product

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/web"
)

// shortDir is a fresh data directory whose socket path fits sockaddr_un
// (t.TempDir names can be long).
func shortDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "ndl")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// mustRuntime starts the resident runtime of dataDir in this process; it
// stops at cleanup.
func mustRuntime(tb testing.TB, dataDir string) *Runtime {
	tb.Helper()
	rt, err := startRuntime(context.Background(), runtimeConfig{DataDir: dataDir, Log: testLog{tb}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	return rt
}

// testLog writes the runtime's log to the test's.
type testLog struct{ tb testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.tb.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// runMain runs the needle command in this process as a client would:
// through the runtime of its --data-dir when one runs.
func runMain(tb testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// status reads the runtime's status over its IPC socket.
func (rt *Runtime) mustStatus(tb testing.TB) web.Status {
	tb.Helper()
	var st web.Status
	mustGetJSON(tb, ipc.Client(rt.SocketPath()), ipc.BaseURL+"/api/v1/status", "", &st)
	return st
}

// mustGetJSON GETs url (with a bearer token unless empty) and decodes a
// 200 answer into v.
func mustGetJSON(tb testing.TB, c *http.Client, url, token string, v any) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}

// TestRuntime_CommandParity runs the same commands on two data
// directories, one without a runtime (each command opens the store) and
// one with a runtime running (each command runs in it over IPC), and
// compares every output byte for byte: proposals certified and rejected,
// a worker's answer, hits, a bypass, invalid input, stdin, profiles,
// settings and the store check.
func TestRuntime_CommandParity(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	in := t.TempDir()
	for name, body := range map[string]string{
		"need.json":  string(MustReadFile(t, "../fixtures/worker/newsearcher.need.json")),
		"loc.json":   locCRLF,
		"wrong.json": strings.Replace(locCRLF, `"start_line":6,"end_line":14`, `"start_line":1,"end_line":4`, 1),
		"bad.json":   `{"route":"locate.implementation","subject":{"kind":"class","name":"X"}}`,
		"flow.json":  flowCRLF,
	} {
		MustWriteFile(t, filepath.Join(in, name), body)
	}
	frozen, err := filepath.Abs("../frozen/worker/grepx")
	if err != nil {
		t.Fatal(err)
	}
	replay := strings.Join(MustReplayCommand(t, frozen), " ")
	type step struct {
		stdin string
		args  []string
	}
	script := func(data string) []step {
		r := []string{"--repository", repo, "--data-dir", data}
		return []step{
			{"", append([]string{"need", "resolve", "--codex", replay}, append(r, filepath.Join(in, "need.json"))...)},
			{"", append([]string{"need", "resolve"}, append(r, filepath.Join(in, "need.json"))...)},
			{"", append([]string{"evidence", "propose"}, append(r, filepath.Join(in, "loc.json"))...)},
			{"", append([]string{"evidence", "propose"}, append(r, filepath.Join(in, "wrong.json"))...)},
			{flowCRLF, append([]string{"evidence", "propose"}, append(r, "-")...)},
			{needTraceCRLF, append([]string{"need", "resolve", "--cache-only"}, append(r, "-")...)},
			{"", append([]string{"need", "resolve", "--cache-only"}, append(r, filepath.Join(in, "bad.json"))...)},
			{needTestsCRLF, append([]string{"need", "resolve", "--cache-only"}, append(r, "-")...)},
			{"", []string{"profile", "list", "--data-dir", data}},
			{"", []string{"config", "set", "--data-dir", data, "worker.deadline", "3m"}},
			{"", []string{"config", "get", "--data-dir", data, "worker.deadline"}},
			{"", []string{"db", "check", "--data-dir", data}},
			{"", append([]string{"need", "resolve"}, append(r, "missing.json")...)},
		}
	}
	run := func(data string) []string {
		var outs []string
		for _, s := range script(data) {
			stdout, stderr, code := runMain(t, s.stdin, s.args...)
			outs = append(outs, strings.ReplaceAll(fmt.Sprintf("%s\n--- stderr\n%s--- exit %d", stdout, stderr, code), data, "$DATA"))
		}
		return outs
	}
	standalone := run(shortDir(t))
	resident := shortDir(t)
	rt := mustRuntime(t, resident)
	viaRuntime := run(resident)
	for i := range standalone {
		if standalone[i] != viaRuntime[i] {
			t.Errorf("step %d (%s) differs:\nstandalone:\n%s\nresident:\n%s", i, strings.Join(script("$DATA")[i].args[:2], " "), standalone[i], viaRuntime[i])
		}
	}
	for _, want := range []string{`"worker_spawned": true`, `"kind": "exact_hit"`, `"status": "rejected"`, "--- exit 2", `"kind": "bypass"`} {
		if !strings.Contains(strings.Join(standalone, "\n"), want) {
			t.Errorf("the script never produced %s: it does not cover what it claims", want)
		}
	}
	if got := rt.mustStatus(t).CommandsServed; got != int64(len(standalone)) {
		t.Errorf("the runtime served %d commands, want all %d (the others opened the store themselves)", got, len(standalone))
	}
}

// TestRuntime_MCPConnections connects two MCP clients (two coding-agent
// sessions) to one runtime at once. They share its store, but each keeps
// its own ledger: with a profile allowing one need per session, the first
// session's second need is a bypass while the second session, asking the
// same need, is answered.
func TestRuntime_MCPConnections(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	data := shortDir(t)
	rt := mustRuntime(t, data)
	in := t.TempDir()
	MustWriteFile(t, filepath.Join(in, "one.json"), `{"worker_model":"","effort":"","limits":{"needs":1,"workers":1},"sandbox":{"evidence":"read-only","patch":"workspace-write","verifier":"read-only"}}`)
	if _, stderr, code := runMain(t, "", "profile", "create", "--data-dir", data, "one", filepath.Join(in, "one.json")); code != 0 {
		t.Fatalf("profile create: %d %s", code, stderr)
	}
	for _, p := range []string{locNewSearcher, locCRLF} {
		if out, stderr, code := runMain(t, p, "evidence", "propose", "--repository", repo, "--data-dir", data, "-"); code != 0 {
			t.Fatalf("propose: %d %s%s", code, out, stderr)
		}
	}
	connect := func(name string) *mcp.ClientSession {
		cmd := needleCommand(t, "mcp", "serve", "--data-dir", data, "--repository", repo, "--main-model", name,
			"--role-profile", "one", "--cache-only")
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0.0.1"}, nil)
		s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := connect("agent-a"), connect("agent-b")
	ask := func(s *mcp.ClientSession, need string) string {
		t.Helper()
		var args map[string]any
		if err := json.Unmarshal([]byte(need), &args); err != nil {
			t.Fatal(err)
		}
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "need_context", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("need_context: %+v, %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if text := ask(a, needLocateNewSearcher); !strings.Contains(text, "coverage_hit") {
		t.Fatalf("session A's first need: %q", text)
	}
	if text := ask(a, needLocateCRLF); !strings.Contains(text, "session need limit (1) reached") {
		t.Fatalf("session A's second need was not refused by its own ledger: %q", text)
	}
	if text := ask(b, needLocateCRLF); !strings.Contains(text, "coverage_hit") {
		t.Fatalf("session B's first need was limited by session A's ledger: %q", text)
	}
	if got := rt.mustStatus(t).CommandsServed; got != 5 {
		t.Errorf("the runtime served %d commands, want 5 (profile, two proposals, two MCP sessions)", got)
	}
}

// FuzzDecodeExecSpec: any first frame a client sends decodes to a spec
// with arguments, an absolute directory and no negative terminal width, or
// is refused; never a panic.
func FuzzDecodeExecSpec(f *testing.F) {
	f.Add([]byte(`{"args":["need","resolve"],"dir":"/w","path":"/bin","definition":"b3:x","schema":7}`))
	f.Add([]byte(`{"args":[],"dir":"rel"}`))
	f.Add([]byte(`{"args":["a"],"dir":"/","extra":1}`))
	f.Add([]byte(`{"args":["change","run"],"dir":"/","terminal":true,"columns":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeExecSpec(data)
		if err != nil {
			return
		}
		if len(s.Args) == 0 || len(s.Args) > 256 || !filepath.IsAbs(s.Dir) || s.Columns < 0 {
			t.Fatalf("accepted %+v", s)
		}
	})
}

// TestStartRuntime_FailureUndoes: a runtime that cannot start (its socket
// path is taken by a directory) leaves the lock free and nothing
// listening.
func TestStartRuntime_FailureUndoes(t *testing.T) {
	dir := shortDir(t)
	if err := os.Mkdir(filepath.Join(dir, socketFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := startRuntime(context.Background(), runtimeConfig{DataDir: dir}); err == nil {
		t.Fatal("the runtime started over a directory where its socket goes")
	}
	os.Remove(filepath.Join(dir, socketFileName))
	mustRuntime(t, dir) // the lock was released
}

// TestJournalFloor: the event tail's bound, compared as a string the way
// SQLite compares updated_at, lets through every stamp not older than
// journalSlack before the newest update seen, whatever their fractions
// (time order is the oracle); the plain string comparison it replaces
// loses some of them.
func TestJournalFloor(t *testing.T) {
	base := time.Date(2026, 12, 1, 11, 19, 8, 0, time.UTC)
	fracs := []int{0, 1, 10, 100_000_000, 120_000_000, 123_400_000, 123_456_789, 500_000_000, 999_999_999}
	plainMissed := 0
	for _, a := range fracs {
		since := base.Add(time.Duration(a))
		for _, b := range fracs {
			for _, ds := range []int{-60, -59, -1, 0, 1, 3600} {
				later := base.Add(time.Duration(ds)*time.Second + time.Duration(b))
				if later.Before(since.Add(-journalSlack)) {
					continue
				}
				stamp := later.Format(time.RFC3339Nano)
				if stamp < journalFloor(since) {
					t.Errorf("update %s is below the floor %q of %s", stamp, journalFloor(since), since.Format(time.RFC3339Nano))
				}
				if !later.Before(since) && stamp < since.Format(time.RFC3339Nano) {
					plainMissed++
				}
			}
		}
	}
	if plainMissed == 0 {
		t.Error("no stamp defeats the plain string comparison: the test does not test the floor")
	}
	if old := base.Add(-journalSlack - 2*time.Second).Format(time.RFC3339Nano); old >= journalFloor(base) {
		t.Errorf("%s, older than the slack, is above the floor %q", old, journalFloor(base))
	}
	if journalFloor(time.Time{}) != "" {
		t.Error("no update seen yet: the floor is not empty")
	}
}

// TestRuntime_Bounds: the runtime bounds what clients hold open: event
// streams past MaxStreams and connections past MaxConns are answered 503,
// and a refused (unauthenticated) connection is closed after its answer,
// never kept idle.
func TestRuntime_Bounds(t *testing.T) {
	start := func(cfg runtimeConfig) *Runtime {
		cfg.DataDir, cfg.Log = shortDir(t), testLog{t}
		rt, err := startRuntime(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Shutdown(context.Background()) })
		return rt
	}
	t.Run("Streams", func(t *testing.T) {
		rt := start(runtimeConfig{MaxStreams: 1})
		get := func(path string, auth bool) *http.Response {
			req, _ := http.NewRequest("GET", rt.URL()+path, nil)
			if auth {
				req.Header.Set("Authorization", "Bearer "+rt.token)
			}
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		stream := get("/api/v1/events", true)
		defer stream.Body.Close()
		if stream.StatusCode != 200 {
			t.Fatalf("first stream: %s", stream.Status)
		}
		second := get("/api/v1/events", true)
		second.Body.Close()
		if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
			t.Errorf("second stream: %s %v", second.Status, second.Header)
		}
		refused := get("/api/v1/status", false)
		refused.Body.Close()
		if refused.StatusCode != http.StatusUnauthorized || !refused.Close {
			t.Errorf("unauthenticated: %s, connection kept open: %v", refused.Status, !refused.Close)
		}
	})
	t.Run("Connections", func(t *testing.T) {
		rt := start(runtimeConfig{MaxConns: 2})
		host := strings.TrimPrefix(rt.URL(), "http://")
		dial := func() net.Conn {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		// An answered request on each proves the server holds it open.
		for range 2 {
			c := dial()
			fmt.Fprintf(c, "GET /api/v1/status HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", host, rt.token)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 || resp.Close {
				t.Fatalf("a held connection: %v %v", resp, err)
			}
			resp.Body.Close()
		}
		resp, err := http.ReadResponse(bufio.NewReader(dial()), nil)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a connection past the limit: %v %v", resp, err)
		}
	})
}
