package runlock

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/procdir"
)

// The test binary doubles as a lock holder in another process: with
// RUNLOCK_HELPER=hold:PATH it takes the lock, publishes an endpoint, prints
// "ready" and keeps the lock until its stdin closes; with RUNLOCK_HELPER=wait
// it holds nothing and just waits for stdin to close.
func TestMain(m *testing.M) {
	mode := os.Getenv("RUNLOCK_HELPER")
	switch {
	case mode == "wait":
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case strings.HasPrefix(mode, "hold:"):
		l, err := Acquire(strings.TrimPrefix(mode, "hold:"), time.Now())
		if err == nil {
			err = l.Publish("unix:helper.sock")
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		if err := l.Release(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper is another process running this test binary in mode.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHelper(t *testing.T, mode string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNLOCK_HELPER="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.stdin.Close(); h.cmd.Process.Kill(); h.cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("helper %s said %q (%v)", mode, line, err)
	}
	return h
}

func (h *helper) id(t *testing.T) procdir.ID {
	start, err := procdir.Start(h.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return procdir.ID{PID: h.cmd.Process.Pid, Start: start}
}

func mustAcquire(t *testing.T, path string) *Lock {
	t.Helper()
	l, err := Acquire(path, time.Now())
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	t.Cleanup(func() { l.Release() })
	return l
}

func heldError(t *testing.T, err error) *HeldError {
	t.Helper()
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire = %v, want a *HeldError", err)
	}
	return held
}

func TestAcquire(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "serve.lock")
		l := mustAcquire(t, path)
		if err := l.Publish("http://127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("lock file mode %v, want 0600", fi.Mode().Perm())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var h Holder
		if err := json.Unmarshal(data, &h); err != nil {
			t.Fatalf("record %q: %v", data, err)
		}
		if h.PID != os.Getpid() || h.Start == "" || len(h.Endpoints) != 1 || h.Endpoints[0] != "http://127.0.0.1:1" {
			t.Errorf("record %+v, want this process with its endpoint", h)
		}
		if l.Previous() != nil {
			t.Errorf("Previous() = %+v on a fresh file", l.Previous())
		}
	})
	t.Run("ErrHeldInProcess", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "serve.lock")
		l := mustAcquire(t, path)
		l.Publish("http://127.0.0.1:2")
		_, err := Acquire(path, time.Now())
		held := heldError(t, err)
		if held.Holder.PID != os.Getpid() || held.Unlocked {
			t.Errorf("HeldError %+v, want this process, locked", held)
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(msg, "http://127.0.0.1:2") {
			t.Errorf("message %q does not name the holder and its endpoint", msg)
		}
	})
	t.Run("ErrHeldByProcess", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "serve.lock")
		h := startHelper(t, "hold:"+path)
		_, err := Acquire(path, time.Now())
		held := heldError(t, err)
		if held.Holder.ID != h.id(t) {
			t.Errorf("holder %+v, want %+v", held.Holder.ID, h.id(t))
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", h.cmd.Process.Pid)) {
			t.Errorf("message %q does not name pid %d", err, h.cmd.Process.Pid)
		}
		// A clean release empties the record: no previous holder to clean up after.
		h.stdin.Close()
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
		l := mustAcquire(t, path)
		if l.Previous() != nil {
			t.Errorf("Previous() = %+v after a clean release", l.Previous())
		}
	})
	t.Run("StaleAfterCrash", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "serve.lock")
		h := startHelper(t, "hold:"+path)
		id := h.id(t)
		if err := h.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
			t.Fatal(err)
		}
		h.cmd.Wait()
		l := mustAcquire(t, path)
		prev := l.Previous()
		if prev == nil || prev.ID != id || len(prev.Endpoints) != 1 {
			t.Fatalf("Previous() = %+v, want the crashed holder %+v with its endpoint", prev, id)
		}
		if got := l.Holder(); got.PID != os.Getpid() {
			t.Errorf("Holder() = %+v, want this process", got)
		}
	})
	t.Run("ErrFlockIgnored", func(t *testing.T) {
		// A record naming a live process that holds no flock: the file
		// system lost the lock (or never had one). Refuse.
		path := filepath.Join(t.TempDir(), "serve.lock")
		h := startHelper(t, "wait")
		rec, _ := json.Marshal(Holder{ID: h.id(t), Since: time.Now()})
		if err := os.WriteFile(path, rec, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Acquire(path, time.Now())
		held := heldError(t, err)
		if !held.Unlocked || held.Holder.PID != h.cmd.Process.Pid {
			t.Errorf("HeldError %+v, want Unlocked naming pid %d", held, h.cmd.Process.Pid)
		}
	})
	t.Run("TornRecord", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "serve.lock")
		if err := os.WriteFile(path, []byte(`{"pid":12`), 0o600); err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, path)
		if l.Previous() != nil {
			t.Errorf("Previous() = %+v for a torn record", l.Previous())
		}
	})
}

func TestLock_Release(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.lock")
	l := mustAcquire(t, path)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := l.Publish("x"); err == nil {
		t.Error("Publish after Release succeeded")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("lock file gone after Release: %v (it must stay: unlinking races)", err)
	}
	mustAcquire(t, path)
}
