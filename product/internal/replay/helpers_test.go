package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// frozenDir holds the frozen real sessions; CI has it, so absence fails.
const frozenDir = "../../../frozen/reference-0.171.0"

// safety bounds every wait in these tests; none is expected to come close.
const safety = 20 * time.Second

// MustFrozen reads every frozen transcript, keyed by file base name.
func MustFrozen(tb testing.TB) map[string]*transcript.Transcript {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(frozenDir, "*.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(names) == 0 {
		tb.Fatalf("no frozen transcripts in %s: the shared fixtures must be present", frozenDir)
	}
	out := make(map[string]*transcript.Transcript)
	for _, name := range names {
		tr, err := transcript.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(name), ".jsonl")] = tr
	}
	return out
}

// MustTranscript returns one frozen transcript, read afresh so the test may edit it.
func MustTranscript(tb testing.TB, scenario string) *transcript.Transcript {
	tb.Helper()
	tr, ok := MustFrozen(tb)[scenario]
	if !ok {
		tb.Fatalf("no frozen transcript %q", scenario)
	}
	return tr
}

// lockedBuffer is a bytes.Buffer safe for the server and the test at once.
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

// session is a running Serve with the client's ends of its pipes.
type session struct {
	tb     testing.TB
	stdin  *io.PipeWriter
	stdout *bufio.Reader
	stderr *lockedBuffer
	errc   chan error
}

// startSession runs Serve on pipes. When Serve returns, its stdout is closed
// (the client sees EOF) and its stdin read end is closed (client writes fail
// instead of blocking), as when a real server process exits.
func startSession(tb testing.TB, ctx context.Context, cfg Config) *session {
	tb.Helper()
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = safety
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{tb: tb, stdin: inW, stdout: bufio.NewReader(outR), stderr: &lockedBuffer{}, errc: make(chan error, 1)}
	go func() {
		err := Serve(ctx, cfg, inR, outW, s.stderr)
		outW.Close()
		inR.Close()
		s.errc <- err
	}()
	tb.Cleanup(func() { inW.Close() })
	return s
}

func (s *session) send(msg []byte) {
	s.tb.Helper()
	if _, err := s.stdin.Write(append(bytes.Clone(msg), '\n')); err != nil {
		s.tb.Fatalf("send %s: %v", msg, err)
	}
}

func (s *session) recv() []byte {
	s.tb.Helper()
	line, err := s.stdout.ReadBytes('\n')
	if err != nil {
		s.tb.Fatalf("recv: %v (server stderr: %s)", err, s.stderr.String())
	}
	return bytes.TrimSuffix(line, []byte("\n"))
}

// close closes the client's stdin and returns Serve's result.
func (s *session) close() error {
	s.stdin.Close()
	return s.wait()
}

// wait returns Serve's result without closing stdin.
func (s *session) wait() error {
	select {
	case err := <-s.errc:
		return err
	case <-time.After(safety):
		s.tb.Fatal("Serve did not return")
		return nil
	}
}

// client plays the client side of a transcript: it sends the recorded c2s
// lines with its own placeholder values and request ids, and checks that
// every s2c line arrives with those values and ids.
type client struct {
	tb    testing.TB
	vals  map[string]string // placeholder values of this run
	newID func(recorded json.RawMessage) json.RawMessage
	ids   map[string]json.RawMessage // recorded id → id sent
}

func newClient(tb testing.TB, vals map[string]string, newID func(json.RawMessage) json.RawMessage) *client {
	return &client{tb: tb, vals: vals, newID: newID, ids: make(map[string]json.RawMessage)}
}

// outgoing returns what the client sends for a recorded c2s message.
func (c *client) outgoing(rec json.RawMessage) []byte {
	c.tb.Helper()
	m := c.members(c.substitute(rec))
	if transcript.Kind(rec) == transcript.KindRequest {
		id := c.newID(m["id"])
		c.ids[idKey(m["id"])] = id
		m["id"] = id
	}
	out, err := json.Marshal(m) // sorted keys: the server must not care about order
	if err != nil {
		c.tb.Fatal(err)
	}
	return out
}

// check compares a received line with the recorded s2c message.
func (c *client) check(rec json.RawMessage, got []byte) {
	c.tb.Helper()
	m := c.members(c.substitute(rec))
	if transcript.Kind(rec) == transcript.KindResponse {
		if id, ok := c.ids[idKey(m["id"])]; ok {
			m["id"] = id
		}
	}
	want, _ := json.Marshal(m)
	if diff := cmp.Diff(decodeAny(c.tb, want), decodeAny(c.tb, got)); diff != "" {
		c.tb.Fatalf("server line (-want +got):\n%s", diff)
	}
}

func (c *client) substitute(rec json.RawMessage) json.RawMessage {
	var pairs []string
	for k, v := range c.vals {
		pairs = append(pairs, "${"+k+"}", v)
	}
	out, err := transcript.MapStrings(rec, strings.NewReplacer(pairs...).Replace)
	if err != nil {
		c.tb.Fatal(err)
	}
	return out
}

func (c *client) members(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.tb.Fatal(err)
	}
	return m
}

// play runs the whole transcript in lockstep with the server.
func (c *client) play(s *session, tr *transcript.Transcript) {
	c.tb.Helper()
	for _, l := range tr.Lines {
		if l.Dir == transcript.ClientToServer {
			s.send(c.outgoing(l.Msg))
		} else {
			c.check(l.Msg, s.recv())
		}
	}
}

func decodeAny(tb testing.TB, raw []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// intIDs gives request ids 100 above the recorded ones.
func intIDs(rec json.RawMessage) json.RawMessage {
	var n int
	json.Unmarshal(rec, &n)
	out, _ := json.Marshal(n + 100)
	return out
}

// stringIDs gives string request ids, as a client may.
func stringIDs(rec json.RawMessage) json.RawMessage {
	out, _ := json.Marshal("needle-" + string(rec))
	return out
}
