package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Quantiles are latency quantiles in milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// quantiles computes empirical quantiles with gonum/stat.
func quantiles(xs []float64) Quantiles {
	q := Quantiles{N: len(xs)}
	if len(xs) == 0 {
		return q
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q.P50 = stat.Quantile(0.50, stat.Empirical, s, nil)
	q.P95 = stat.Quantile(0.95, stat.Empirical, s, nil)
	q.P99 = stat.Quantile(0.99, stat.Empirical, s, nil)
	q.Max = s[len(s)-1]
	return q
}

// PatternStat is how the needs of one corpus pattern resolved.
type PatternStat struct {
	Needs int `json:"needs"`
	Hits  int `json:"hits"`
}

// Report is reports/<corpus>.json. Everything but the latencies
// (latency_ms, validation_ms, exact_hit_ms, replay_hit_ms, carried_hit_ms,
// their ratios, refresh_ms and warm_ms) and the phases' wall times
// (phases) is deterministic: two runs give the same numbers.
type Report struct {
	Corpus               string    `json:"corpus"`
	Reproduce            string    `json:"-"` // the command that plays the corpus again, as markdown
	CorpusDir            string    `json:"-"` // the corpus directory as the run was given it
	Needs                int       `json:"needs"`
	Sessions             int       `json:"sessions"`
	Hits                 int       `json:"hits"`
	OracleHits           int       `json:"oracle_hits"`
	HitsInOracle         int       `json:"hits_in_oracle"`
	HitsBeyondOracle     int       `json:"hits_beyond_oracle"`
	HitRate              float64   `json:"hit_rate"`
	StaleReturned        int       `json:"stale_returned"`
	StaleNeeds           []string  `json:"stale_needs"`
	NaiveHits            int       `json:"naive_hits"`
	NaiveStaleReturned   int       `json:"naive_stale_returned"`
	WorkerRuns           int       `json:"worker_runs"`
	WorkerRunsFailed     int       `json:"worker_runs_failed"`
	WorkerTokens         int64     `json:"worker_tokens"`
	BaselineWorkerTokens int64     `json:"baseline_worker_tokens"`
	NaiveWorkerTokens    int64     `json:"naive_worker_tokens"`
	TokensSavedPct       float64   `json:"tokens_saved_pct"`
	LatencyMs            Quantiles `json:"latency_ms"`
	ValidationMs         Quantiles `json:"validation_ms"` // hits
	// ExactHits are the exact hits that re-proved nothing, ReplayHits the
	// hits that re-proved evidence by proof replay (deterministic counts);
	// the goal of the hit path is a replay hit p95 within 5× the exact
	// hit p50 (latencies).
	ExactHits             int       `json:"exact_hits"`
	ReplayHits            int       `json:"replay_hits"`
	ExactHitMs            Quantiles `json:"exact_hit_ms"`
	ReplayHitMs           Quantiles `json:"replay_hit_ms"`
	ReplayP95OverExactP50 float64   `json:"replay_hit_p95_over_exact_hit_p50"`
	// Refreshed says whether the product's Refresh ran at each version
	// bump (Bumps, with what it did; its ms is a latency). CarriedHits are
	// the hits after a bump that served evidence last served at the
	// earlier version (the first asks after a bump: without the refresh,
	// proof replays at need time); the goal is their p95 within 5× the
	// exact hit p50. Exact hits exclude them.
	Refreshed              bool                   `json:"refreshed"`
	Bumps                  []BumpStat             `json:"bumps"`
	RefreshMs              []float64              `json:"refresh_ms"`
	WarmMs                 []float64              `json:"warm_ms"`
	CarriedHits            int                    `json:"carried_hits"`
	CarriedHitMs           Quantiles              `json:"carried_hit_ms"`
	CarriedP95OverExactP50 float64                `json:"carried_hit_p95_over_exact_hit_p50"`
	ResolutionKinds        map[string]int         `json:"resolution_kinds"`
	LedgerClasses          map[string]int         `json:"ledger_classes"`
	Patterns               map[string]PatternStat `json:"patterns"`
	Wrong                  WrongMix               `json:"wrong_answers"`
	// Validation counts the verdicts on every distinct scripted answer per
	// capability kind (and "all"): the truth against the validators.
	Validation map[string]KindCounts `json:"validation"`
	// Classes counts the same answers by the class the generator meant
	// them in ("right", or how it meant them to be wrong).
	Classes map[string]ClassCounts `json:"answer_classes"`
	// Phases are the wall times of the run's phases, in order (sandbox
	// check, materialize, truth, play, validation, evaluate; writing the
	// report is not in them): not deterministic, like the latencies.
	Phases         []Phase  `json:"phases"`
	FalseCertified []string `json:"false_certified"`
	TrueRejected   []string `json:"true_rejected"`
	// TruthMethods says, per capability kind, how the intervention truth
	// judges it (itruth.go).
	TruthMethods map[string]string `json:"truth_methods"`
	// Unjudged lists the answers the intervention truth could not judge,
	// UnjudgedWhy counts them by reason; Undecided the answers the
	// validators could not decide.
	Unjudged    []string       `json:"unjudged"`
	UnjudgedWhy map[string]int `json:"unjudged_why"`
	Undecided   []string       `json:"undecided"`
	// CoverageDisagreements are the answers the coverage truth (the
	// second opinion, truth.go) and the intervention truth judge
	// differently, with both verdicts.
	CoverageDisagreements []string  `json:"coverage_disagreements"`
	Subjects              []Subject `json:"subjects"`
	// Continuation is the worker continuation figure (report_continue.go),
	// read from frozen/continue when the report is written;
	// ContinuationError says why it is not there.
	Continuation      *ContinuationTokens `json:"continuation_tokens,omitempty"`
	ContinuationError string              `json:"-"`
}

// truthMethods are the intervention truth's methods, per kind, as the
// report states them.
var truthMethods = map[string]string{
	"implementation_location": "symbol: the cited declaration deleted, a reference to the subject no longer compiles (a method shadowing a promoted one: renamed, " +
		"the new name selects on its type and not on a type defined from it); " +
		"cli_option: the name renamed in the cited lines, a program that parses the module's flags no longer recognises it or recognises the new name " +
		"(under another subcommand that defines it too: no longer recognises it and recognises the new name)",
	"runtime_flow": "the functions of the steps instrumented; in a run of the flow's scenario (default: any test) the steps are entered in order, each within the one before",
	"focused_tests": "the test is declared in the cited file, the file is compiled into its package's test binary (an undefined name appended breaks that build) " +
		"and the test passes unmutated; with the subject broken (symbol or file: its bodies panic, or exit the process where the test recovers the panic; " +
		"cli_option: its defining sites renamed) it fails; never running the broken code is false, running it and passing unjudged",
}

// unjudgedClass is the kind of reason an answer is unjudged, for counting.
func unjudgedClass(why string) string {
	for _, k := range []string{"mutant survived", "not instrumented", "ran no scenario", "no recorded run", "no intervention", "does not recognise",
		"no program", "behaves differently", "does not parse", "do not build", "no reference", "did not finish", "within the recorded part"} {
		if strings.Contains(why, k) {
			return k
		}
	}
	return "other"
}

// Phase is the wall time of one phase of a run.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// phaseTotal is the wall time of every phase together.
func phaseTotal(ps []Phase) float64 {
	total := 0.0
	for _, p := range ps {
		total += p.Seconds
	}
	return total
}

// ClassCounts are the verdicts on the answers of one intended class.
type ClassCounts struct {
	Answers   int `json:"answers"`
	False     int `json:"false"`     // judged false by the truth
	Certified int `json:"certified"` // certified by the validators
}

// buildReport assembles the report of a run.
func buildReport(c *Corpus, outs []outcome, ev evaluation, verdicts []Verdict, runs, failed int, tokens int64) Report {
	r := Report{
		Corpus: c.Manifest.Name, Needs: len(outs), Sessions: len(c.Sessions),
		Hits: ev.Hits, OracleHits: ev.OracleHits, HitsInOracle: ev.HitsInOracle, HitsBeyondOracle: ev.HitsBeyondOracle, StaleReturned: ev.Stale, StaleNeeds: nonNilStrings(ev.StaleNeeds),
		NaiveHits: ev.NaiveHits, NaiveStaleReturned: ev.NaiveStale,
		WorkerRuns: runs, WorkerRunsFailed: failed, WorkerTokens: tokens,
		BaselineWorkerTokens: ev.BaselineTokens, NaiveWorkerTokens: ev.NaiveTokens,
		ResolutionKinds: ev.Kinds, LedgerClasses: ev.Ledger, Patterns: map[string]PatternStat{},
		Wrong: c.Manifest.Wrong, Subjects: c.Manifest.Subjects,
		Validation: countVerdicts(verdicts), Classes: map[string]ClassCounts{},
		FalseCertified: []string{}, TrueRejected: []string{}, TruthMethods: truthMethods,
		Unjudged: []string{}, UnjudgedWhy: map[string]int{}, Undecided: []string{}, CoverageDisagreements: []string{},
	}
	for _, v := range verdicts {
		tallyVerdict(&r, v)
	}
	if r.Needs > 0 {
		r.HitRate = round4(float64(r.Hits) / float64(r.Needs))
	}
	if r.BaselineWorkerTokens > 0 {
		r.TokensSavedPct = round4(100 * (1 - float64(r.WorkerTokens)/float64(r.BaselineWorkerTokens)))
	}
	for p, n := range ev.PatternNeeds {
		r.Patterns[p] = PatternStat{Needs: n, Hits: ev.PatternHits[p]}
	}
	fillLatencies(&r, outs)
	r.Bumps, r.RefreshMs, r.WarmMs = []BumpStat{}, []float64{}, []float64{}
	return r
}

// tallyVerdict counts one validated answer by its intended class and lists it where it went wrong or was not decided.
func tallyVerdict(r *Report, v Verdict) {
	class := v.Intended
	if class == "" {
		class = "right"
	}
	cc := r.Classes[class]
	cc.Answers++
	if !v.True {
		cc.False++
	}
	if v.Certified {
		cc.Certified++
	}
	r.Classes[class] = cc
	switch {
	case v.Truth == verdictUnjudged:
		r.Unjudged = append(r.Unjudged, verdictLine(v))
		r.UnjudgedWhy[unjudgedClass(v.Why)]++
	case v.Outcome == outcomeUndecided:
		r.Undecided = append(r.Undecided, verdictLine(v))
	case !v.True && v.Certified:
		r.FalseCertified = append(r.FalseCertified, verdictLine(v))
	case v.True && !v.Certified:
		r.TrueRejected = append(r.TrueRejected, verdictLine(v))
	}
	if v.Truth != verdictUnjudged && v.CoverageTruth != verdictUnjudged && v.Truth != v.CoverageTruth {
		r.CoverageDisagreements = append(r.CoverageDisagreements, fmt.Sprintf("%s (%s@%s) %s for %s: intervention %s (%s); coverage %s (%s)",
			v.Need, v.Module, v.Version, v.Kind, v.Subject, v.Truth, v.Why, v.CoverageTruth, v.CoverageWhy))
	}
}

// fillLatencies sets the latency quantiles of all needs and of each kind of hit, and the ratios to exact hits.
func fillLatencies(r *Report, outs []outcome) {
	var all, validation, exact, replay, carried []float64
	carriedOver := carriedHits(outs)
	for i, o := range outs {
		all = append(all, o.LatencyMs)
		if !o.Result.WorkerSpawned && o.Result.Status == "hit" {
			validation = append(validation, o.LatencyMs)
			if carriedOver[i] {
				carried = append(carried, o.LatencyMs)
			}
			switch {
			case o.Result.Replays > 0:
				replay = append(replay, o.LatencyMs)
			case o.Result.Resolution.Kind == product.ResolutionExact && !carriedOver[i]:
				exact = append(exact, o.LatencyMs)
			}
		}
	}
	r.LatencyMs, r.ValidationMs = quantiles(all), quantiles(validation)
	r.ExactHitMs, r.ReplayHitMs, r.CarriedHitMs = quantiles(exact), quantiles(replay), quantiles(carried)
	r.ExactHits, r.ReplayHits, r.CarriedHits = len(exact), len(replay), len(carried)
	if r.ExactHitMs.P50 > 0 {
		r.ReplayP95OverExactP50 = round4(r.ReplayHitMs.P95 / r.ExactHitMs.P50)
		r.CarriedP95OverExactP50 = round4(r.CarriedHitMs.P95 / r.ExactHitMs.P50)
	}
}

// BumpStat is one version bump of a module and what the product's Refresh
// did there (its wall time is in Report.RefreshMs, with the latencies).
type BumpStat struct {
	Module   string `json:"module"`
	From     string `json:"from"`
	To       string `json:"to"`
	Evidence int    `json:"evidence"`
	Reproven int    `json:"reproven"`
	Stale    int    `json:"stale"`
	Needs    int    `json:"needs"`
	Renewed  int    `json:"renewed"`
	Warmed   int    `json:"warmed"`
}

// addBumps records the refreshes a play ran at version bumps.
func (r *Report) addBumps(refreshed bool, bumps []bump) {
	r.Refreshed = refreshed
	for _, b := range bumps {
		x := b.Refresh
		r.Bumps = append(r.Bumps, BumpStat{Module: b.Module, From: b.From, To: b.To, Evidence: x.Evidence,
			Reproven: x.Reproven, Stale: x.Stale, Needs: x.Needs, Renewed: x.Renewed, Warmed: b.Warmed})
		r.RefreshMs = append(r.RefreshMs, x.Ms)
		r.WarmMs = append(r.WarmMs, b.WarmMs)
	}
}

// carriedHits marks the hits after a version bump that the earlier
// version's evidence answers: the need itself was last asked at another
// version of the same module, or the hit serves an artifact or a claim (a
// claim keeps its id when its lines move) last served at another version.
// It reads only what was asked and what the results say they served, in
// the order the needs were played.
func carriedHits(outs []outcome) []bool {
	marks := make([]bool, len(outs))
	servedAt := map[string]string{} // module, need or evidence id → the version it was last asked or served at
	for i, o := range outs {
		if o.Result.Status != "hit" {
			servedAt[o.Module+"\x00"+o.NeedID] = o.Version
			continue
		}
		ids := append(append([]string{o.NeedID}, o.Result.Resolution.ArtifactIDs...), o.Result.ClaimIDs...)
		for _, id := range ids {
			if v, ok := servedAt[o.Module+"\x00"+id]; ok && v != o.Version {
				marks[i] = true
			}
		}
		for _, id := range ids {
			servedAt[o.Module+"\x00"+id] = o.Version
		}
	}
	return marks
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeReport writes <dir>/<name>.json, .md and the charts.
func writeReport(dir string, r Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, r.Corpus)
	if r.Continuation == nil && r.ContinuationError == "" {
		// Not a figure of the corpus: of the recorded continuation
		// sessions beside its frozen transcripts.
		c, err := continuationTokens(continuationDir(r.CorpusDir))
		if err != nil {
			r.ContinuationError = err.Error()
		}
		r.Continuation = c
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []string{base + ".json", base + ".md"}
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	charts, err := writeCharts(base, r)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".md", []byte(markdown(r, charts)), 0o644); err != nil {
		return nil, err
	}
	page, err := writeHTML(base, r, charts)
	if err != nil {
		return nil, err
	}
	return append(append(files, page), charts...), nil
}

// writeCharts draws the resolution kinds, the token comparison and the
// stale answers against the naive cache as SVG.
func writeCharts(base string, r Report) ([]string, error) {
	kinds := slices.Sorted(mapKeys(r.ResolutionKinds))
	kv := make(plotter.Values, len(kinds))
	for i, k := range kinds {
		kv[i] = float64(r.ResolutionKinds[k])
	}
	p1 := plot.New()
	p1.Title.Text = fmt.Sprintf("%s: resolutions of %d needs", r.Corpus, r.Needs)
	p1.Y.Label.Text = "needs"
	b1, err := plotter.NewBarChart(kv, vg.Points(22))
	if err != nil {
		return nil, err
	}
	b1.Color = color.RGBA{R: 0x33, G: 0x66, B: 0x99, A: 0xff}
	p1.Add(b1)
	p1.NominalX(kinds...)
	p1.X.Min, p1.X.Max = -0.75, float64(len(kinds))-0.25
	p1.X.Tick.Label.Rotation = 0.6
	p1.X.Tick.Label.XAlign = draw.XRight
	tokens := plotter.Values{float64(r.WorkerTokens), float64(r.NaiveWorkerTokens), float64(r.BaselineWorkerTokens)}
	p2 := plot.New()
	p2.Title.Text = fmt.Sprintf("%s: worker tokens", r.Corpus)
	p2.Y.Label.Text = "tokens"
	b2, err := plotter.NewBarChart(tokens, vg.Points(40))
	if err != nil {
		return nil, err
	}
	b2.Color = color.RGBA{R: 0x99, G: 0x55, B: 0x22, A: 0xff}
	p2.Add(b2)
	p2.NominalX("Needle", "naive exact-text cache", "no reuse")
	p2.X.Min, p2.X.Max = -0.75, 2.75
	p3, err := staleChart(r)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, p := range map[string]*plot.Plot{"resolutions": p1, "tokens": p2, "stale": p3} {
		file := base + "-" + name + ".svg"
		if err := p.Save(6*vg.Inch, 4*vg.Inch, file); err != nil {
			return nil, err
		}
		out = append(out, file)
	}
	slices.Sort(out)
	return out, nil
}

// markdown explains every number of the report.
func markdown(r Report, charts []string) string {
	var b bytes.Buffer
	markdownHeadline(&b, r)
	markdownRefresh(&b, r)
	markdownPhases(&b, r)
	markdownMeanings(&b, r)
	markdownCharts(&b, charts)
	markdownValidation(&b, r)
	markdownBreakdowns(&b, r)
	markdownContinuation(&b, r)
	markdownFailureLists(&b, r)
	return b.String()
}

// percentOf formats a as a percentage of n, or a dash when n is zero.
func percentOf(a, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(n))
}

