package product

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainResult is how a Main run ended.
type mainResult struct {
	code           int
	stdout, stderr string
}

// runMainAsync runs Main in the background; the failsafe bounds a run that
// would otherwise block for ever (what these tests guard against).
func runMainAsync(t *testing.T, stdin io.Reader, args ...string) mainResult {
	t.Helper()
	done := make(chan mainResult, 1)
	go func() {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, stdin, &out, &errb)
		done <- mainResult{code, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(2 * time.Minute): // failsafe only
		t.Fatalf("needle %s did not return", strings.Join(args, " "))
		return mainResult{}
	}
}

// TestHookCodex_DeadlineCoversStdin: a hook whose stdin never delivers an
// event (codex wedged, an open pipe) ends at its --deadline with status 1
// and says why, instead of waiting on stdin past codex's timeout.
func TestHookCodex_DeadlineCoversStdin(t *testing.T) {
	pr, pw := io.Pipe() // written never, closed only after the test
	defer pw.Close()
	r := runMainAsync(t, pr, "hook", "codex", "--data-dir", t.TempDir(), "--deadline", "200ms")
	if r.code != 1 || !strings.Contains(r.stderr, "no complete hook event on stdin within the deadline (200ms)") || r.stdout != "" {
		t.Errorf("hook with a silent stdin: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestHookInstall_RefusesFIFO: needle hook install with a named pipe as
// codex's hooks file refuses it at once with a clear error and changes
// nothing (it used to block for ever opening the pipe, deaf to SIGTERM).
func TestHookInstall_RefusesFIFO(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	hooks := filepath.Join(home, "hooks.json")
	if err := syscall.Mkfifo(hooks, 0o644); err != nil {
		t.Fatalf("make a named pipe (Needle runs on Linux, which has them): %v", err)
	}
	r := runMainAsync(t, strings.NewReader(""), "hook", "install", "--codex", "--data-dir", t.TempDir())
	if r.code == 0 || !strings.Contains(r.stderr, hooks+": is not a regular file (a named pipe)") || !strings.Contains(r.stderr, "nothing was changed") {
		t.Errorf("install over a FIFO: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "config.toml")); err == nil {
		t.Error("the trust was recorded for a hook that was not installed")
	}
}
