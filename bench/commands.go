package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// run is needlebench run [--frozen DIR] [--reports DIR] [--trace FILE] [--codex BIN] [--tests-cache DIR] CORPUS.
func (h *harness) run(args []string) int {
	fs := h.flags("run")
	frozen := fs.String("frozen", "", "")
	reports := fs.String("reports", "", "")
	trace := fs.String("trace", "", "")
	codex := fs.String("codex", "", "")
	noRefresh := fs.Bool("no-refresh", false, "")
	testsCache := fs.String("tests-cache", "", "")
	if !h.parse(fs, args) {
		return 2
	}
	if *codex == "" {
		if p, err := exec.LookPath("codex"); err == nil {
			*codex = p
		}
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(h.stderr, "needlebench run: want one CORPUS directory\n\n%s", usage)
		return 2
	}
	r, files, err := Run(h.ctx, RunOptions{Corpus: fs.Arg(0), Frozen: *frozen, Reports: *reports, Trace: *trace, Codex: *codex, NoRefresh: *noRefresh, TestsCache: *testsCache, Stderr: h.stderr})
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench run: %v\n", err)
		return 1
	}
	fmt.Fprint(h.stdout, summary(r))
	fmt.Fprintf(h.stdout, "wrote %s\n", strings.Join(files, ", "))
	if fails := failures(r); len(fails) > 0 {
		for _, f := range fails {
			fmt.Fprintf(h.stderr, "needlebench run: %s\n", f)
		}
		return 1
	}
	return 0
}

// failures says why a run fails, if it does: a stale answer returned, a
// false answer certified by the validators, or hits below 99% of the
// oracle's.
func failures(r Report) []string {
	var out []string
	if r.StaleReturned > 0 {
		out = append(out, fmt.Sprintf("%d stale answers returned:\n  %s", r.StaleReturned, strings.Join(r.StaleNeeds, "\n  ")))
	}
	if n := len(r.FalseCertified); n > 0 {
		out = append(out, fmt.Sprintf("the validators certified %d false answers:\n  %s", n, strings.Join(r.FalseCertified, "\n  ")))
	}
	if float64(r.HitsInOracle) < 0.99*float64(r.OracleHits) {
		out = append(out, fmt.Sprintf("Needle hit %d of the oracle's %d hits, fewer than 99%%", r.HitsInOracle, r.OracleHits))
	}
	return out
}

// summary is the short table run prints.
func summary(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "corpus %s: %d needs in %d sessions\n", r.Corpus, r.Needs, r.Sessions)
	fmt.Fprintf(&b, "  %-34s %d (%.1f%%)\n", "hits", r.Hits, 100*r.HitRate)
	fmt.Fprintf(&b, "  %-34s %d (Needle hits %d of them)\n", "oracle hits", r.OracleHits, r.HitsInOracle)
	fmt.Fprintf(&b, "  %-34s %d\n", "stale answers returned", r.StaleReturned)
	fmt.Fprintf(&b, "  %-34s %d of %d hits\n", "naive cache stale answers", r.NaiveStaleReturned, r.NaiveHits)
	for _, k := range []string{"implementation_location", "runtime_flow", "focused_tests", "all"} {
		v, ok := r.Validation[k]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "  %-34s %d/%d true certified, %d false certified (precision %.4f, recall %.4f)\n", "answers "+k,
			v.TrueCertified, v.TrueCertified+v.TrueRejected, v.FalseCertified, v.Precision, v.Recall)
	}
	fmt.Fprintf(&b, "  %-34s %d / %d / %d\n", "worker tokens needle/naive/none", r.WorkerTokens, r.NaiveWorkerTokens, r.BaselineWorkerTokens)
	fmt.Fprintf(&b, "  %-34s %.1f%%\n", "worker tokens saved", r.TokensSavedPct)
	fmt.Fprintf(&b, "  %-34s %.2f / %.2f / %.2f\n", "latency ms p50/p95/p99", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99)
	var ph []string
	for _, p := range r.Phases {
		ph = append(ph, fmt.Sprintf("%s %.1fs", p.Name, p.Seconds))
	}
	if len(ph) > 0 {
		fmt.Fprintf(&b, "  %-34s %s\n", "wall time", strings.Join(ph, ", "))
	}
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
	codex := fs.String("codex", "", "")
	unsandboxed := fs.Bool("unsandboxed", false, "")
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
	var kept []string // the command line without the machine's codex path
	for i := 1; i < len(args); i++ {
		switch {
		case args[i] == "--codex" || args[i] == "-codex":
			i++
		case strings.HasPrefix(args[i], "--codex=") || strings.HasPrefix(args[i], "-codex="):
		default:
			kept = append(kept, args[i])
		}
	}
	cmdline := "needlebench corpus generate " + strings.Join(kept, " ")
	prog := newProgress(h.stderr)
	c, err := Generate(h.ctx, GenerateOptions{Name: *name, Seed: *seed, Modules: fs.Args(), Subjects: *subjects, Command: cmdline,
		Codex: *codex, Unsandboxed: *unsandboxed}, stepStatus(prog))
	prog.Close()
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
