// The process harness of the hardening tests (issue 12): each drives the
// real needle command as a separate process — over stdio JSON-RPC, on the
// command line, or on a file system built to fail. The tests of items not
// fixed yet carry the build tag "harden" and run with
//
//	go test -tags harden ./testscripts -run Harden
//
// "needle" is the testscript command this package's TestMain puts on PATH
// (product.Main); the SIGTERM test builds cmd/needle, whose main installs the
// signal handling.
package testscripts

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// awaitLimit bounds how long a test waits for one reply or one exit. It is
// a guard against a hung server, not a timing assertion.
const awaitLimit = 2 * time.Minute

// needlePath is the needle command on PATH (testscript's copy of this test
// binary, which runs product.Main).
func needlePath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("needle")
	if err != nil {
		t.Fatalf("needle is not on PATH: %v (testscript.Main puts it there)", err)
	}
	return p
}

// buildNeedle builds cmd/needle into a temporary directory: the binary a
// user installs, with its signal handling.
func buildNeedle(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "needle")
	cmd := exec.Command("go", "build", "-o", out, "github.com/needle-dev/needle/cmd/needle")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/needle: %v\n%s", err, b)
	}
	return out
}

// writeTree writes files (slash paths → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitRepo makes dir a git repository with everything in it committed.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-qm", "fixture")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// storeGo is the Go fixture most tests cite: Open is declared at lines 4-7.
const storeGo = `package store

// Open opens the store.
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return nil }

// Store is a directory of records.
type Store struct{ dir string }
`

// openLocation is a proposal that certifies Open in storeGo.
const openLocation = `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Open"},"path":"store.go","start_line":4,"end_line":7}`

// needOpen asks where Open is implemented.
const needOpen = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"}}`

// storeRepo returns a committed git repository holding storeGo and a data
// directory beside it (outside the repository, as workers require).
func storeRepo(t *testing.T) (repo, data string) {
	t.Helper()
	dir := t.TempDir()
	repo, data = filepath.Join(dir, "repo"), filepath.Join(dir, "data")
	writeTree(t, repo, map[string]string{"store.go": storeGo})
	gitRepo(t, repo)
	return repo, data
}

// runResult is one finished command.
type runResult struct {
	code           int
	stdout, stderr string
}

// run runs needle with args and stdin, waiting for it to exit.
func run(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(needlePath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("needle %v: %v", args, err)
	}
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// propose runs `needle evidence propose` and decodes its result; a command
// that prints no result yields status "".
func propose(t *testing.T, repo, data, proposal string) (proposeOut, runResult) {
	t.Helper()
	r := run(t, proposal, "evidence", "propose", "--repository", repo, "--data-dir", data, "-")
	var p proposeOut
	if strings.TrimSpace(r.stdout) != "" {
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatalf("propose printed %q: %v", r.stdout, err)
		}
	}
	return p, r
}

type proposeOut struct {
	Status     string   `json:"status"`
	ArtifactID string   `json:"artifact_id"`
	Reasons    []string `json:"reasons"`
}

// needResult is the part of a need_context / need resolve result the tests read.
type needResult struct {
	Status string `json:"status"`
	Step   struct {
		Ordinal  int    `json:"ordinal"`
		Relation string `json:"relation"`
	} `json:"step"`
	Resolution struct {
		Kind          string   `json:"kind"`
		ArtifactIDs   []string `json:"artifact_ids"`
		CertificateID string   `json:"certificate_id"`
	} `json:"resolution"`
	WorkerSpawned bool   `json:"worker_spawned"`
	Context       string `json:"context"`
}

// resolve runs `needle need resolve` (cache-only unless extra says
// otherwise) and decodes its result.
func resolve(t *testing.T, repo, data, need string, extra ...string) needResult {
	t.Helper()
	args := append([]string{"need", "resolve", "--repository", repo, "--data-dir", data}, extra...)
	if len(extra) == 0 {
		args = append(args, "--cache-only")
	}
	r := run(t, need, append(args, "-")...)
	if r.code != 0 {
		t.Fatalf("need resolve exited %d: %s", r.code, r.stderr)
	}
	var res needResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("need resolve printed %q: %v", r.stdout, err)
	}
	return res
}

// hit reports whether a result served certified context.
func (r needResult) hit() bool { return r.Status == "hit" }

