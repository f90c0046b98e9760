package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// withInstructions returns the evidence session recorded as if the client
// had started its thread with the given developerInstructions, and as if the
// model had answered with a worker-specific text, so the test can tell which
// candidate was served.
func withInstructions(tb testing.TB, worker string) *transcript.Transcript {
	tb.Helper()
	tr := MustTranscript(tb, "evidence")
	tr.Header.Scenario = "evidence-" + worker
	for i, l := range tr.Lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l.Msg, &m); err != nil {
			tb.Fatal(err)
		}
		if string(m["method"]) == `"thread/start"` {
			var params map[string]any
			if err := json.Unmarshal(m["params"], &params); err != nil {
				tb.Fatal(err)
			}
			params["developerInstructions"] = "needle worker invocation " + worker
			m["params"], _ = json.Marshal(params)
			tr.Lines[i].Msg, _ = json.Marshal(m)
			continue
		}
		tr.Lines[i].Msg = bytes.ReplaceAll(l.Msg, []byte("disposable checkout"), []byte("worker "+worker))
	}
	return tr
}

func TestServe_Selection(t *testing.T) {
	candidates := func(t *testing.T) []*transcript.Transcript {
		return []*transcript.Transcript{withInstructions(t, "A"), withInstructions(t, "B"), withInstructions(t, "C")}
	}
	env := map[string]string{"CODEX_HOME": "/h"}
	t.Run("OK", func(t *testing.T) {
		for i, want := range candidates(t) {
			s := startSession(t, context.Background(), Config{Transcripts: candidates(t), Env: env})
			newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs).play(s, want)
			if err := s.close(); err != nil {
				t.Fatalf("candidate %d: %v", i, err)
			}
		}
	})
	t.Run("ErrNoCandidate", func(t *testing.T) {
		s := startSession(t, context.Background(), Config{Transcripts: candidates(t), Env: env})
		c := newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs)
		d := withInstructions(t, "D")
		for _, l := range d.Lines[:3] { // initialize, its response, initialized
			if l.Dir == transcript.ClientToServer {
				s.send(c.outgoing(l.Msg))
			} else {
				c.check(l.Msg, s.recv())
			}
		}
		s.send(c.outgoing(d.Lines[3].Msg)) // thread/start as worker D
		mustRejection(t, s.recv(), `101`)
		err := s.close()
		var m *MismatchError
		if !errors.As(err, &m) {
			t.Fatalf("err = %v, want *MismatchError", err)
		}
		if m.Scenario != "evidence-A" || m.Step != 4 || !strings.Contains(m.Reason, "3 tried") ||
			!strings.Contains(m.Reason, "params.developerInstructions") {
			t.Errorf("mismatch = %+v", m)
		}
	})
	t.Run("ErrAmbiguous", func(t *testing.T) {
		// Two candidates that disagree on a server line before any client
		// line tells them apart: the initialize response.
		a, b := MustTranscript(t, "evidence"), MustTranscript(t, "evidence")
		b.Lines[1].Msg = bytes.Replace(b.Lines[1].Msg, []byte("platformOs"), []byte("platformOS"), 1)
		s := startSession(t, context.Background(), Config{Transcripts: []*transcript.Transcript{a, b}, Env: env})
		c := newClient(t, map[string]string{"CWD": "/c"}, intIDs)
		s.send(c.outgoing(a.Lines[0].Msg))
		if err := s.wait(); !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("err = %v, want ErrAmbiguous", err)
		}
	})
	t.Run("ErrAmbiguousEndVersusMore", func(t *testing.T) {
		// One candidate ends where the other still has a server line.
		a, b := MustTranscript(t, "failed"), MustTranscript(t, "failed")
		a.Lines = a.Lines[:len(a.Lines)-1]
		s := startSession(t, context.Background(), Config{Transcripts: []*transcript.Transcript{a, b}, Env: env})
		c := newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs)
		for _, l := range b.Lines[:len(b.Lines)-1] {
			if l.Dir == transcript.ClientToServer {
				s.send(c.outgoing(l.Msg))
			} else {
				c.check(l.Msg, s.recv())
			}
		}
		if err := s.wait(); !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("err = %v, want ErrAmbiguous", err)
		}
	})
}

// mustRejection checks the -32600 answer to an unexpected request.
func mustRejection(tb testing.TB, got []byte, id string) {
	tb.Helper()
	want := `{"id":` + id + `,"error":{"code":-32600,"message":"replay: unexpected request"}}`
	if string(got) != want {
		tb.Fatalf("answer = %s, want %s", got, want)
	}
}
