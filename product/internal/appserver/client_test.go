package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStart_Handshake(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	t.Run("OK", func(t *testing.T) {
		h := startPeer(t, ev.lines(1, 3), peerOptions{})
		want := InitializeResult{
			UserAgent:      "needle/0.171.0 (Debian 12.0.0; x86_64) xterm (needle; 0.0.1)",
			CodexHome:      h.home, // the peer read it from the CODEX_HOME we appended
			PlatformFamily: "unix",
			PlatformOs:     "linux",
		}
		if diff := cmp.Diff(want, h.c.Init()); diff != "" {
			t.Errorf("Init() mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("ErrContext", func(t *testing.T) {
		spec, h := peerSpec(t, ev.lines(1, 3), peerOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c, err := Start(ctx, spec, testInfo)
		if !errors.Is(err, context.Canceled) || c != nil {
			t.Fatalf("Start with a cancelled context: got %v, %v; want context.Canceled\n%s", c, err, h.stderr)
		}
	})
	t.Run("ErrCommand", func(t *testing.T) {
		_, err := Start(testContext(t), ProcSpec{}, testInfo)
		if err == nil {
			t.Fatal("Start with no command succeeded")
		}
	})
}

func TestClient_MalformedLine(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	steps := join(ev.lines(1, 4),
		[]step{rawS2C("this is not json"), rawS2C(`{"id":`), rawS2C(`{"neither":"request nor response"}`)},
		ev.lines(5, 8))
	h := startPeer(t, steps, peerOptions{})
	th, err := h.c.StartThread(testContext(t), readOnlyThread(h.dir))
	if err != nil {
		t.Fatalf("StartThread after malformed lines: %v\n%s", err, h.stderr)
	}
	if th.ID != "01a228b8-add6-7453-a2c3-aa6627e3c286" {
		t.Errorf("thread id = %q", th.ID)
	}
	if n := strings.Count(h.stderr.String(), "skipping malformed line"); n != 3 {
		t.Errorf("logged %d malformed lines, want 3; stderr:\n%s", n, h.stderr)
	}
}

func TestClient_LineTooLong(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	long := `{"method":"warning","params":{"message":"` + strings.Repeat("x", 8192) + `"}}`
	steps := join(ev.lines(1, 4), []step{s2c(long)}, ev.lines(7, 7))
	h := startPeer(t, steps, peerOptions{maxLine: 4096, allowExitErr: true})
	_, err := h.c.StartThread(testContext(t), readOnlyThread(h.dir))
	if !errors.Is(err, ErrLineTooLong) || !errors.Is(err, ErrClosed) {
		t.Fatalf("StartThread: got %v, want ErrLineTooLong and ErrClosed", err)
	}
	<-h.c.Exited() // the client killed the process
	if err := h.c.Notify("initialized", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Notify after failure: got %v, want ErrClosed", err)
	}
}

func TestClient_ProcessExit(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	wantExit7 := func(t *testing.T, err error) {
		t.Helper()
		var exit *exec.ExitError
		if !errors.Is(err, ErrClosed) || !errors.As(err, &exit) || exit.ExitCode() != 7 {
			t.Fatalf("got %v, want ErrClosed wrapping exit status 7", err)
		}
	}
	t.Run("FailsPendingCall", func(t *testing.T) {
		h := startPeer(t, ev.lines(1, 4), peerOptions{end: "exit:7", allowExitErr: true})
		_, err := h.c.StartThread(testContext(t), readOnlyThread(h.dir))
		wantExit7(t, err)
		wantExit7(t, h.c.Call(testContext(t), "thread/list", nil, nil))
	})
	t.Run("FailsUnfinishedTurn", func(t *testing.T) {
		h := startPeer(t, ev.lines(1, 13), peerOptions{end: "exit:7", allowExitErr: true})
		ctx := testContext(t)
		th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
		if err != nil {
			t.Fatal(err)
		}
		p := readOnlyTurn(th.ID)
		p.OutputSchema = evidenceSchema
		turn, err := h.c.StartTurn(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = turn.Wait(ctx)
		wantExit7(t, err)
		<-turn.Started() // closed even though the turn never completed
	})
}

func TestClient_CloseKillsUnresponsiveServer(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	h := startPeer(t, ev.lines(1, 3), peerOptions{end: "hang", allowExitErr: true})
	// The peer ignores stdin EOF and SIGTERM, and a grandchild holds its
	// stdout: only the process group kill after the grace period ends it,
	// well before this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.c.Close(ctx); err != nil {
		t.Fatalf("Close: %v (the grace-period kill did not happen first)", err)
	}
	var exit *exec.ExitError
	if err := h.c.ExitErr(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("ExitErr = %v, want killed by SIGKILL", err)
	}
	if err := h.c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := h.c.Call(ctx, "thread/list", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: got %v, want ErrClosed", err)
	}
}

func TestClient_Kill(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	h := startPeer(t, ev.lines(1, 3), peerOptions{allowExitErr: true})
	if err := h.c.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.c.Exited()
	if err := h.c.Call(testContext(t), "thread/list", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Kill: got %v, want ErrClosed", err)
	}
}

type teeLine struct {
	dir  string
	line string
}

func TestClient_Tee(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	var mu sync.Mutex
	var got []teeLine
	tee := func(dir string, line []byte) {
		mu.Lock()
		got = append(got, teeLine{dir, string(line)})
		mu.Unlock()
	}
	h := startPeer(t, ev.all(), peerOptions{tee: tee})
	runEvidence(t, h)
	if err := h.c.Close(testContext(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var gotS2C, wantS2C []string
	var gotC2S, wantC2S []map[string]any
	for _, l := range got {
		if l.dir == DirS2C {
			gotS2C = append(gotS2C, l.line)
		} else {
			gotC2S = append(gotC2S, decodeAny(l.line))
		}
	}
	for _, st := range ev.all() {
		if st.Dir == DirS2C {
			wantS2C = append(wantS2C, string(renderS2C(st.Msg, h.binds())))
		} else {
			wantC2S = append(wantC2S, decodeAny(h.binds().Replace(string(st.Msg))))
		}
	}
	if diff := cmp.Diff(wantS2C, gotS2C); diff != "" {
		t.Errorf("s2c lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantC2S, gotC2S); diff != "" {
		t.Errorf("c2s messages (-want +got):\n%s", diff)
	}
	checkCausalOrder(t, got)
}

// checkCausalOrder checks that every response is teed after its request and
// that no client line carries a jsonrpc field.
func checkCausalOrder(t *testing.T, lines []teeLine) {
	t.Helper()
	sent := map[string]bool{}
	for i, l := range lines {
		var m struct {
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			JSONRPC *string         `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l.line), &m); err != nil {
			t.Fatalf("tee line %d: %v", i, err)
		}
		switch {
		case l.dir == DirC2S && m.JSONRPC != nil:
			t.Errorf("tee line %d sends jsonrpc: %s", i, l.line)
		case l.dir == DirC2S && m.Method != "" && m.ID != nil:
			sent[string(m.ID)] = true
		case l.dir == DirS2C && m.Method == "" && !sent[string(m.ID)]:
			t.Errorf("tee line %d: response %s before its request", i, m.ID)
		}
	}
}