// markdownHeadline writes the title, how to reproduce the run and the headline table.
func markdownHeadline(b *bytes.Buffer, r Report) {
	fmt.Fprintf(b, "# needlebench report: corpus `%s`\n\n", r.Corpus)
	fmt.Fprintf(b, "Reproduce with %s. Every number except the latencies and wall times is\n", r.Reproduce)
	b.WriteString("deterministic: a second run gives the same figures.\n\n")
	b.WriteString("## Headline\n\n| measure | value |\n|---|---|\n")
	fmt.Fprintf(b, "| needs played (sessions) | %d (%d) |\n", r.Needs, r.Sessions)
	fmt.Fprintf(b, "| hits (served from evidence, no worker) | %d (%s) |\n", r.Hits, percentOf(r.Hits, r.Needs))
	fmt.Fprintf(b, "| oracle hits | %d (Needle hits %s of them) |\n", r.OracleHits, percentOf(r.HitsInOracle, r.OracleHits))
	fmt.Fprintf(b, "| hits the oracle does not count | %d |\n", r.HitsBeyondOracle)
	fmt.Fprintf(b, "| stale answers returned by Needle | **%d** |\n", r.StaleReturned)
	all := r.Validation["all"]
	fmt.Fprintf(b, "| false answers the validators certified | **%d** of %d false |\n", all.FalseCertified, all.FalseCertified+all.FalseRejected)
	fmt.Fprintf(b, "| true answers the validators certified | %d of %d (%s) |\n", all.TrueCertified, all.TrueCertified+all.TrueRejected,
		percentOf(all.TrueCertified, all.TrueCertified+all.TrueRejected))
	fmt.Fprintf(b, "| stale answers a naive exact-text cache would return | %d of its %d hits |\n", r.NaiveStaleReturned, r.NaiveHits)
	fmt.Fprintf(b, "| worker tokens: Needle / naive cache / no reuse | %d / %d / %d |\n", r.WorkerTokens, r.NaiveWorkerTokens, r.BaselineWorkerTokens)
	fmt.Fprintf(b, "| worker tokens saved against no reuse | %.1f%% |\n", r.TokensSavedPct)
	fmt.Fprintf(b, "| worker runs (failed) | %d (%d) |\n", r.WorkerRuns, r.WorkerRunsFailed)
	fmt.Fprintf(b, "| latency of all needs, ms (p50 / p95 / p99) | %.1f / %.1f / %.1f |\n", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99)
	fmt.Fprintf(b, "| latency of hits, ms (p50 / p95 / p99) | %.1f / %.1f / %.1f |\n", r.ValidationMs.P50, r.ValidationMs.P95, r.ValidationMs.P99)
	fmt.Fprintf(b, "| latency of exact hits (%d), ms (p50 / p95 / p99) | %.3f / %.3f / %.3f |\n", r.ExactHitMs.N, r.ExactHitMs.P50, r.ExactHitMs.P95, r.ExactHitMs.P99)
	fmt.Fprintf(b, "| latency of hits by proof replay (%d), ms (p50 / p95 / p99) | %.3f / %.3f / %.3f |\n", r.ReplayHitMs.N, r.ReplayHitMs.P50, r.ReplayHitMs.P95, r.ReplayHitMs.P99)
	fmt.Fprintf(b, "| latency of first asks after a version bump (%d hits on the earlier version's evidence), ms (p50 / p95 / p99) | %.3f / %.3f / %.3f |\n",
		r.CarriedHitMs.N, r.CarriedHitMs.P50, r.CarriedHitMs.P95, r.CarriedHitMs.P99)
	fmt.Fprintf(b, "| first ask after a bump p95 ÷ exact hit p50 (goal ≤ 5) | %.2f |\n", r.CarriedP95OverExactP50)
	fmt.Fprintf(b, "| replay hit p95 ÷ exact hit p50 | %.2f |\n\n", r.ReplayP95OverExactP50)
}

