package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/needle-dev/needle/product/testenv"
)

// TestProofLatency_Tiny runs the experiment with two warm rounds and one
// cold round and checks the report's structure, that every timed proof was
// certified by running its test, and, in the stores the proofs wrote (read
// without the product), that each round's store holds exactly the one
// certified attempt of its round: no proof was served from an earlier one.
// Timings are not asserted.
func TestProofLatency_Tiny(t *testing.T) {
	needle := mustNeedle(t)
	work, reports := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	// The warm caches are the ones other tests fill: only the cold round
	// compiles the standard library (twice: the proof's and the bare run's).
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"experiment", "proof-latency", "--needle", needle, "--codex", testenv.Codex(t), "--rounds", "2", "--cold", "1",
		"--fixture", "../fixtures/repos/grepx.txtar", "--tests-cache", testenv.Cache(t, "testrun-lifecycle"), "--gocache", strings.TrimSpace(string(gocache)),
		"--work", work, "--out", reports}
	if code := Main(context.Background(), args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var r ProofLatencyReport
	data, err := os.ReadFile(filepath.Join(reports, "proof-latency.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"warm/proof": 2, "warm/bare": 2, "cold/proof": 1, "cold/bare": 1}
	for series, n := range want {
		q, ok := r.Series[series]
		if !ok || q.N != n || !(q.Min > 0 && q.Min <= q.P50 && q.P50 <= q.P95 && q.P95 <= q.Max) {
			t.Errorf("series %s: %+v (present %v), want n=%d and ordered quantiles", series, q, ok, n)
		}
	}
	if len(r.Series) != len(want) || len(r.Ratios) != 8 || len(r.Goals) != 2 || len(r.Meaning) != 4 {
		t.Errorf("series %v, %d ratios (want 8), %d goals (want 2), %d meanings (want 4)", mapKeysOf(r.Series), len(r.Ratios), len(r.Goals), len(r.Meaning))
	}
	if !strings.HasPrefix(r.Command, "needlebench experiment proof-latency --rounds 2 --cold 1 --fixture ../fixtures/repos/grepx.txtar --tests-cache ") ||
		strings.Contains(r.Command, "--codex") || strings.Contains(r.Command, "--needle") || strings.Contains(r.Command, "--work") {
		t.Errorf("command %q: want the command line without --needle, --codex and --work", r.Command)
	}
	if r.Machine.CPUs < 1 || r.Machine.Go == "" || len(r.Load) != 3 {
		t.Errorf("machine %+v, load %v", r.Machine, r.Load)
	}
	if len(r.Rounds) != 3 {
		t.Fatalf("rounds %+v, want 3", r.Rounds)
	}
	var certs []string
	for _, ro := range r.Rounds {
		if ro.Status != "certified" || ro.Reach != "executed" || ro.CertificateID == "" || ro.ProofMs <= 0 || ro.BareMs <= 0 {
			t.Errorf("round %+v: want a proof certified by running the test, and both sides timed", ro)
		}
		certs = append(certs, ro.CertificateID)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(certs)))) != 3 {
		t.Errorf("certificates %v: want one new certificate per round", certs)
	}
	checkProofStores(t, work)
	md, err := os.ReadFile(filepath.Join(reports, "proof-latency.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| warm/proof | 2 |", "| cold/bare | 1 |", "## Proof ÷ bare go test", "## Goals (issue 26)", "`cold/proof`: the first proof in a new data directory", "## Rounds", "## Machine"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report Markdown lacks %q", s)
		}
	}
}

// checkProofStores reads the stores of the timed rounds (the warm-up's
// besides) with SQL alone: each holds exactly one attempt, certified, and
// one certificate, whose test record says TestCRLF ran and passed.
func checkProofStores(t *testing.T, work string) {
	t.Helper()
	stores, _ := filepath.Glob(filepath.Join(work, "data-*", "needle.db"))
	if len(stores) != 4 {
		t.Fatalf("stores %v, want the warm-up's, two warm rounds' and one cold round's", stores)
	}
	for _, s := range stores {
		db, err := sql.Open("sqlite", s)
		if err != nil {
			t.Fatal(err)
		}
		var attempts, certified, certs int
		var test string
		err = db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE status = 'certified') FROM attempts`).Scan(&attempts, &certified)
		if err == nil {
			err = db.QueryRow(`SELECT count(*), coalesce(max(json_extract(body, '$.tests[0].name') || ' ' || json_extract(body, '$.tests[0].status') || ' ' ||
				json_extract(body, '$.tests[0].reach')), '') FROM certificates`).Scan(&certs, &test)
		}
		db.Close()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if attempts != 1 || certified != 1 || certs != 1 || test != "TestCRLF passed executed" {
			t.Errorf("%s: %d attempts, %d certified, %d certificates, test %q; want the one certified proof of its round, TestCRLF run and passed", s, attempts, certified, certs, test)
		}
	}
}

// TestProofLatency_BadInput: usage errors exit 2 and a fixture that is not
// there fails the run before any proof, and no report is written.
func TestProofLatency_BadInput(t *testing.T) {
	needle, codex := mustNeedle(t), testenv.Codex(t)
	reports := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--rounds", "0"}, 2, "--rounds must be at least 1"},
		{[]string{"--cold", "-1"}, 2, "--cold at least 0"},
		{[]string{"extra"}, 2, "no arguments"},
		{[]string{"--codex", filepath.Join(t.TempDir(), "codex")}, 2, "pass --codex BIN"},
		{[]string{"--fixture", filepath.Join(t.TempDir(), "none.txtar")}, 1, "fixture: open"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"experiment", "proof-latency", "--needle", needle, "--codex", codex, "--out", reports}, c.args...)
		if code := Main(context.Background(), args, nil, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 0 {
		t.Errorf("reports %v written by failed runs", entries)
	}
}
