package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/needle-dev/needle/product/testenv"
)

// mustNeedle builds cmd/needle once: the server the experiment spawns.
func mustNeedle(t testing.TB) string { return mustCommand(t, "needle") }

// TestHitLatency_Tiny runs the experiment at tiny sizes with every mode on
// and checks the report's structure and that every timed call was checked,
// then counts, in the stores the servers wrote, that every answer the
// servers gave was a hit and no worker ran. Timings are not asserted.
func TestHitLatency_Tiny(t *testing.T) {
	needle := mustNeedle(t)
	work, reports := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"experiment", "mcp-hit-latency", "--needle", needle, "--codex", testenv.Codex(t), "--calls", "4", "--warmup", "1", "--cold", "2",
		"--first", "2", "--first-rounds", "2", "--first-idle", "0s",
		"--grow", "--grow-hits", "0,70", "--grow-artifacts", "5,9", "--grow-files", "3,20", "--window", "3",
		"--settle", "0s", "--work", work, "--tests-cache", testenv.Cache(t, "testrun-validators"), "--reports", reports}
	if code := Main(context.Background(), args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var r HitLatencyReport
	data, err := os.ReadFile(filepath.Join(reports, "mcp-hit-latency.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"main/trace": 4, "main/locate": 4, "main/tests": 4, "main/noop": 4, "main/ping": 4,
		"cold/needle": 2, "cold/go-sdk-minimal": 2, "first/hit": 2, "first/steady": 4, "first/noop": 4, "first/idle-hit": 2, "first/idle-noop": 2,
		"grow-hits/000001/trace": 3, "grow-hits/000001/noop": 3, "grow-hits/000070/trace": 3, "grow-hits/000070/noop": 3,
		"grow-artifacts/000005/trace": 3, "grow-artifacts/000005/locate": 3, "grow-artifacts/000005/noop": 3,
		"grow-artifacts/000009/trace": 3, "grow-artifacts/000009/locate": 3, "grow-artifacts/000009/noop": 3,
		"grow-files/000003/tests": 3, "grow-files/000003/locate": 3, "grow-files/000003/noop": 3,
		"grow-files/000020/tests": 3, "grow-files/000020/locate": 3, "grow-files/000020/noop": 3}
	total, hits := 0, 0
	for series, n := range want {
		q, ok := r.Methods[series]
		if !ok || q.N != n || !(q.P50 > 0 && q.P50 <= q.P95 && q.P95 <= q.P99 && q.P99 <= q.Max) {
			t.Errorf("series %s: %+v (present %v), want n=%d and ordered quantiles", series, q, ok, n)
		}
		total += n
		if !strings.HasSuffix(series, "noop") && !strings.HasSuffix(series, "ping") && !strings.HasPrefix(series, "cold/") {
			hits += n
		}
	}
	if len(r.Methods) != len(want) {
		t.Errorf("%d series, want %d: %v", len(r.Methods), len(want), mapKeysOf(r.Methods))
	}
	if r.Verified.Measured != total || r.Verified.Verified != total || r.Verified.ExactHits != hits {
		t.Errorf("verified %+v, want %d measured and verified, %d exact hits", r.Verified, total, hits)
	}
	if len(r.Goals) != 22 || len(r.Grow) != 6 || len(r.Load) != 7 || r.Machine.CPUs < 1 {
		t.Errorf("goals %d (want 22: 12, 5 of the first hit, and 5 growth ratios taken against their windows' no-ops), grow points %d (want 6), load samples %d (want 7), machine %+v", len(r.Goals), len(r.Grow), len(r.Load), r.Machine)
	}
	// 70 earlier hits pass one connection's step cap: the series went on
	// over a second server process (TestHitLatency_Tiny's stores then
	// show every answer was still a hit).
	if r.Connections["main"] != 1 || r.Connections["grow-hits"] != 2 || r.Connections["first"] != 3 {
		t.Errorf("connections %v, want main 1, grow-hits 2 and first 3 (one not timed)", r.Connections)
	}
	md, err := os.ReadFile(filepath.Join(reports, "mcp-hit-latency.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| main/trace |", "| first/hit |", "## Goals (issues 13 and 26)", "first hit on a new connection p50", "### Grow: hits", "### Grow: artifacts", "### Grow: files", "## Verification"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report Markdown lacks %q", s)
		}
	}
	checkStoresServedHits(t, work, hits)
}

// checkStoresServedHits reads every store the servers wrote, without the
// product: each resolution is a hit, none spawned a worker, and the exact
// hits number at least the timed ones.
func checkStoresServedHits(t *testing.T, work string, timedHits int) {
	t.Helper()
	stores, _ := filepath.Glob(filepath.Join(work, "data-*", "needle.db"))
	if len(stores) != 4 {
		t.Fatalf("stores %v, want main, hits, artifacts and files", stores)
	}
	exact := 0
	for _, s := range stores {
		db, err := sql.Open("sqlite", s)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(`SELECT kind, worker_spawned, count(*) FROM resolutions GROUP BY kind, worker_spawned`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var kind string
			var spawned, n int
			if err := rows.Scan(&kind, &spawned, &n); err != nil {
				t.Fatal(err)
			}
			if spawned != 0 || !strings.HasSuffix(kind, "_hit") || kind == "partial_hit" {
				t.Errorf("%s: %d resolutions %s (worker spawned %d): every answer must be a hit", s, n, kind, spawned)
			}
			if kind == "exact_hit" {
				exact += n
			}
		}
		rows.Close()
		db.Close()
	}
	if exact < timedHits {
		t.Errorf("the stores record %d exact hits, fewer than the %d timed", exact, timedHits)
	}
}

func mapKeysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHitLatency_Checks: the checks the experiment applies to each answer
// accept what a real needle server answers and refuse the rest — a bypass
// before the evidence is certified, a first answer that is a hit but not an
// exact one, a need_context answer where a no-op or a ping was expected.
func TestHitLatency_Checks(t *testing.T) {
	needle := mustNeedle(t)
	repo, data := filepath.Join(t.TempDir(), "repo"), t.TempDir()
	ctx := context.Background()
	if err := writeLatencyRepo(ctx, repo, 0); err != nil {
		t.Fatal(err)
	}
	x := &hitLatency{opt: HitLatencyOptions{Needle: []string{needle}, Codex: testenv.Codex(t), TestsCache: testenv.Cache(t, "testrun-validators"), Status: func(string) {}}}
	p, err := x.serve(ctx, repo, data)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	ask := func() rpcReply {
		t.Helper()
		_, r, err := p.call("tools/call", probeLocate.params())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := checkHit(ask(), false); err == nil || !strings.Contains(err.Error(), "bypass") {
		t.Errorf("checkHit accepted the answer to a need with no evidence: %v", err)
	}
	if err := x.certifyCore(ctx, repo, data); err != nil {
		t.Fatal(err)
	}
	first := ask()
	if _, err := checkHit(first, true); err == nil || !strings.Contains(err.Error(), "want exact_hit") {
		t.Errorf("checkHit(exact) accepted the first answer from evidence: %v", err)
	}
	id, err := checkHit(first, false)
	if err != nil || !strings.HasPrefix(id, "b3:") {
		t.Errorf("checkHit refused the first hit: %q, %v", id, err)
	}
	again := ask()
	if got, err := checkHit(again, true); err != nil || got != id {
		t.Errorf("checkHit(exact) on the repeat: %q, %v; want %q", got, err, id)
	}
	if checkNoop(again) == nil || checkPing(again) == nil {
		t.Error("a need_context answer passed for a no-op or a ping")
	}
	_, noop, err := p.call("tools/call", noopParams)
	if err != nil || checkNoop(noop) != nil {
		t.Errorf("no-op tools/call: %v, %v", err, checkNoop(noop))
	}
	if _, err := checkHit(noop, false); err == nil {
		t.Error("checkHit accepted the no-op's error")
	}
	_, ping, err := p.call("ping", []byte(`{}`))
	if err != nil || checkPing(ping) != nil {
		t.Errorf("ping: %v, %v", err, checkPing(ping))
	}
}

// BenchmarkColdInitialize is the --cold series as a benchmark: a spawn of
// needle mcp serve (built from this tree) on a certified store, timed to
// its initialize answer and then closed, against the official go-sdk's
// smallest stdio server (issue 13's cold-start ratio). Its causes were the
// store opened three times before initialize and package init compiling
// regular expressions and encoding schemas in every process.
func BenchmarkColdInitialize(b *testing.B) {
	ctx := context.Background()
	needle := mustNeedle(b)
	work := b.TempDir()
	x := &hitLatency{opt: HitLatencyOptions{Needle: []string{needle}, Codex: testenv.Codex(b), Status: func(string) {}}, work: work, samples: map[string][]float64{}}
	repo, data := filepath.Join(work, "repo"), filepath.Join(work, "data")
	if err := writeLatencyRepo(ctx, repo, 0); err != nil {
		b.Fatal(err)
	}
	if err := x.certifyCore(ctx, repo, data); err != nil {
		b.Fatal(err)
	}
	minimal, err := buildTool(ctx, "mcpminimal", work)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name string
		argv []string
	}{
		{"needle", []string{needle, "mcp", "serve", "--data-dir", data, "--repository", repo, "--main-model", "bench",
			"--role-profile", "default", "--cache-only"}},
		{"go-sdk-minimal", []string{minimal}},
	} {
		b.Run(s.name, func(b *testing.B) {
			var toInit time.Duration
			for b.Loop() {
				took, err := coldInitialize(ctx, s.argv)
				if err != nil {
					b.Fatal(err)
				}
				toInit += took
			}
			// ns/op runs to the server's exit; this is the figure of --cold.
			b.ReportMetric(float64(toInit.Nanoseconds())/1e6/float64(b.N), "ms-to-initialize/op")
		})
	}
}
