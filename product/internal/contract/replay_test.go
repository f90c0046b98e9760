package contract

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/replay"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// The replay tier: the same scenario drives, the same adapter, against the
// project's own frozen transcripts (recorded by the contract tier) served by
// the replay server. Hermetic: no codex, no model.

// frozenDir holds the contract scenarios' frozen transcripts.
var frozenDir = filepath.Join("..", "..", "..", "frozen", "contract")

// replayEnv names the transcript the re-executed test binary serves.
const replayEnv = "NEEDLE_CONTRACT_REPLAY"

func TestMain(m *testing.M) {
	if f := os.Getenv(replayEnv); f != "" {
		os.Exit(serveReplay(f))
	}
	os.Exit(m.Run())
}

// serveReplay is the test binary standing in for codex app-server.
func serveReplay(file string) int {
	t, err := transcript.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 3
	}
	cfg := replay.Config{Transcripts: []*transcript.Transcript{t}, Env: map[string]string{"CODEX_HOME": os.Getenv("CODEX_HOME")}}
	if err := replay.Serve(context.Background(), cfg, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 3
	}
	return 0
}

// replayRun plays scenario sc against the transcript file.
func replayRun(t *testing.T, sc Scenario, file string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home := t.TempDir()
	dir, err := Workspace(t.TempDir(), sc.Git)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, replayEnv + "=" + abs}
	_, err = RunWithStderr(ctx, sc, []string{os.Args[0]}, dir, home, env, &syncWriter{b: &stderr})
	return stderr.String(), err
}

func TestReplay(t *testing.T) {
	for _, sc := range All() {
		t.Run(sc.Name, func(t *testing.T) {
			file := filepath.Join(frozenDir, sc.Name+".jsonl")
			if _, err := os.Stat(file); err != nil {
				t.Fatalf("scenario %s has no frozen transcript: %v (record with NEEDLE_UPDATE=1 make test-contract)", sc.Name, err)
			}
			if stderr, err := replayRun(t, sc, file); err != nil {
				t.Fatalf("replay of %s: %v\n%s", sc.Name, err, stderr)
			}
		})
	}
}

// TestReplay_Tampered shows that a transcript that no longer matches what
// the adapter sends makes the replay fail loudly, and that a tampered
// server line is caught by the scenario's checks.
func TestReplay_Tampered(t *testing.T) {
	sc, _ := ByName("evidence")
	src, err := os.ReadFile(filepath.Join(frozenDir, "evidence.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ClientLine", func(t *testing.T) {
		bad := strings.Replace(string(src), "Where is Greet implemented?", "Where is Greet defined?", 1)
		if bad == string(src) {
			t.Fatal("the prompt is not in the transcript")
		}
		stderr, err := replayRun(t, sc, writeTemp(t, bad))
		if err == nil || !strings.Contains(stderr, "Where is Greet defined?") {
			t.Fatalf("tampered client line: err %v\nstderr %s", err, stderr)
		}
	})
	t.Run("ServerLine", func(t *testing.T) {
		bad := strings.ReplaceAll(string(src), `\"start_line\":3`, `\"start_line\":4`)
		if bad == string(src) {
			t.Fatal("the answer is not in the transcript")
		}
		if _, err := replayRun(t, sc, writeTemp(t, bad)); err == nil || !strings.Contains(err.Error(), "final message") {
			t.Fatalf("tampered server line not caught: %v", err)
		}
	})
	t.Run("Truncated", func(t *testing.T) {
		// Cut just before the client's turn/start: the replay server must
		// refuse the request it no longer has, not leave the client waiting.
		i := strings.Index(string(src), `{"dir":"c2s","msg":{"method":"turn/start"`)
		if i < 0 {
			t.Fatal("no turn/start in the transcript")
		}
		stderr, err := replayRun(t, sc, writeTemp(t, string(src[:i])))
		if err == nil || !strings.Contains(stderr, "turn/start") {
			t.Fatalf("a truncated transcript replayed without error: %v\n%s", err, stderr)
		}
	})
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}
