package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// built holds each command of the module the tests build, once.
var built sync.Map // name → func() (string, error)

// mustCommand builds cmd/<name> once per test binary and returns its path.
func mustCommand(t testing.TB, name string) string {
	t.Helper()
	build, _ := built.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", name+"-test-")
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", path, "../cmd/"+name).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ../cmd/%s: %w\n%s", name, err, out)
		}
		return path, nil
	}))
	path, err := build.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// mustBench builds cmd/needlebench once: the replay App Server of a run.
func mustBench(t *testing.T) []string { return []string{mustCommand(t, "needlebench")} }

// latencyFields are the report's fields that are not deterministic.
var latencyFields = []string{"latency_ms", "validation_ms", "exact_hit_ms", "replay_hit_ms", "replay_hit_p95_over_exact_hit_p50"}

// deterministic is a report without its latencies, as generic JSON.
func deterministic(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range latencyFields {
		delete(m, k)
	}
	return m
}

// TestRun_Tiny plays corpus/tiny through the product twice: the report
// holds the invariants (no stale answer, no false answer certified, Needle
// reaches the oracle), every distinct scripted answer was judged by the
// truth and by the validators, and every number but the latencies is the
// same both times.
func TestRun_Tiny(t *testing.T) {
	replay := mustBench(t)
	c, err := LoadCorpus("../corpus/tiny")
	if err != nil {
		t.Fatal(err)
	}
	answers, err := distinctAnswers(c)
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	for range 2 {
		dir := t.TempDir()
		r, files, err := Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Reports: dir, Replay: replay, Codex: mustCodex(t)})
		if err != nil {
			t.Fatal(err)
		}
		if r.StaleReturned != 0 || float64(r.HitsInOracle) < 0.99*float64(r.OracleHits) || r.Needs != c.Manifest.Needs || r.WorkerRuns == 0 || r.Hits == 0 {
			t.Errorf("report %+v", r)
		}
		all := r.Validation["all"]
		if all.Answers != len(answers) || all.FalseCertified != 0 || len(r.FalseCertified) != 0 {
			t.Errorf("validation of %d distinct answers: %+v; false certified: %v", len(answers), r.Validation, r.FalseCertified)
		}
		if all.TrueCertified+all.TrueRejected == 0 || all.FalseRejected+all.FalseCertified == 0 {
			t.Errorf("the tiny corpus judges no true or no false answer: %+v", all)
		}
		if r.WorkerTokens >= r.BaselineWorkerTokens || r.NaiveWorkerTokens > r.BaselineWorkerTokens {
			t.Errorf("tokens: needle %d, naive %d, no reuse %d", r.WorkerTokens, r.NaiveWorkerTokens, r.BaselineWorkerTokens)
		}
		if len(files) != 4 {
			t.Errorf("files %v", files)
		}
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		reports = append(reports, filepath.Join(dir, "tiny.json"))
	}
	if diff := cmp.Diff(deterministic(t, reports[0]), deterministic(t, reports[1])); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
}

// TestRun_ReplayMismatch: frozen transcripts that no longer match what
// the product sends fail the run loudly; nothing is reported.
func TestRun_ReplayMismatch(t *testing.T) {
	replay := mustBench(t)
	frozen := t.TempDir()
	files, err := filepath.Glob(filepath.Join("..", "frozen", "tiny", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no frozen transcripts: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Every recorded turn prompt changes: the product's no longer match.
		data = []byte(strings.ReplaceAll(string(data), "Propose implementation_location evidence", "Propose other evidence"))
		if err := os.WriteFile(filepath.Join(frozen, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reports := t.TempDir()
	_, _, err = Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Frozen: frozen, Reports: reports, Replay: replay, Codex: mustCodex(t)})
	if err == nil || !strings.Contains(err.Error(), "frozen transcripts do not match") {
		t.Fatalf("Run with mismatching transcripts = %v", err)
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 0 {
		t.Errorf("a failed run wrote a report: %v", entries)
	}
}

// TestRecord_NoCodex: without --codex, record looks codex up on PATH and
// says what to do when there is none; nothing is touched.
func TestRecord_NoCodex(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "frozen")
	var stderr strings.Builder
	if code := Main(context.Background(), []string{"record", "--out", out, "../corpus/tiny"}, nil, io.Discard, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "no codex binary on PATH; pass --codex BIN") {
		t.Errorf("stderr %q", stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("record created %s: %v", out, err)
	}
}

// TestRun_NoSandbox: where codex's sandbox does not run tests, the run
// fails before playing anything, saying why; nothing is reported.
func TestRun_NoSandbox(t *testing.T) {
	replay := mustBench(t)
	reports := t.TempDir()
	_, _, err := Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Reports: reports, Replay: replay, Codex: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "codex's sandbox, which does not work here") {
		t.Fatalf("Run with a codex that is no sandbox = %v", err)
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 0 {
		t.Errorf("a failed run wrote a report: %v", entries)
	}
}
