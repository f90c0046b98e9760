package replay

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/transcript"
)

var run1 = map[string]string{"CWD": "/work/run1", "CODEX_HOME": "/work/run1-home"}

// playUntil plays the transcript's first n lines.
func playUntil(s *session, c *client, tr *transcript.Transcript, n int) {
	s.tb.Helper()
	for _, l := range tr.Lines[:n] {
		if l.Dir == transcript.ClientToServer {
			s.send(c.outgoing(l.Msg))
		} else {
			c.check(l.Msg, s.recv())
		}
	}
}

// mustMismatch asserts a *MismatchError at step with a reason containing want.
func mustMismatch(tb testing.TB, err error, step int, want string) *MismatchError {
	tb.Helper()
	var m *MismatchError
	if !errors.As(err, &m) {
		tb.Fatalf("err = %v, want *MismatchError", err)
	}
	if m.Step != step || !strings.Contains(m.Reason, want) {
		tb.Fatalf("mismatch at step %d (%s), want step %d and %q", m.Step, m.Reason, step, want)
	}
	return m
}

func start(t *testing.T, tr *transcript.Transcript) *session {
	return startSession(t, context.Background(), Config{
		Transcripts: []*transcript.Transcript{tr},
		Env:         map[string]string{"CODEX_HOME": run1["CODEX_HOME"]},
	})
}

func TestServe_Tampered(t *testing.T) {
	recorded := MustTranscript(t, "evidence")
	tampered := MustTranscript(t, "evidence")
	// Line 5 of the file, step 4: thread/start's sandbox.
	tampered.Lines[3].Msg = bytes.Replace(tampered.Lines[3].Msg, []byte(`"read-only"`), []byte(`"workspace-write"`), 1)
	s := start(t, tampered)
	c := newClient(t, run1, stringIDs)
	playUntil(s, c, recorded, 3)
	s.send(c.outgoing(recorded.Lines[3].Msg))
	mustRejection(t, s.recv(), `"needle-1"`)
	m := mustMismatch(t, s.close(), 4, `params.sandbox: expected "workspace-write", got "read-only"`)
	if m.Scenario != "evidence" || !bytes.Equal(m.Expected, tampered.Lines[3].Msg) || !bytes.Contains(m.Actual, []byte(`"needle-1"`)) {
		t.Errorf("mismatch = %+v", m)
	}
	if got := s.stderr.String(); !strings.Contains(got, "expected: ") || !strings.Contains(got, "actual:   ") {
		t.Errorf("stderr lacks expected/actual: %s", got)
	}
}

func TestServe_Truncated(t *testing.T) {
	full := MustTranscript(t, "evidence")
	cut := MustTranscript(t, "evidence")
	cut.Lines = cut.Lines[:8] // up to thread/start's response and thread/started
	t.Run("ErrMoreAfterEnd", func(t *testing.T) {
		s := start(t, cut)
		c := newClient(t, run1, intIDs)
		playUntil(s, c, full, 8)
		s.send(c.outgoing(full.Lines[8].Msg)) // turn/start
		mustRejection(t, s.recv(), `102`)
		m := mustMismatch(t, s.close(), 9, "after the end of the transcript")
		if m.Expected != nil {
			t.Errorf("Expected = %s, want nil after the end", m.Expected)
		}
	})
	t.Run("ErrNotificationAfterEnd", func(t *testing.T) {
		s := start(t, cut)
		playUntil(s, newClient(t, run1, intIDs), full, 8)
		s.send([]byte(`{"method":"initialized"}`))
		mustMismatch(t, s.wait(), 9, "after the end of the transcript")
	})
	t.Run("OKWhenClientStops", func(t *testing.T) {
		s := start(t, cut)
		playUntil(s, newClient(t, run1, intIDs), full, 8)
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServe_ClientClosesEarly(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	s := start(t, tr)
	playUntil(s, newClient(t, run1, intIDs), tr, 2)
	m := mustMismatch(t, s.close(), 3, "client closed its input before the transcript ended; expected notification initialized")
	if !bytes.Contains(m.Expected, []byte(`"initialized"`)) || m.Actual != nil {
		t.Errorf("mismatch = %+v", m)
	}
}

func TestServe_WrongKind(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	for _, tc := range []struct{ name, msg, want string }{
		{"NotificationForRequest", `{"method":"initialize","params":{}}`, "expected a request, got a notification"},
		{"ResponseForRequest", `{"id":0,"result":{}}`, "expected a request, got a response"},
		{"Malformed", `{"method":`, "not a JSON-RPC"},
		{"NoMethodNoID", `{"params":{}}`, "not a JSON-RPC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, tr)
			s.send([]byte(tc.msg))
			mustMismatch(t, s.wait(), 1, tc.want)
		})
	}
}

func TestServe_ServerRequestAnswers(t *testing.T) {
	tr := MustTranscript(t, "patch_approval")
	// Step 19 (file line 20) answers server request 0 with "accept".
	for _, tc := range []struct{ name, msg, want string }{
		{"ErrWrongID", `{"id":1,"result":{"decision":"accept"}}`, "answer to server request 0, got one to 1"},
		{"ErrWrongDecision", `{"id":0,"result":{"decision":"decline"}}`, "result.decision"},
		{"ErrErrorForResult", `{"id":0,"error":{"code":-1,"message":"no"}}`, "expected result, got error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, tr)
			playUntil(s, newClient(t, run1, intIDs), tr, 18)
			if got := describe(tr.Lines[18].Msg); got != "the answer to server request 0" {
				t.Errorf("describe = %q", got)
			}
			s.send([]byte(tc.msg))
			mustMismatch(t, s.wait(), 19, tc.want)
		})
	}
}

func TestServe_Timeout(t *testing.T) {
	s := startSession(t, context.Background(), Config{
		Transcripts: []*transcript.Transcript{MustTranscript(t, "evidence")},
		ReadTimeout: time.Millisecond, // the timeout is what is tested
	})
	mustMismatch(t, s.wait(), 1, "waiting for the client; expected request initialize")
}

func TestServe_Canceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := MustTranscript(t, "evidence")
	s := startSession(t, ctx, Config{Transcripts: []*transcript.Transcript{tr}, Env: map[string]string{"CODEX_HOME": "/h"}})
	c := newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs)
	playUntil(s, c, tr, 2) // the server now waits for "initialized"
	cancel()
	if err := s.wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestServe_ErrUnboundPlaceholder(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	s := startSession(t, context.Background(), Config{Transcripts: []*transcript.Transcript{tr}}) // no CODEX_HOME
	s.send(newClient(t, run1, intIDs).outgoing(tr.Lines[0].Msg))
	err := s.wait()
	if err == nil || !strings.Contains(err.Error(), "${CODEX_HOME} is not bound") {
		t.Fatalf("err = %v, want an unbound placeholder error", err)
	}
}

func TestServe_ErrConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Transcripts: []*transcript.Transcript{nil}}} {
		if err := Serve(context.Background(), cfg, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("Serve(%+v) = nil, want an error", cfg)
		}
	}
}

func TestServe_ErrLineTooLong(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	in := strings.NewReader(strings.Repeat("x", transcript.MaxLine+1) + "\n")
	err := Serve(context.Background(), Config{Transcripts: []*transcript.Transcript{tr}}, in, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v", err)
	}
}