// markdownRefresh writes the table of refreshes at version bumps, or says the run played without them.
func markdownRefresh(b *bytes.Buffer, r Report) {
	if r.Refreshed {
		b.WriteString("## Refresh at version bumps\n\n" +
			"At each version bump the product's `Engine.Refresh` (what `needle mcp serve` runs in the background when the\n" +
			"source changes, on an engine of its own, and `needle evidence refresh` on demand) re-proved the evidence, then the\n" +
			"serving engine's `Engine.Warm` readied it for the renewed needs, before the next need was played: the needs after\n" +
			"a bump are answered as they would be after a finished background refresh. Their wall time is how long after the\n" +
			"bump that holds; a need asked sooner re-proves what it reaches itself (`needlebench run --no-refresh` plays every\n" +
			"need that way).\n\n" +
			"| module | from → to | evidence | re-proven | stale | needs renewed | refresh ms | needs warmed | warm ms |\n" +
			"|---|---|---|---|---|---|---|---|---|\n")
		for i, x := range r.Bumps {
			fmt.Fprintf(b, "| %s | %s → %s | %d | %d | %d | %d of %d | %.1f | %d | %.1f |\n", x.Module, x.From, x.To, x.Evidence,
				x.Reproven, x.Stale, x.Renewed, x.Needs, r.RefreshMs[i], x.Warmed, r.WarmMs[i])
		}
		b.WriteString("\n")
	} else {
		b.WriteString("Played with `--no-refresh`: no refresh at version bumps; the needs re-proved the evidence they reached.\n\n")
	}
}

