// The MCP half of the process harness (harness_test.go is the command-line
// half): a real `needle mcp serve` driven over its stdio pipes, the
// built cmd/needle with its signal handling, and the fixture most
// hardening tests of issue 12 cite.
package testscripts

import (
	"bufio"
	"bytes"
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
)

// awaitLimit bounds how long a test waits for one reply or one exit. It is
// a guard against a hung server, not a timing assertion.
const awaitLimit = 2 * time.Minute

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
