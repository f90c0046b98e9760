package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// mcpPeer is the client end of one MCP stdio connection to a server
// process: newline-delimited JSON-RPC over the process's real pipes. It
// times each request from the write of its line to the read of the reply's
// line and decodes the reply only after the clock stops.
type mcpPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   chan error
	id     int
	line   []byte

	closeOnce sync.Once
	closeErr  error
}

// startPeer starts argv with pipes on stdin and stdout.
func startPeer(ctx context.Context, argv []string, env []string) (*mcpPeer, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	p := &mcpPeer{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(stdout, 256<<10)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call sends one request and returns the round-trip time and the reply.
func (p *mcpPeer) call(method string, params []byte) (time.Duration, rpcReply, error) {
	p.id++
	p.line = fmt.Appendf(p.line[:0], `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", p.id, method, params)
	start := time.Now()
	if _, err := p.stdin.Write(p.line); err != nil {
		return 0, rpcReply{}, p.failed(fmt.Errorf("%s: write: %w", method, err))
	}
	line, err := p.out.ReadBytes('\n')
	took := time.Since(start)
	if err != nil {
		return 0, rpcReply{}, p.failed(fmt.Errorf("%s: read: %w", method, err))
	}
	var r rpcReply
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, rpcReply{}, fmt.Errorf("%s: reply is not JSON-RPC: %w: %.200s", method, err, line)
	}
	if string(r.ID) != fmt.Sprint(p.id) {
		return 0, rpcReply{}, fmt.Errorf("%s: reply to id %s, want %d (the server sent something else first): %.200s", method, r.ID, p.id, line)
	}
	return took, r, nil
}

// notify sends a notification, which has no reply.
func (p *mcpPeer) notify(method string) error {
	_, err := fmt.Fprintf(p.stdin, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	return err
}

// initialize opens the MCP session.
func (p *mcpPeer) initialize() (time.Duration, error) {
	took, r, err := p.call("initialize", []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"needlebench","version":"1"}}`))
	if err == nil {
		err = checkInitialize(r)
	}
	if err == nil {
		err = p.notify("notifications/initialized")
	}
	return took, err
}

// close closes stdin and waits for the server to exit. Calling it again
// returns the first call's result.
func (p *mcpPeer) close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown() })
	return p.closeErr
}

func (p *mcpPeer) shutdown() error {
	p.stdin.Close()
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("server exited: %w: %s", err, p.stderr.String())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("server did not exit within 30s of its stdin closing: %s", p.stderr.String())
	}
}

// failed adds what the server said on stderr to a transport failure.
func (p *mcpPeer) failed(err error) error {
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		return fmt.Errorf("%w (server stderr: %s)", err, msg)
	}
	return err
}

// checkInitialize accepts an initialize result naming a protocol version.
func checkInitialize(r rpcReply) error {
	if r.Error != nil {
		return fmt.Errorf("initialize: error %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ProtocolVersion == "" {
		return fmt.Errorf("initialize: no protocolVersion in %.200s", r.Result)
	}
	return nil
}

// needAnswer is the part of a need_context tool result the experiment
// checks.
type needAnswer struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool `json:"isError"`
	StructuredContent *struct {
		Status     string `json:"status"`
		NeedID     string `json:"need_id"`
		Resolution struct {
			Kind          string   `json:"kind"`
			ArtifactIDs   []string `json:"artifact_ids"`
			CertificateID string   `json:"certificate_id"`
		} `json:"resolution"`
		CacheHit      bool   `json:"cache_hit"`
		WorkerSpawned bool   `json:"worker_spawned"`
		Context       string `json:"context"`
	} `json:"structuredContent"`
}

// checkHit decodes a need_context reply and accepts it only if it is a hit
// served from evidence: status hit, cache_hit, no worker, a context equal to
// the text content. With exact set the resolution must be exact_hit: the
// need answered before, from its need certificate. It returns the need_id.
func checkHit(r rpcReply, exact bool) (string, error) {
	if r.Error != nil {
		return "", fmt.Errorf("error %d: %s", r.Error.Code, r.Error.Message)
	}
	var a needAnswer
	if err := json.Unmarshal(r.Result, &a); err != nil {
		return "", fmt.Errorf("result does not decode: %w", err)
	}
	s := a.StructuredContent
	switch {
	case a.IsError:
		return "", fmt.Errorf("tool error: %.200v", a.Content)
	case s == nil:
		return "", errors.New("no structuredContent")
	case exact && s.Resolution.Kind != "exact_hit":
		return "", fmt.Errorf("resolution %s, want exact_hit: %.300s", s.Resolution.Kind, s.Context)
	case !strings.HasSuffix(s.Resolution.Kind, "_hit") || s.Resolution.Kind == "partial_hit" || s.Status != "hit":
		return "", fmt.Errorf("resolution %s (status %s), want a hit: %.300s", s.Resolution.Kind, s.Status, s.Context)
	case !s.CacheHit || s.WorkerSpawned:
		return "", fmt.Errorf("cache_hit %v, worker_spawned %v; want true, false", s.CacheHit, s.WorkerSpawned)
	case s.Context == "" || len(s.Resolution.ArtifactIDs) == 0 || s.Resolution.CertificateID == "":
		return "", errors.New("a hit without context, artifacts or certificate")
	case len(a.Content) == 0 || a.Content[0].Type != "text" || a.Content[0].Text != s.Context:
		return "", errors.New("content[0].text is not structuredContent.context")
	}
	return s.NeedID, nil
}

// noopTool is the name of the no-op tools/call. needle offers no tool that
// does nothing, so the no-op is a call of a tool it does not have: it
// travels the same path as need_context up to the engine (line read, JSON
// decode, method table, the serialized tool-call queue, params decode) and
// is answered with the -32602 error the MCP contract fixes for it. It is
// the floor of any tools/call on this server; need_context ÷ no-op is what
// the resolution itself costs.
const noopTool = "needlebench_noop"

var noopParams = []byte(`{"name":"` + noopTool + `","arguments":{}}`)

// checkNoop accepts only the unknown-tool error.
func checkNoop(r rpcReply) error {
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "unknown tool") {
		return fmt.Errorf("no-op tools/call: want error -32602 unknown tool, got %+v %.200s", r.Error, r.Result)
	}
	return nil
}

// checkPing accepts only an empty result.
func checkPing(r rpcReply) error {
	if r.Error != nil || strings.TrimSpace(string(r.Result)) != "{}" {
		return fmt.Errorf("ping: want {}, got %+v %.200s", r.Error, r.Result)
	}
	return nil
}

// tailBuffer keeps the last max bytes written (a server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf))
}

// scrubbedEnv is the environment of the processes the experiment starts:
// its own, without GIT_* variables that could point git elsewhere.
func scrubbedEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
