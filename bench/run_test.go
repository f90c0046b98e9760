package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/testenv"
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

// latencyFields are the report's fields that are not deterministic: the
// latencies and the phases' wall times.
var latencyFields = []string{"latency_ms", "validation_ms", "exact_hit_ms", "replay_hit_ms", "replay_hit_p95_over_exact_hit_p50",
	"carried_hit_ms", "carried_hit_p95_over_exact_hit_p50", "refresh_ms", "warm_ms", "phases"}

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
	// The second run leaves re-proving to the needs (no refresh at the
	// version bump): every answer must be the same; only where the proofs
	// replayed differs.
	var reports []string
	for _, noRefresh := range []bool{false, true} {
		dir := t.TempDir()
		r, files, err := Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Reports: dir, Replay: replay, Codex: testenv.Codex(t), NoRefresh: noRefresh, TestsCache: testsCache(t)})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case noRefresh && (r.Refreshed || len(r.Bumps) != 0 || r.ReplayHits == 0):
			t.Errorf("without refresh: refreshed %v, bumps %v, %d hits replayed a proof", r.Refreshed, r.Bumps, r.ReplayHits)
		case !noRefresh && (!r.Refreshed || len(r.Bumps) != 1 || r.Bumps[0].Reproven == 0 || r.Bumps[0].Renewed == 0 || r.ReplayHits != 0 || r.CarriedHits == 0):
			t.Errorf("with refresh: bumps %+v, %d hits replayed a proof at need time, %d first asks after the bump", r.Bumps, r.ReplayHits, r.CarriedHits)
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
		var phases []string
		for _, p := range r.Phases {
			phases = append(phases, p.Name)
		}
		if want := []string{"materialize", "truth", "sandbox check", "play", "validation", "evaluate"}; !slices.Equal(phases, want) {
			t.Errorf("phases timed %q, want %q", phases, want)
		}
		if len(files) != 6 { // json, md, html and three charts
			t.Errorf("files %v", files)
		}
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		reports = append(reports, filepath.Join(dir, "tiny.json"))
	}
	refreshed, replayed := deterministic(t, reports[0]), deterministic(t, reports[1])
	for _, m := range []map[string]any{refreshed, replayed} {
		for _, k := range []string{"refreshed", "bumps", "replay_hits"} {
			delete(m, k)
		}
	}
	if diff := cmp.Diff(replayed, refreshed); diff != "" {
		t.Errorf("a refresh at the bump changed what the needs got (-replay at need time +refresh):\n%s", diff)
	}
}

func TestCarriedHits(t *testing.T) {
	hit := func(module, version, need string, ids ...string) outcome {
		return outcome{Module: module, Version: version, NeedID: need,
			Result: product.NeedResult{Status: "hit", Resolution: product.Resolution{ArtifactIDs: ids}}}
	}
	miss := func(module, version, need string) outcome {
		return outcome{Module: module, Version: version, NeedID: need, Result: product.NeedResult{Status: "worker"}}
	}
	outs := []outcome{
		miss("m", "v1", "n1"),      // asked at v1
		hit("m", "v1", "n2", "a1"), // a1 served at v1
		hit("m", "v2", "n1", "a9"), // n1 asked again after the bump: carried
		hit("m", "v2", "n3", "a1"), // a1 first served at v2: carried
		hit("m", "v2", "n4", "a1"), // a1 served at v2 already: not carried
		hit("m", "v2", "n1", "a9"), // asked at v2 already: not carried
		hit("o", "v2", "n5", "a1"), // another module: not carried
		hit("o", "v3", "n6", "a1"), // a1 of module o, served at its v2: carried
		miss("m", "v1", "n3"),      // back at v1: a miss is never a carried hit
	}
	want := []bool{false, false, true, true, false, false, false, true, false}
	if diff := cmp.Diff(want, carriedHits(outs)); diff != "" {
		t.Errorf("carried hits (-want +got):\n%s", diff)
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
	_, _, err = Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Frozen: frozen, Reports: reports, Replay: replay, Codex: testenv.Codex(t), TestsCache: testsCache(t)})
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
	_, _, err := Run(context.Background(), RunOptions{Corpus: "../corpus/tiny", Reports: reports, Replay: replay, Codex: "/bin/true", TestsCache: testsCache(t)})
	if err == nil || !strings.Contains(err.Error(), "codex's sandbox, which does not work here") {
		t.Fatalf("Run with a codex that is no sandbox = %v", err)
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 0 {
		t.Errorf("a failed run wrote a report: %v", entries)
	}
}

// testsCache is the build cache the tests' runs share (the repository's
// ignored .cache/testrun-validators, the validators' tests' too): only the
// first run on a machine compiles the standard library. testscripts'
// bench_run checks a run's default, a new cache of its own.
func testsCache(t *testing.T) string {
	t.Helper()
	return testenv.Cache(t, "testrun-validators")
}

// BenchmarkPrepare times what comes before play on the tiny corpus, with
// a new test cache each time (so the sandbox check builds its launcher and
// probe, as a run's first check does): /Beside runs the check beside
// materialize and truth, /CheckFirst runs it alone first, as before.
func BenchmarkPrepare(b *testing.B) {
	c, err := LoadCorpus("../corpus/tiny")
	if err != nil {
		b.Fatal(err)
	}
	for _, beside := range []bool{true, false} {
		name := "Beside"
		if !beside {
			name = "CheckFirst"
		}
		b.Run(name, func(b *testing.B) {
			defer func(was bool) { checkBeside = was }(checkBeside)
			checkBeside = beside
			for b.Loop() {
				work := b.TempDir()
				tc := testsConfig{codex: testenv.Codex(b), cache: filepath.Join(work, "testrun")}
				clock := &phaseClock{prog: newProgress(io.Discard)}
				repos, ts, err := prepare(context.Background(), c, work, tc, clock)
				clock.prog.Close()
				if err != nil || len(repos) == 0 || len(ts) == 0 {
					b.Fatalf("prepare: %d repos, %d truths, %v", len(repos), len(ts), err)
				}
			}
		})
	}
}