// markdownPhases writes the wall time of each phase of the run, where the
// time of make bench goes.
func markdownPhases(b *bytes.Buffer, r Report) {
	if len(r.Phases) == 0 {
		return
	}
	total := phaseTotal(r.Phases)
	b.WriteString("## Wall time by phase\n\nEach phase from its start to the next one's, on this run's machine and load (not deterministic);\n" +
		"writing the report is not in them. The sandbox check starts with materialize and runs beside it and truth; its row\n" +
		"is what was left of it after truth.\n\n| phase | seconds | share |\n|---|---|---|\n")
	for _, p := range r.Phases {
		fmt.Fprintf(b, "| %s | %.1f | %s |\n", p.Name, p.Seconds, percentOfFloat(p.Seconds, total))
	}
	fmt.Fprintf(b, "| all | %.1f | |\n\n", total)
}

// percentOfFloat formats a as a percentage of n, or a dash when n is zero.
func percentOfFloat(a, n float64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*a/n)
}

// markdownMeanings writes the section that defines each measure of the headline.
func markdownMeanings(b *bytes.Buffer, r Report) {
	b.WriteString("## What the numbers mean\n\n")
	b.WriteString("- **needs**: every need of every session, played in order through the unchanged product (`product.Open`, a fresh\n" +
		"  data directory, the replay App Server serving `frozen/" + r.Corpus + "/`). Each module is a throwaway git repository in\n" +
		"  which each pinned version is a commit; a session checks its version out first.\n")
	b.WriteString("- **hits**: needs whose result status is `hit` (exact, coverage, composite or claim hit): answered from certified\n" +
		"  evidence proven fresh for the current source, no worker.\n")
	b.WriteString("- **oracle hits**: needs for which every obligation was answered correctly (by the truth) by an earlier need\n" +
		"  whose citations still hold at the need's version: each cited span's text unchanged, at its lines or at exactly one\n" +
		"  other place of its file, and still true; each cited test still executing the subject. *Hits the oracle does not\n" +
		"  count* are hits on needs the oracle says no earlier answer could serve; each one is either evidence the oracle\n" +
		"  misses or a reuse it should not allow.\n")
	b.WriteString("- **the truth** is the harness's own, by intervention on a copy of each module version (never through\n" +
		"  Needle's code, nor by its rules), computed at corpus generation and pinned by digest (`" + filepath.ToSlash(filepath.Join(r.CorpusDir, "truth")) + "/`).\n" +
		"  A cited span is mapped, by parsing, to the declarations whose name line it holds and within whose lines it lies\n" +
		"  (doc comment in or out, the end one past); the records of those declarations decide. Per kind:\n")
	for _, k := range []string{"implementation_location", "runtime_flow", "focused_tests"} {
		fmt.Fprintf(b, "  - *%s*: %s.\n", k, r.TruthMethods[k])
	}
	b.WriteString("  A case the interventions cannot decide (a mutant that survived, a program that did not show the flag) is\n" +
		"  *unjudged*: counted and listed, never taken as false. The earlier truth — go/types declarations and links, test\n" +
		"  reach by coverage (`" + filepath.ToSlash(filepath.Join(r.CorpusDir, "coverage")) + "/`) — is kept as a second opinion: where it and the\n" +
		"  intervention truth disagree, the case is listed below with both verdicts.\n")
	b.WriteString("- **stale answers returned**: contexts the truth does not judge true at the need's version (a location whose\n" +
		"  deletion leaves the subject as it was, a flow whose steps do not run within one another in its scenario, a test\n" +
		"  that does not exist, fails, or does not fail with the subject broken), contexts it cannot judge, and satisfied\n" +
		"  obligations the context does not cite in a form the harness can judge. Must be 0.\n")
	b.WriteString("- **validation**: every distinct scripted answer goes through Needle's validators (`Propose` on a fresh store, the\n" +
		"  module at the answer's version) and is judged by the truth. A false certified answer is wrong evidence Needle\n" +
		"  would serve as certified: must be 0. Precision is true certified / certified, recall true certified / true.\n")
	b.WriteString("- **naive exact-text cache**: keyed on the raw request text (JSON or marker, task wording included), it returns\n" +
		"  the first answer served for that text, blind to source changes; its stale answers are judged by the same truth.\n")
	b.WriteString("- **worker tokens**: tokens the replayed Codex App Server workers reported (thread token usage), summed from\n" +
		"  the product's worker-run accounting. *No reuse* runs one worker turn per obligation of every need; the *naive\n" +
		"  cache* runs them for every need it does not hit. A scripted worker turn costs 4560 tokens (a file read and an\n" +
		"  answer).\n")
	b.WriteString("- **latency**: wall time of each `NeedContext` call (hits: only needs answered from evidence; exact hits: those\n" +
		"  that re-proved nothing, first asks after a bump aside; first asks after a version bump: hits serving an artifact\n" +
		"  or claim last served at the module's earlier version, read from what the results cite; hits by proof replay:\n" +
		"  those that re-proved evidence whose files changed at need time, which the refresh at the bump leaves to needs\n" +
		"  asked before it finishes). Not deterministic; the counts are.\n\n")
}

