package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// ProofLatencyReport is reports/proof-latency.json: the time of a user's
// focused-test proof beside a bare go test of the same test, in the same
// run, warm and cold.
type ProofLatencyReport struct {
	Experiment string `json:"experiment"`
	// Command is the command line (without the machine's paths), Needle
	// the version of the needle that proved.
	Command string       `json:"command"`
	Needle  string       `json:"needle"`
	Machine Machine      `json:"machine"`
	Load    []LoadSample `json:"load"`
	Fixture string       `json:"fixture"`
	// Proof and Bare are the two commands timed; Proposal the proposal
	// every proof validates.
	Proof    string          `json:"proof_command"`
	Bare     string          `json:"bare_command"`
	Proposal json.RawMessage `json:"proposal"`
	// Meaning says, per series and side, what state the run starts from.
	Meaning map[string]string `json:"meaning"`
	// Series holds the quantiles of every timed series (warm/proof,
	// warm/bare, cold/proof, cold/bare), Ratios proof ÷ bare per series.
	Series map[string]ProofQuantiles `json:"series_ms"`
	Ratios []ProofRatio              `json:"ratios"`
	Goals  []Goal                    `json:"goals"`
	Rounds []ProofRound              `json:"rounds"`
}

// ProofQuantiles are the empirical quantiles of one series, in ms.
type ProofQuantiles struct {
	N   int     `json:"n"`
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// ProofRatio is proof ÷ bare of one series at one statistic.
type ProofRatio struct {
	Series string  `json:"series"`
	Stat   string  `json:"stat"` // min, p50, p95 or max
	Value  float64 `json:"value"`
}

// ProofRound is one timed round: a proof and a bare run, and what the
// proof's verdict said (always certified and executed, or the run failed).
type ProofRound struct {
	Series        string  `json:"series"`
	Round         int     `json:"round"`
	ProofFirst    bool    `json:"proof_first"`
	ProofMs       float64 `json:"proof_ms"`
	BareMs        float64 `json:"bare_ms"`
	Status        string  `json:"status"`
	Reach         string  `json:"reach"`
	CertificateID string  `json:"certificate_id"`
}

func newProofLatencyReport(opt ProofLatencyOptions, needle string) ProofLatencyReport {
	return ProofLatencyReport{
		Experiment: "proof-latency", Command: opt.Command, Needle: needle,
		Machine:  Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), CPU: cpuModel(), Go: goVersion()},
		Fixture:  filepath.Base(opt.Fixture),
		Proof:    "needle evidence propose --repository REPO --data-dir DATA proposal.json (tests.codex set to the pinned codex)",
		Bare:     "go " + strings.Join(bareArgs(), " ") + " (in a plain copy of the fixture)",
		Proposal: proofProposal(),
		Meaning: map[string]string{
			"warm/proof": "a new data directory (its store created before the timing, so no earlier proof is in it) whose tests.cache is a build cache " +
				"an untimed proof of the same test filled: the standard library and the package are compiled, and the test binary and its baseline " +
				"(the binary run with no test) are kept there for later processes, so the proof links neither nor runs the baseline; it still " +
				"lists the package, checks out the snapshot and runs the test itself in the sandbox, while go test links its binary every time",
			"warm/bare": "GOCACHE an untimed run of the same command filled",
			"cold/proof": "the first proof in a new data directory: the default tests.cache (DATA/testrun) is new and empty, so the go command " +
				"compiles the standard library, the package and the test binary; the module cache, codex and the page cache are warm",
			"cold/bare": "GOCACHE a new, empty directory, so go test compiles the standard library, the package and the test binary; " +
				"the module cache and the page cache are warm",
		},
		Series: map[string]ProofQuantiles{}, Ratios: []ProofRatio{}, Goals: []Goal{}, Rounds: []ProofRound{},
	}
}

// goVersion is `go version` of the go on PATH (both sides run it), or
// this binary's when it cannot be run.
func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return runtime.Version() + " (needlebench's; go version: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func (r *ProofLatencyReport) sampleLoad(phase string) {
	data, err := os.ReadFile("/proc/loadavg")
	load := strings.Join(strings.Fields(string(data)), " ")
	if err != nil {
		load = "unknown"
	}
	r.Load = append(r.Load, LoadSample{Phase: phase, Load: load, UnixMs: time.Now().UnixMilli()})
}