// storeText returns every text value of every table of the SQLite store in
// data, to check that something never reached it whatever the schema.
func storeText(t *testing.T, data string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	tables.Close()
	var b strings.Builder
	for _, n := range names {
		rows, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				fmt.Fprintf(&b, "%s\x00", v)
			}
		}
		rows.Close()
	}
	return b.String()
}

// queryInt runs a counting query on the store in data.
func queryInt(t *testing.T, data, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// mcpProc is a running `needle mcp serve` driven over its real stdio pipes.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // raw stdout lines, closed at EOF
	read   [][]byte    // every line read so far, in order
	stderr *lockedBuf
	exited chan struct{}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMCP starts bin (needle) with args, e.g. "mcp", "serve", ….
func startMCP(t *testing.T, bin string, args ...string) *mcpProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpProc{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 1024), stderr: &lockedBuf{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.stdin.Close()
			p.cmd.Process.Kill()
			p.wait()
		}
	})
	return p
}

// serveArgs are the arguments of `needle mcp serve` for repo and data.
func serveArgs(repo, data string, extra ...string) []string {
	return append([]string{"mcp", "serve", "--data-dir", data, "--repository", repo,
		"--main-model", "test-model", "--role-profile", "default"}, extra...)
}

// sendLine writes one raw line (a newline is appended).
func (p *mcpProc) sendLine(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("write %q: %v", line, err)
	}
}

// initialize performs the MCP handshake.
func (p *mcpProc) initialize() {
	p.t.Helper()
	p.sendLine(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"harden","version":"1"}}}`)
	if r := p.await(`"init"`); r.Error != nil {
		p.t.Fatalf("initialize: %+v", r.Error)
	}
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// rpcReply is one JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

func parseReply(t *testing.T, line []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("server wrote a line that is not JSON: %q: %v", line, err)
	}
	r.raw = line
	return r
}

// pull reads the next stdout line, or returns nil at EOF.
func (p *mcpProc) pull() []byte {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return nil
		}
		p.read = append(p.read, line)
		return line
	case <-time.After(awaitLimit):
		p.t.Fatalf("no output from needle mcp serve within %v; stderr:\n%s", awaitLimit, p.stderr.String())
	}
	return nil
}

// await returns the reply whose id is exactly the JSON text id, reading
// further lines as needed.
func (p *mcpProc) await(id string) rpcReply {
	p.t.Helper()
	for i := 0; ; i++ {
		if i >= len(p.read) {
			if p.pull() == nil {
				p.t.Fatalf("stdout ended without a reply to id %s; stderr:\n%s", id, p.stderr.String())
			}
		}
		r := parseReply(p.t, p.read[i])
		if string(r.ID) == id {
			return r
		}
	}
}

// call sends a tools/call request and returns its reply.
func (p *mcpProc) call(id int, tool string, args string) rpcReply {
	p.t.Helper()
	p.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	return p.await(fmt.Sprint(id))
}

// short clips a reply for a failure message.
func short(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// structured decodes a tool result's structuredContent.
func structured(t *testing.T, r rpcReply) needResult {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("tools/call failed: %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		IsError bool       `json:"isError"`
		SC      needResult `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %s", short(r.raw))
	}
	return res.SC
}

// finish closes stdin, reads stdout to its end and waits for the process;
// it returns the exit code and every stdout line.
func (p *mcpProc) finish() (int, [][]byte) {
	p.t.Helper()
	p.stdin.Close()
	for p.pull() != nil {
	}
	return p.wait(), p.read
}

func (p *mcpProc) wait() int {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(awaitLimit):
		p.cmd.Process.Kill()
		err = <-done
		p.t.Errorf("needle mcp serve did not exit within %v", awaitLimit)
	}
	select {
	case <-p.exited:
	default:
		close(p.exited)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		p.t.Fatalf("wait: %v", err)
	}
	return 0
}

// workerScript writes an executable stand-in for the App Server command
// (`--codex PATH`): it appends a line to log each time a worker starts,
// then runs body (a shell fragment), so a test can see whether a worker was
// spawned and control what it does.
func workerScript(t *testing.T, log, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-codex")
	script := fmt.Sprintf("#!/bin/sh\necho started >> %s\n%s\n", shellQuote(log), body)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