// markdownCharts links the chart files written next to the report.
func markdownCharts(b *bytes.Buffer, charts []string) {
	b.WriteString("## Charts\n\n")
	for _, c := range charts {
		fmt.Fprintf(b, "![%s](%s)\n\n", filepath.Base(c), filepath.Base(c))
	}
}

// markdownValidation writes the validators' verdicts against the truth, per kind and per generator class.
func markdownValidation(b *bytes.Buffer, r Report) {
	b.WriteString("## Validation against the truth (every distinct scripted answer)\n\n" +
		"Precision and recall count the answers the truth judged and the validators decided; *unjudged* answers (the\n" +
		"truth could not decide) and *undecided* ones (the validators could not: no sandbox, a missing dependency, a\n" +
		"deadline) are counted apart, never as rejections. Certified answers are split by how the product proved them\n" +
		"(executed: a run of the tests or the scenario; static: the source only) when the product says.\n\n" +
		"| kind | answers | true certified | true rejected | false certified | false rejected | unjudged | undecided | certified executed / static | precision | recall |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range []string{"implementation_location", "runtime_flow", "focused_tests", "all"} {
		v, ok := r.Validation[k]
		if !ok {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | **%d** | %d | %d | %d | %d / %d | %.4f | %.4f |\n", k, v.Answers, v.TrueCertified, v.TrueRejected,
			v.FalseCertified, v.FalseRejected, v.Unjudged, v.Undecided, v.CertifiedExecuted, v.CertifiedStatic, v.Precision, v.Recall)
	}
	if len(r.UnjudgedWhy) > 0 {
		b.WriteString("\nUnjudged answers by reason:")
		for _, k := range slices.Sorted(mapKeys(r.UnjudgedWhy)) {
			fmt.Fprintf(b, " %s %d;", k, r.UnjudgedWhy[k])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\nStale answers returned in the same run: **%d**.\n\n", r.StaleReturned)
	b.WriteString("By the class the generator meant each answer in (the truth decides; a class meant wrong can be right):\n\n" +
		"| class | answers | false by the truth | certified |\n|---|---|---|---|\n")
	for _, k := range slices.Sorted(mapKeys(r.Classes)) {
		c := r.Classes[k]
		fmt.Fprintf(b, "| %s | %d | %d | %d |\n", k, c.Answers, c.False, c.Certified)
	}
	b.WriteString("\n")
}

// markdownBreakdowns writes the count tables (resolution kinds, ledger classes, corpus patterns), the wrong-answer mix and the subjects.
func markdownBreakdowns(b *bytes.Buffer, r Report) {
	b.WriteString("## Resolution kinds\n\n| kind | needs |\n|---|---|\n")
	for _, k := range slices.Sorted(mapKeys(r.ResolutionKinds)) {
		fmt.Fprintf(b, "| %s | %d |\n", k, r.ResolutionKinds[k])
	}
	b.WriteString("\n## Ledger classes (how each need relates to the earlier needs of its session)\n\n| class | needs |\n|---|---|\n")
	for _, k := range slices.Sorted(mapKeys(r.LedgerClasses)) {
		fmt.Fprintf(b, "| %s | %d |\n", k, r.LedgerClasses[k])
	}
	b.WriteString("\n## Corpus patterns\n\nfirst_ask: nobody asked before; repeat: the same request word for word, by another developer later;\n" +
		"reworded: the same need, another task wording; marker: the same need as a `@@need` line; extension: adds\n" +
		"obligations to an earlier need of the session; residual: asks only what an earlier need left missing;\n" +
		"across_bump: asked before the version bump, asked again after it; new_after_bump: a first ask on the newer version.\n\n" +
		"| pattern | needs | hits |\n|---|---|---|\n")
	for _, k := range slices.Sorted(mapKeys(r.Patterns)) {
		fmt.Fprintf(b, "| %s | %d | %d |\n", k, r.Patterns[k].Needs, r.Patterns[k].Hits)
	}
	fmt.Fprintf(b, "\nScripted worker answers: %d, of which the generator meant %.1f%% to be wrong:", r.Wrong.Answer, 100*r.Wrong.Rate)
	for _, k := range slices.Sorted(mapKeys(r.Wrong.Kinds)) {
		fmt.Fprintf(b, " %s %d;", k, r.Wrong.Kinds[k])
	}
	b.WriteString(" every answer the truth judges false must be rejected by Needle's validators, never served.\n\n## Subjects\n\n")
	for _, s := range r.Subjects {
		var vs []string
		for _, v := range s.Versions {
			vs = append(vs, v.Version)
		}
		fmt.Fprintf(b, "- `%s` %s\n", s.Module, strings.Join(vs, " → "))
	}
}

// markdownFailureLists lists the needs and answers that went wrong or could not be decided, one section each when any.
func markdownFailureLists(b *bytes.Buffer, r Report) {
	if len(r.StaleNeeds) > 0 {
		fmt.Fprintf(b, "\n## Stale answers (must not happen)\n\n- %s\n", strings.Join(r.StaleNeeds, "\n- "))
	}
	if len(r.FalseCertified) > 0 {
		fmt.Fprintf(b, "\n## False answers certified (must not happen)\n\n- %s\n", strings.Join(r.FalseCertified, "\n- "))
	}
	if len(r.TrueRejected) > 0 {
		fmt.Fprintf(b, "\n## True answers rejected\n\n- %s\n", strings.Join(r.TrueRejected, "\n- "))
	}
	if len(r.Undecided) > 0 {
		fmt.Fprintf(b, "\n## Answers the validators could not decide\n\n- %s\n", strings.Join(r.Undecided, "\n- "))
	}
	if len(r.Unjudged) > 0 {
		fmt.Fprintf(b, "\n## Answers the truth could not judge\n\n- %s\n", strings.Join(r.Unjudged, "\n- "))
	}
	if len(r.CoverageDisagreements) > 0 {
		fmt.Fprintf(b, "\n## Where the coverage truth and the intervention truth disagree\n\n- %s\n", strings.Join(r.CoverageDisagreements, "\n- "))
	}
}

// ExperimentReport is reports/<experiment>.json: latency quantiles of the
// methods an experiment timed in one run.
type ExperimentReport struct {
	Experiment string               `json:"experiment"`
	Setup      string               `json:"setup"`
	Calls      int                  `json:"calls"`
	Methods    map[string]Quantiles `json:"methods_ms"`
	// Sessions is how many MCP sessions the calls were spread over, and
	// ExactHits how many timed need_context answers were verified to be
	// exact hits (the contract microbenchmark; 0 and left out otherwise).
	Sessions  int `json:"sessions,omitempty"`
	ExactHits int `json:"exact_hits,omitempty"`
}

// writeExperiment writes <dir>/<experiment>.json and .md.
func writeExperiment(dir string, r ExperimentReport) ([]string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# needlebench experiment `%s`\n\n%s; %d calls per method, latency of each round trip in\n", r.Experiment, r.Setup, r.Calls)
	b.WriteString("milliseconds (empirical quantiles, gonum/stat). Latencies depend on the machine and are not deterministic.\n\n")
	b.WriteString("| method | p50 | p95 | p99 | max |\n|---|---|---|---|---|\n")
	for _, m := range slices.Sorted(mapKeys(r.Methods)) {
		q := r.Methods[m]
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f |\n", m, q.P50, q.P95, q.P99, q.Max)
	}
	if r.Sessions > 0 {
		fmt.Fprintf(&b, "\nThe calls were spread over %d MCP sessions (opening one is not timed); %d of the timed need_context answers were verified exact hits.\n",
			r.Sessions, r.ExactHits)
	}
	return writeJSONAndMarkdown(dir, r.Experiment, r, b.Bytes())
}

// writeJSONAndMarkdown writes v as <dir>/<name>.json (indented) and md as
// <dir>/<name>.md, making dir, and returns the two paths.
func writeJSONAndMarkdown(dir, name string, v any, md []byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, name)
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".md", md, 0o644); err != nil {
		return nil, err
	}
	return []string{base + ".json", base + ".md"}, nil
}