// finish computes the quantiles of every series, the ratios and the goals
// of issue 26: a warm proof ≤ 2× the bare run, a cold one ≤ 1.5×.
func (r *ProofLatencyReport) finish(samples map[string][]float64) {
	for name, xs := range samples {
		q := quantiles(xs)
		r.Series[name] = ProofQuantiles{N: q.N, Min: slices.Min(xs), P50: q.P50, P95: q.P95, Max: q.Max}
	}
	for _, s := range []struct {
		name string
		goal float64
	}{{"warm", 2}, {"cold", 1.5}} {
		p, b := r.Series[s.name+"/proof"], r.Series[s.name+"/bare"]
		if p.N == 0 || b.N == 0 {
			continue
		}
		for _, st := range []struct {
			stat       string
			proof, bar float64
		}{{"min", p.Min, b.Min}, {"p50", p.P50, b.P50}, {"p95", p.P95, b.P95}, {"max", p.Max, b.Max}} {
			r.Ratios = append(r.Ratios, ProofRatio{Series: s.name, Stat: st.stat, Value: round4(st.proof / st.bar)})
		}
		v := round4(p.P50 / b.P50)
		r.Goals = append(r.Goals, Goal{Figure: s.name + " focused-test proof ÷ bare go test -cover p50", Value: v, Unit: "x", Goal: s.goal, Met: v <= s.goal})
	}
}

// summaryText is what the command prints.
func (r ProofLatencyReport) summaryText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "proof-latency: %s; %d rounds, every proof certified by running its test\n", r.Needle, len(r.Rounds))
	fmt.Fprintf(&b, "%-12s %4s %10s %10s %10s %10s\n", "series", "n", "min ms", "p50 ms", "p95 ms", "max ms")
	for _, k := range slices.Sorted(mapKeys(r.Series)) {
		q := r.Series[k]
		fmt.Fprintf(&b, "%-12s %4d %10.1f %10.1f %10.1f %10.1f\n", k, q.N, q.Min, q.P50, q.P95, q.Max)
	}
	for _, g := range r.Goals {
		fmt.Fprintf(&b, "goal %-50s %7.3f× (≤ %g×) %s\n", g.Figure, g.Value, g.Goal, map[bool]string{true: "met", false: "NOT MET"}[g.Met])
	}
	return b.String()
}

// writeProofLatency writes <dir>/proof-latency.json and .md.
func writeProofLatency(dir string, r ProofLatencyReport) ([]string, error) {
	return writeJSONAndMarkdown(dir, r.Experiment, r, r.markdown())
}

// markdown is the report as reports/proof-latency.md.
func (r ProofLatencyReport) markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# needlebench experiment `%s`\n\n`%s`\n\n", r.Experiment, r.Command)
	fmt.Fprintf(&b, "A user's focused-test proof (`%s`) timed beside its anchor, `%s`, in the same run, alternating which goes\n"+
		"first. Wall milliseconds from process start to exit (empirical quantiles, gonum/stat). Every proof was certified by\n"+
		"running the test in codex's sandbox (reach `executed`), or the run failed. Latencies depend on the machine and its load.\n\n",
		r.Proof, r.Bare)
	b.WriteString("| series | n | min | p50 | p95 | max |\n|---|---|---|---|---|---|\n")
	for _, k := range slices.Sorted(mapKeys(r.Series)) {
		q := r.Series[k]
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", k, q.N, q.Min, q.P50, q.P95, q.Max)
	}
	b.WriteString("\n## Proof ÷ bare go test\n\n| series | min | p50 | p95 | max |\n|---|---|---|---|---|\n")
	for _, s := range []string{"warm", "cold"} {
		var cells []string
		for _, ra := range r.Ratios {
			if ra.Series == s {
				cells = append(cells, fmt.Sprintf("%.3f×", ra.Value))
			}
		}
		if len(cells) > 0 {
			fmt.Fprintf(&b, "| %s | %s |\n", s, strings.Join(cells, " | "))
		}
	}
	b.WriteString("\n## Goals (issue 26)\n\n| figure | value | goal | met |\n|---|---|---|---|\n")
	for _, g := range r.Goals {
		fmt.Fprintf(&b, "| %s | %.3f× | ≤ %g× | %s |\n", g.Figure, g.Value, g.Goal, map[bool]string{true: "yes", false: "**no**"}[g.Met])
	}
	fmt.Fprintf(&b, "\n## What each series starts from\n\nThe fixture is `%s` (module example.com/grepx, one package), the proposal\n`%s`.\n\n", r.Fixture, r.Proposal)
	for _, k := range slices.Sorted(mapKeys(r.Meaning)) {
		fmt.Fprintf(&b, "- `%s`: %s.\n", k, r.Meaning[k])
	}
	b.WriteString("\n## Rounds\n\n| series | round | first | proof ms | bare ms | verdict |\n|---|---|---|---|---|---|\n")
	for _, ro := range r.Rounds {
		first := "bare"
		if ro.ProofFirst {
			first = "proof"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f | %.1f | %s, %s |\n", ro.Series, ro.Round, first, ro.ProofMs, ro.BareMs, ro.Status, ro.Reach)
	}
	fmt.Fprintf(&b, "\n## Machine\n\n%s, %s/%s, %d CPUs, %s; %s.\n\n| after | load average |\n|---|---|\n",
		r.Machine.CPU, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.CPUs, r.Machine.Go, r.Needle)
	for _, l := range r.Load {
		fmt.Fprintf(&b, "| %s | %s |\n", l.Phase, l.Load)
	}
	return b.Bytes()
}
