package replay

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// TestServe_Frozen replays every real session to a client that runs in a
// different checkout and CODEX_HOME and numbers its requests differently, so
// placeholder binding and id remapping are both exercised.
func TestServe_Frozen(t *testing.T) {
	for name, tr := range MustFrozen(t) {
		t.Run(name+"/Lockstep", func(t *testing.T) {
			vals := map[string]string{"CWD": t.TempDir() + "/checkout", "CODEX_HOME": t.TempDir()}
			s := startSession(t, context.Background(), Config{
				Transcripts: []*transcript.Transcript{tr},
				Env:         map[string]string{"CODEX_HOME": vals["CODEX_HOME"]},
			})
			newClient(t, vals, intIDs).play(s, tr)
			if err := s.close(); err != nil {
				t.Fatalf("Serve: %v\nstderr: %s", err, s.stderr)
			}
			if s.stderr.String() != "" {
				t.Errorf("stderr: %s", s.stderr)
			}
		})
		t.Run(name+"/AllAtOnce", func(t *testing.T) {
			// Every client line arrives in one write, ahead of the server:
			// the replay must lose none of what it has buffered.
			vals := map[string]string{"CWD": "/elsewhere/ckout", "CODEX_HOME": "/elsewhere/home"}
			s := startSession(t, context.Background(), Config{
				Transcripts: []*transcript.Transcript{tr},
				Env:         map[string]string{"CODEX_HOME": vals["CODEX_HOME"], "UNUSED": ""},
			})
			c := newClient(t, vals, stringIDs)
			var all bytes.Buffer
			for _, l := range tr.Lines {
				if l.Dir == transcript.ClientToServer {
					all.Write(c.outgoing(l.Msg))
					all.WriteByte('\n')
				}
			}
			go func() {
				s.stdin.Write(all.Bytes())
				s.stdin.Close()
			}()
			for _, l := range tr.Lines {
				if l.Dir == transcript.ServerToClient {
					c.check(l.Msg, s.recv())
				}
			}
			if err := s.wait(); err != nil {
				t.Fatalf("Serve: %v\nstderr: %s", err, s.stderr)
			}
		})
	}
}

// TestServe_GatedOnClient shows that nothing recorded after a client line is
// written before that line has been matched: the server lines that precede
// "initialized" in the steer session arrive, and when the client then sends
// something else the replay ends without having written anything further.
func TestServe_GatedOnClient(t *testing.T) {
	tr := MustFrozen(t)["steer"]
	s := startSession(t, context.Background(), Config{Transcripts: []*transcript.Transcript{tr}, Env: map[string]string{"CODEX_HOME": "/h"}})
	c := newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs)
	playUntil(s, c, tr, 4) // initialize, its response, configWarning, remoteControl/status/changed
	s.send([]byte(`{"method":"initialised"}`))
	rest, err := io.ReadAll(s.stdout)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the gate the server wrote %q (err %v)", rest, err)
	}
	mustMismatch(t, s.wait(), 5, `expected method "initialized", got "initialised"`)
}

// TestServe_IgnoreParamKeys lets a client with another version replay a
// session whose header ignores clientInfo.version.
func TestServe_IgnoreParamKeys(t *testing.T) {
	tr := MustFrozen(t)["failed"]
	s := startSession(t, context.Background(), Config{Transcripts: []*transcript.Transcript{tr}, Env: map[string]string{"CODEX_HOME": "/h"}})
	c := newClient(t, map[string]string{"CWD": "/c", "CODEX_HOME": "/h"}, intIDs)
	init := bytes.Replace(c.outgoing(tr.Lines[0].Msg), []byte(`"version":"0.0.1"`), []byte(`"version":"9.9.9"`), 1)
	if bytes.Equal(init, c.outgoing(tr.Lines[0].Msg)) {
		t.Fatal("test did not change the version")
	}
	s.send(init)
	for _, l := range tr.Lines[1:] {
		if l.Dir == transcript.ClientToServer {
			s.send(c.outgoing(l.Msg))
		} else {
			c.check(l.Msg, s.recv())
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}
