package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product"
)

// HitLatencyReport is reports/mcp-hit-latency.json: the experiment report
// every experiment writes (methods_ms holds every timed series, by name),
// and what this experiment adds: the machine and its load while it ran, how
// many answers were verified, the grow series and the goals of issue 13.
type HitLatencyReport struct {
	ExperimentReport
	Needle   string            `json:"needle"`
	Machine  Machine           `json:"machine"`
	Load     []LoadSample      `json:"load"`
	Probes   map[string]string `json:"probes"`
	NoOp     string            `json:"noop"`
	Options  HitLatencyKnobs   `json:"options"`
	Verified VerifiedCounts    `json:"verified"`
	Grow     []GrowPoint       `json:"grow"`
	Goals    []Goal            `json:"goals"`
	// Connections is how many server processes each series ran on: one
	// connection answers at most product.HardSessionSteps need_context
	// calls (hitConn).
	Connections map[string]int `json:"connections"`
}

// Machine describes where the figures were measured.
type Machine struct {
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu"`
	Go     string `json:"go"`
}

// LoadSample is the load average after a phase (other processes share the
// machine; a high load inflates every figure).
type LoadSample struct {
	Phase  string `json:"phase"`
	Load   string `json:"loadavg"`
	UnixMs int64  `json:"unix_ms"`
}

// HitLatencyKnobs are the sizes the run used.
type HitLatencyKnobs struct {
	Calls         int    `json:"calls"`
	Warmup        int    `json:"warmup"`
	Cold          int    `json:"cold"`
	First         int    `json:"first"`
	FirstRounds   int    `json:"first_rounds"`
	FirstIdle     string `json:"first_idle"`
	Window        int    `json:"window"`
	GrowHits      []int  `json:"grow_hits"`
	GrowArtifacts []int  `json:"grow_artifacts"`
	GrowFiles     []int  `json:"grow_files"`
	Settle        string `json:"settle"`
}

// VerifiedCounts says how many answers were checked. A call is timed only
// after its answer passed the check (an exact hit of the probe's need with
// context and no worker, the unknown-tool error, the empty ping result, an
// initialize result), so measured == verified, or the run failed.
type VerifiedCounts struct {
	Measured        int `json:"measured"`
	Verified        int `json:"verified"`
	ExactHits       int `json:"exact_hits_measured"`
	UnmeasuredCalls int `json:"unmeasured_verified"` // first asks, warm-up and filler hits
}

// GrowPoint is one point of a grow series: the series keys of methods_ms
// that start with Key were measured at Value.
type GrowPoint struct {
	Series string `json:"series"` // hits | artifacts | files
	Axis   string `json:"axis"`
	Value  int    `json:"value"`
	Key    string `json:"key"`
}

// Goal is one figure of issue 13 against its goal.
type Goal struct {
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"` // ms or x (a ratio of p50s)
	Goal   float64 `json:"goal"`
	Met    bool    `json:"met"`
}

func newHitLatencyReport(opt HitLatencyOptions) HitLatencyReport {
	r := HitLatencyReport{
		ExperimentReport: ExperimentReport{Experiment: "mcp-hit-latency", Calls: opt.Calls, Methods: map[string]Quantiles{},
			Setup: "needle mcp serve --cache-only spawned as a separate process and driven over its stdin/stdout pipes by " +
				"needlebench, one JSON-RPC line per request, every timed answer checked; n of each series in the table, in the main run"},
		Machine: Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), CPU: cpuModel(), Go: runtime.Version()},
		Probes:  map[string]string{},
		NoOp: "tools/call of a tool needle does not have (" + noopTool + "): the same transport, method table, serialized " +
			"tool-call queue and params decoding as need_context, answered with the -32602 unknown-tool error",
		Options: HitLatencyKnobs{Calls: opt.Calls, Warmup: opt.Warmup, Cold: opt.Cold, First: opt.First, FirstRounds: opt.FirstRounds, FirstIdle: opt.FirstIdle.String(), Window: opt.Window,
			GrowHits: nonNilInts(opt.GrowHits), GrowArtifacts: nonNilInts(opt.GrowArtifacts), GrowFiles: nonNilInts(opt.GrowFiles),
			Settle: opt.Settle.String()},
		Grow:        []GrowPoint{},
		Connections: map[string]int{},
	}
	for _, p := range []probe{probeTrace, probeLocate, probeTests} {
		r.Probes[p.name] = p.what
	}
	return r
}

