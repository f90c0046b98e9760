package appserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// frozenDir holds the sessions recorded from the real codex-cli 0.171.0.
const frozenDir = "../../../frozen/reference-0.171.0"

// scriptHeader is the header of every script a test writes.
const scriptHeader = `{"kind":"header","format":"needle.codex-appserver-transcript/v1","placeholders":["CODEX_HOME","CWD"],"match":{"ignoreParamKeys":["clientInfo.version"]}}`

var testInfo = ClientInfo{Name: "needle", Title: "Needle", Version: "0.0.1"}

// transcript is a frozen session; steps[0] is the line after the header,
// so line n of the file (header = line 0) is steps[n-1].
type transcript struct {
	steps []step
}

func loadFrozen(tb testing.TB, name string) *transcript {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(frozenDir, name+".jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	tr := &transcript{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var st step
		if err := json.Unmarshal(line, &st); err != nil {
			tb.Fatal(err)
		}
		if st.Dir != "" { // not the header
			tr.steps = append(tr.steps, st)
		}
	}
	return tr
}

// lines returns file lines from..to inclusive.
func (tr *transcript) lines(from, to int) []step { return tr.steps[from-1 : to] }

func (tr *transcript) line(n int) step { return tr.steps[n-1] }

func (tr *transcript) all() []step { return tr.steps }

// last is the number of the file's last line.
func (tr *transcript) last() int { return len(tr.steps) }

func c2s(msg string) step     { return step{Dir: DirC2S, Msg: json.RawMessage(msg)} }
func s2c(msg string) step     { return step{Dir: DirS2C, Msg: json.RawMessage(msg)} }
func rawS2C(line string) step { return step{Dir: DirS2C, Raw: line} }

func join(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// replaceText edits a step's message textually.
func replaceText(st step, old, new string) step {
	st.Msg = json.RawMessage(strings.ReplaceAll(string(st.Msg), old, new))
	return st
}

func writeScript(tb testing.TB, steps []step) string {
	tb.Helper()
	var buf bytes.Buffer
	buf.WriteString(scriptHeader + "\n")
	for _, st := range steps {
		line, err := json.Marshal(st)
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	path := filepath.Join(tb.TempDir(), "script.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

type peerOptions struct {
	end          string // the peer's envPeerEnd
	maxLine      int
	onRequest    RequestHandler
	onNote       func(string, json.RawMessage)
	tee          func(string, []byte)
	allowExitErr bool // the peer is expected to fail or be killed
}

// harness is a Client connected to a replay peer.
type harness struct {
	c      *Client
	dir    string // the peer's working directory, bound to ${CWD}
	home   string // CODEX_HOME, bound to ${CODEX_HOME}
	stderr *syncBuffer
}

func peerSpec(tb testing.TB, steps []step, opt peerOptions) (ProcSpec, *harness) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness{dir: tb.TempDir(), home: tb.TempDir(), stderr: &syncBuffer{}}
	spec := ProcSpec{
		Command: []string{exe},
		Dir:     h.dir,
		Env: []string{
			envPeerScript + "=" + writeScript(tb, steps), envPeerEnd + "=" + opt.end,
			"GORACE=atexit_sleep_ms=0", // a -race peer would otherwise linger 1s at exit
		},
		CodexHome: h.home,
		Stderr:    h.stderr, Tee: opt.tee, MaxLine: opt.maxLine,
		OnRequest: opt.onRequest, OnNotification: opt.onNote,
	}
	return spec, h
}

// startPeer starts a client against a peer playing steps. At cleanup it
// closes the client and, unless allowExitErr, fails the test if the peer did
// not end cleanly, i.e. the client did not send exactly the scripted lines.
func startPeer(t *testing.T, steps []step, opt peerOptions) *harness {
	t.Helper()
	spec, h := peerSpec(t, steps, opt)
	c, err := Start(testContext(t), spec, testInfo)
	if err != nil {
		t.Fatalf("Start: %v\nstderr:\n%s", err, h.stderr)
	}
	h.c = c
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := c.ExitErr(); err != nil && !opt.allowExitErr {
			t.Errorf("peer exit: %v\nstderr:\n%s", err, h.stderr)
		}
	})
	return h
}

// binds is the peer's placeholder substitution for this harness.
func (h *harness) binds() *strings.Replacer { return placeholders(h.dir, h.home) }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Parameters of the recorded sessions.
var (
	readOnlyThread = func(dir string) ThreadStartParams {
		return ThreadStartParams{Cwd: dir, Sandbox: "read-only", ApprovalPolicy: "never", Ephemeral: true}
	}
	readOnlyPolicy = map[string]any{"type": "readOnly", "networkAccess": false}
	evidencePrompt = "Collect evidence about README.txt"
	evidenceSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},` +
		`"files":{"type":"array","items":{"type":"string"}}},"required":["answer","files"],"additionalProperties":false}`)
)

// readOnlyTurn is the turn/start of the evidence, steer, interrupt and
// failed sessions.
func readOnlyTurn(threadID string) TurnStartParams {
	return TurnStartParams{
		ThreadID: threadID, Input: []UserInput{TextInput(evidencePrompt)},
		SandboxPolicy: readOnlyPolicy, ApprovalPolicy: "never",
	}
}

// itemView is the part of an Item the tests compare.
type itemView struct {
	ID, Type, Status string
	Completed        bool
}

func viewItems(items []Item) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		out[i] = itemView{it.ID, it.Type, it.Status, it.Completed}
	}
	return out
}

// expectIncludeTurnsRefused sends the thread/read that ends every recorded
// session and checks the server's refusal.
func expectIncludeTurnsRefused(t *testing.T, c *Client, threadID string) {
	t.Helper()
	params := map[string]any{"threadId": threadID, "includeTurns": true}
	err := c.Call(testContext(t), "thread/read", params, nil)
	rpc, ok := err.(*RPCError)
	if !ok || rpc.Code != CodeInvalidRequest || rpc.Message != "ephemeral threads do not support includeTurns" {
		t.Fatalf("thread/read: got %v, want the -32600 includeTurns refusal", err)
	}
}
