package bench

import (
	"fmt"
	"path/filepath"
	"strings"
)

// run is needlebench run [--frozen DIR] [--reports DIR] CORPUS.
func (h *harness) run(args []string) int {
	fs := h.flags("run")
	frozen := fs.String("frozen", "", "")
	reports := fs.String("reports", "", "")
	trace := fs.String("trace", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(h.stderr, "needlebench run: want one CORPUS directory\n\n%s", usage)
		return 2
	}
	r, files, err := Run(h.ctx, RunOptions{Corpus: fs.Arg(0), Frozen: *frozen, Reports: *reports, Trace: *trace, Stderr: h.stderr})
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench run: %v\n", err)
		return 1
	}
	fmt.Fprint(h.stdout, summary(r))
	fmt.Fprintf(h.stdout, "wrote %s\n", strings.Join(files, ", "))
	if r.StaleReturned > 0 {
		fmt.Fprintf(h.stderr, "needlebench run: %d stale answers returned: %s\n", r.StaleReturned, strings.Join(r.StaleNeeds, ", "))
		return 1
	}
	if float64(r.HitsInOracle) < 0.99*float64(r.OracleHits) {
		fmt.Fprintf(h.stderr, "needlebench run: Needle hit %d of the oracle's %d hits, fewer than 99%%\n", r.HitsInOracle, r.OracleHits)
		return 1
	}
	return 0
}

// summary is the short table run prints.
func summary(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "corpus %s: %d needs in %d sessions\n", r.Corpus, r.Needs, r.Sessions)
	fmt.Fprintf(&b, "  %-34s %d (%.1f%%)\n", "hits", r.Hits, 100*r.HitRate)
	fmt.Fprintf(&b, "  %-34s %d (Needle hits %d of them)\n", "oracle hits", r.OracleHits, r.HitsInOracle)
	fmt.Fprintf(&b, "  %-34s %d\n", "stale answers returned", r.StaleReturned)
	fmt.Fprintf(&b, "  %-34s %d of %d hits\n", "naive cache stale answers", r.NaiveStaleReturned, r.NaiveHits)
	fmt.Fprintf(&b, "  %-34s %d / %d / %d\n", "worker tokens needle/naive/none", r.WorkerTokens, r.NaiveWorkerTokens, r.BaselineWorkerTokens)
	fmt.Fprintf(&b, "  %-34s %.1f%%\n", "worker tokens saved", r.TokensSavedPct)
	fmt.Fprintf(&b, "  %-34s %.2f / %.2f / %.2f\n", "latency ms p50/p95/p99", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99)
	return b.String()
}

// corpus is needlebench corpus generate --seed N --name NAME [--out DIR] MODULE@OLD,NEW...
func (h *harness) corpus(args []string) int {
	if len(args) == 0 || args[0] != "generate" {
		fmt.Fprintf(h.stderr, "needlebench corpus: want generate\n\n%s", usage)
		return 2
	}
	fs := h.flags("corpus generate")
	seed := fs.Uint64("seed", 1, "")
	name := fs.String("name", "", "")
	out := fs.String("out", "", "")
	subjects := fs.Int("subjects", 14, "")
	if !h.parse(fs, args[1:]) {
		return 2
	}
	if *name == "" || fs.NArg() == 0 {
		fmt.Fprintf(h.stderr, "needlebench corpus generate: want --name NAME and at least one MODULE@OLD,NEW\n\n%s", usage)
		return 2
	}
	if *out == "" {
		*out = filepath.Join("corpus", *name)
	}
	cmdline := "needlebench corpus generate " + strings.Join(args[1:], " ")
	prog := newProgress(h.stderr)
	c, err := Generate(h.ctx, GenerateOptions{Name: *name, Seed: *seed, Modules: fs.Args(), Subjects: *subjects, Command: cmdline}, prog.status)
	prog.done()
	if err == nil {
		err = c.Write(*out)
	}
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench corpus generate: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "wrote %s: %d needs in %d sessions, %.1f%% of %d scripted answers wrong\n",
		*out, c.Manifest.Needs, c.Manifest.Sessions, 100*c.Manifest.Wrong.Rate, c.Manifest.Wrong.Answer)
	return 0
}