func nonNilInts(s []int) []int {
	if s == nil || !slices.IsSorted(s) {
		s = slices.Sorted(slices.Values(s))
	}
	if s == nil {
		return []int{}
	}
	return s
}

// cpuModel is the first "model name" of /proc/cpuinfo, if there is one.
func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (r *HitLatencyReport) sampleLoad(phase string) {
	data, err := os.ReadFile("/proc/loadavg")
	load := strings.Join(strings.Fields(string(data)), " ")
	if err != nil {
		load = "unknown"
	}
	r.Load = append(r.Load, LoadSample{Phase: phase, Load: load, UnixMs: time.Now().UnixMilli()})
}

func (r *HitLatencyReport) addPoint(series, axis string, value int, key string) {
	r.Grow = append(r.Grow, GrowPoint{Series: series, Axis: axis, Value: value, Key: key})
}

// finish computes the quantiles of every series and the goals.
func (r *HitLatencyReport) finish(samples map[string][]float64, verified, extra int) {
	for series, ms := range samples {
		q := quantiles(ms)
		r.Methods[series] = q
		r.Verified.Measured += q.N
		if strings.HasSuffix(series, "/trace") || strings.HasSuffix(series, "/locate") || strings.HasSuffix(series, "/tests") ||
			series == "first/hit" || series == "first/steady" || series == "first/idle-hit" {
			r.Verified.ExactHits += q.N
		}
	}
	r.Verified.Verified, r.Verified.UnmeasuredCalls = verified, extra
	r.goals()
}

// goals compares the figures with issue 13's goals: p99 of an exact hit ≤
// 0.5 ms, hit ÷ no-op p50 ≤ 3, growth ratios ≤ 1.2, cold start ÷ the
// minimal go-sdk server ≤ 1.5.
func (r *HitLatencyReport) goals() {
	m := r.Methods
	add := func(figure string, value float64, unit string, goal float64) {
		r.Goals = append(r.Goals, Goal{Figure: figure, Value: value, Unit: unit, Goal: goal, Met: value <= goal})
	}
	for _, p := range []string{"trace", "locate", "tests"} {
		if q, ok := m["main/"+p]; ok && q.N > 0 {
			add("exact hit p99, "+p, q.P99, "ms", 0.5)
		}
	}
	for _, p := range []string{"trace", "locate", "tests"} {
		if q, n := m["main/"+p], m["main/noop"]; q.N > 0 && n.N > 0 {
			add("exact hit ÷ no-op tools/call p50, "+p, q.P50/n.P50, "x", 3)
		}
	}
	// Issue 26: the first hit of a connection costs what a later one
	// costs, and a steady hit at most 3× a no-op on the same connections.
	if f, s, n := m["first/hit"], m["first/steady"], m["first/noop"]; f.N > 0 && s.N > 0 && n.N > 0 {
		add("first hit on a new connection p50", f.P50, "ms", 1)
		add("first hit on a new connection p99", f.P99, "ms", 1)
		add("first hit ÷ the same hit later on the connection p50", f.P50/s.P50, "x", 1.5)
		// A host's first call always follows a pause (the model's turn):
		// the same hit after the same pause is the later hit it is.
		if a := m["first/idle-hit"]; a.N > 0 {
			add("first hit ÷ the same hit later after the same pause p50", f.P50/a.P50, "x", 1.5)
		}
		add("steady hit ÷ no-op tools/call p50, same connections", s.P50/n.P50, "x", 3)
	}
	if a, b := m["cold/needle"], m["cold/go-sdk-minimal"]; a.N > 0 && b.N > 0 {
		add("cold start to initialize answer ÷ minimal go-sdk server p50", a.P50/b.P50, "x", 1.5)
	}
	for _, g := range []struct{ series, probe, axis string }{
		{"hits", "trace", "earlier hits"}, {"artifacts", "trace", "artifacts"}, {"artifacts", "locate", "artifacts"},
		{"files", "tests", "files"}, {"files", "locate", "files"},
	} {
		first, last, ok := r.growEnds(g.series)
		if !ok {
			continue
		}
		a, b := m[last.Key+"/"+g.probe], m[first.Key+"/"+g.probe]
		add(fmt.Sprintf("%s p50 with %d ÷ %d %s", g.probe, last.Value, first.Value, g.axis), a.P50/b.P50, "x", 1.2)
		// Each point is a window of its own, minutes apart on a shared
		// machine: the same ratio of each window's hit to the no-op timed
		// beside it on the same connection takes out what the machine did
		// between the windows.
		if na, nb := m[last.Key+"/noop"], m[first.Key+"/noop"]; na.P50 > 0 && nb.P50 > 0 && b.P50 > 0 {
			add(fmt.Sprintf("%s p50 ÷ its window's no-op p50, with %d ÷ %d %s", g.probe, last.Value, first.Value, g.axis),
				(a.P50/na.P50)/(b.P50/nb.P50), "x", 1.2)
		}
	}
}

// growEnds returns the first and last point of a grow series.
func (r *HitLatencyReport) growEnds(series string) (first, last GrowPoint, ok bool) {
	var pts []GrowPoint
	for _, p := range r.Grow {
		if p.Series == series {
			pts = append(pts, p)
		}
	}
	if len(pts) < 2 {
		return first, last, false
	}
	return pts[0], pts[len(pts)-1], true
}

// writeHitLatency writes the report through the experiment report writer
// (the quantiles of every series, reports/mcp-hit-latency.{json,md}), then
// completes the JSON with the rest of the report and adds its sections to
// the Markdown.
func writeHitLatency(dir string, r HitLatencyReport) ([]string, error) {
	files, err := writeExperiment(dir, r.ExperimentReport)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(files[0], append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	md, err := os.ReadFile(files[1])
	if err != nil {
		return nil, err
	}
	return files, os.WriteFile(files[1], append(md, r.markdown()...), 0o644)
}

// markdown is what the report adds to the experiment's quantile table.
func (r HitLatencyReport) markdown() []byte {
	var b bytes.Buffer
	b.WriteString("\n## Goals (issues 13 and 26)\n\nRatios are of p50s. Latencies depend on the machine and its load.\n\n")
	b.WriteString("| figure | value | goal | met |\n|---|---|---|---|\n")
	for _, g := range r.Goals {
		unit := map[string]string{"ms": " ms", "x": "×"}[g.Unit]
		fmt.Fprintf(&b, "| %s | %.3f%s | ≤ %g%s | %s |\n", g.Figure, g.Value, unit, g.Goal, unit, map[bool]string{true: "yes", false: "**no**"}[g.Met])
	}
	for _, series := range []string{"hits", "artifacts", "files"} {
		r.growTable(&b, series)
	}
	b.WriteString("\n## Series\n\n")
	fmt.Fprintf(&b, "- `main/<probe>`, `main/noop`, `main/ping`: %d rounds after %d warm-up rounds on %d connection(s); each round asks\n"+
		"  every probe, the no-op and ping once, starting one call later each round. A connection answers at most %d need_context\n"+
		"  calls (the session step cap), so a series goes on over a new server process on the same store, whose probes are asked\n"+
		"  again (they must answer the same needs) and %d rounds not timed before it is timed again.\n",
		r.Options.Calls, r.Options.Warmup, r.Connections["main"], product.HardSessionSteps, connWarmup)
	for _, p := range slices.Sorted(mapKeys(r.Probes)) {
		fmt.Fprintf(&b, "- probe `%s`: %s.\n", p, r.Probes[p])
	}
	fmt.Fprintf(&b, "- no-op: %s.\n", r.NoOp)
	if n := r.Connections["first"]; n > 0 {
		fmt.Fprintf(&b, "- `first/hit`, `first/steady`, `first/noop`: %d new connections (server processes, as Codex spawns one per session; one\n"+
			"  more before them warms the page cache and is not recorded) on the main run's store, each taking the probes in turn:\n"+
			"  initialize, notifications/initialized and tools/list as a host sends them, %s left alone (the host's model's turn),\n"+
			"  then `first/hit`, the first tools/call, a need the store answered before (an exact hit; process start is not in it),\n"+
			"  then %d rounds of the same probe (`first/steady`) and the no-op (`first/noop`) on that connection, then, each after\n"+
			"  the same pause, the same probe once more (`first/idle-hit`: a later hit after a pause, not a first) and the no-op\n"+
			"  (`first/idle-noop`: the floor of a tools/call after a pause).\n",
			r.Options.First, r.Options.FirstIdle, r.Options.FirstRounds)
	}
	b.WriteString("- `cold/needle`, `cold/go-sdk-minimal`: spawn to initialize answer, alternating which goes first; the minimal server is\n" +
		"  the official go-sdk's smallest stdio server (bench/internal/mcpminimal); needle opens an existing store.\n")
	if len(r.Grow) == 0 {
		b.WriteString("- no grow series in this run (--grow not given).\n")
	} else {
		fmt.Fprintf(&b, "- `grow-hits/N`: the trace probe and the no-op after N earlier hits on the same store (%d connections in all); `grow-artifacts/N`:\n"+
			"  a new server with N certified artifacts in the store; `grow-files/N`: a new server on a repository with N more\n"+
			"  files under data/. Each grow window is %d rounds after %d warm-up rounds.\n", r.Connections["grow-hits"], r.Options.Window, r.Options.Warmup)
	}
	fmt.Fprintf(&b, "\n## Verification\n\n%d calls timed, %d verified (%d of them exact hits); %d more answers verified but not timed\n"+
		"(first asks, warm-up, filler hits). A timed answer that is not what its series expects fails the run.\n",
		r.Verified.Measured, r.Verified.Verified, r.Verified.ExactHits, r.Verified.UnmeasuredCalls)
	fmt.Fprintf(&b, "\n## Machine\n\n%s, %s/%s, %d CPUs, %s; %s.\n\n| after | load average |\n|---|---|\n",
		r.Machine.CPU, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.CPUs, r.Machine.Go, r.Needle)
	for _, l := range r.Load {
		fmt.Fprintf(&b, "| %s | %s |\n", l.Phase, l.Load)
	}
	return b.Bytes()
}

// growTable is one grow series: p50 / p99 of each probe and the no-op p50
// at every point.
func (r HitLatencyReport) growTable(b *bytes.Buffer, series string) {
	var pts []GrowPoint
	for _, p := range r.Grow {
		if p.Series == series {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return
	}
	var probes []string
	for k := range r.Methods {
		if rest, ok := strings.CutPrefix(k, pts[0].Key+"/"); ok && rest != "noop" {
			probes = append(probes, rest)
		}
	}
	slices.Sort(probes)
	fmt.Fprintf(b, "\n### Grow: %s\n\n| %s |", series, pts[0].Axis)
	for _, p := range probes {
		fmt.Fprintf(b, " %s p50 / p99 ms |", p)
	}
	b.WriteString(" no-op p50 ms |\n|---|")
	b.WriteString(strings.Repeat("---|", len(probes)+1) + "\n")
	for _, pt := range pts {
		fmt.Fprintf(b, "| %d |", pt.Value)
		for _, p := range probes {
			q := r.Methods[pt.Key+"/"+p]
			fmt.Fprintf(b, " %.3f / %.3f |", q.P50, q.P99)
		}
		fmt.Fprintf(b, " %.3f |\n", r.Methods[pt.Key+"/noop"].P50)
	}
}

// summaryText is what the command prints: every series and the goals.
func (r HitLatencyReport) summaryText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp-hit-latency: %s; %d calls timed, all verified\n", r.Needle, r.Verified.Measured)
	fmt.Fprintf(&b, "%-34s %6s %9s %9s %9s %9s\n", "series", "n", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, k := range slices.Sorted(mapKeys(r.Methods)) {
		q := r.Methods[k]
		fmt.Fprintf(&b, "%-34s %6d %9.3f %9.3f %9.3f %9.3f\n", k, q.N, q.P50, q.P95, q.P99, q.Max)
	}
	for _, g := range r.Goals {
		fmt.Fprintf(&b, "goal %-70s %9.3f %s (≤ %g) %s\n", g.Figure, g.Value, g.Unit, g.Goal, map[bool]string{true: "met", false: "NOT MET"}[g.Met])
	}
	if len(r.Load) > 0 {
		fmt.Fprintf(&b, "load average at the end: %s\n", r.Load[len(r.Load)-1].Load)
	}
	return b.String()
}
