package bench

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strings"
)

// Judging a citation with the intervention truth (itruth.go): a cited
// span is mapped to the declarations it cites by parsing the file at the
// version judged (units.go), and the records of those declarations say
// whether breaking them changed the subject.

// tv is a truth value: true, false, or unjudged (the interventions could
// not decide: a surviving mutant, a probe that saw nothing).
type tv int8

const (
	tvFalse tv = iota
	tvTrue
	tvUnjudged
)

func (v tv) String() string { return [...]string{verdictFalse, verdictTrue, verdictUnjudged}[v] }

func tvOf(s string) tv {
	switch s {
	case verdictTrue:
		return tvTrue
	case verdictFalse:
		return tvFalse
	}
	return tvUnjudged
}

// judgement is a verdict and why.
type judgement struct {
	V   tv
	Why string
}

func jTrue() judgement                    { return judgement{V: tvTrue} }
func jFalse(f string, a ...any) judgement { return judgement{V: tvFalse, Why: fmt.Sprintf(f, a...)} }
func jUnjudged(f string, a ...any) judgement {
	return judgement{V: tvUnjudged, Why: "unjudged: " + fmt.Sprintf(f, a...)}
}

// itruth is a loaded intervention truth, indexed.
type itruth struct {
	d     *TruthData
	t     tree
	units map[string][]unit
	cov   *reach // the unmutated outcomes
	loc   map[string]LocationCase
	probe map[string]FlagProbe
	sites map[string][]FlagSite
	hit   map[string]ReachCase
	files map[string]TestFileCase
	fn    map[string]int // path:head:name → function index
	scen  map[string]ScenarioSpec
}

func unitRef(u unit) string { return fmt.Sprintf("%s:%d:%s", u.Path, u.Head, u.Name) }

func newITruth(d *TruthData, t tree, cov *reach) *itruth {
	it := &itruth{d: d, t: t, units: treeUnits(t), cov: cov, loc: map[string]LocationCase{}, probe: map[string]FlagProbe{},
		sites: map[string][]FlagSite{}, hit: map[string]ReachCase{}, files: map[string]TestFileCase{}, fn: map[string]int{}, scen: map[string]ScenarioSpec{}}
	for _, f := range d.TestFiles {
		it.files[f.Path] = f
	}
	for _, l := range d.Locations {
		it.loc[l.Subject+"\x00"+unitRef(d.Units[l.Unit])] = l
	}
	for _, p := range d.Probes {
		it.probe[p.Subject] = p
	}
	for _, s := range d.Sites {
		it.sites[s.Subject] = append(it.sites[s.Subject], s)
	}
	for _, r := range d.Reach {
		it.hit[r.Subject+"\x00"+r.Dir+"\x00"+r.Test] = r
	}
	for i, u := range d.Functions {
		it.fn[unitRef(d.Units[u])] = i
	}
	for _, s := range d.Scenarios {
		it.scen[s.Scenario] = s
	}
	return it
}

func subjectKey(s subject) string { return s.Kind + ":" + s.Name }

// span checks a cited span: a path of the module, lines of the file.
func (it *itruth) span(p string, start, end int) (string, judgement) {
	c, ok := cleanPath(p)
	if !ok {
		return "", jFalse("path %q is not a path in the module", p)
	}
	src, ok := it.t[c]
	if !ok || start < 1 || start > end || end > lineCount(src) {
		return "", jFalse("%s:%d-%d is not a span of a file of the module", c, start, end)
	}
	return c, jTrue()
}

// location judges an implementation_location.
func (it *itruth) location(s subject, p string, start, end int) judgement {
	c, j := it.span(p, start, end)
	if j.V != tvTrue {
		return j
	}
	switch s.Kind {
	case "symbol":
		us := unitsAt(it.units[c], start, end)
		if len(us) == 0 {
			return jFalse("%s:%d-%d cites no declaration (its lines must hold one's name and lie within it, doc comment in or out, the end at most one past)", c, start, end)
		}
		out := judgement{V: tvFalse}
		for _, u := range us {
			lc, ok := it.loc[subjectKey(s)+"\x00"+unitRef(u)]
			switch {
			case !ok:
				out = jUnjudged("no intervention deleted %s (%s:%d) for %s", u.Name, u.Path, u.Head, s.Name)
			case lc.Verdict == verdictTrue:
				return jTrue()
			case lc.Verdict == verdictUnjudged:
				out = jUnjudged("%s", lc.Why)
			case out.V == tvFalse:
				out.Why = lc.Why
			}
		}
		return out
	case "cli_option":
		return it.flagAt(s, c, start, end)
	}
	return jUnjudged("locations of a %s are not judged", s.Kind)
}

// flagAt judges a span citing a flag's definition: it lies within one
// declaration of a non-test file and holds a site whose renaming renames
// the flag.
func (it *itruth) flagAt(s subject, c string, start, end int) judgement {
	if strings.HasSuffix(c, "_test.go") {
		return jFalse("%s is a test file: no program's parser takes its flags from it", c)
	}
	if !slices.ContainsFunc(it.units[c], func(u unit) bool { return start >= u.Doc && end <= u.End+1 && start <= u.End }) {
		return jFalse("%s:%d-%d lies within no declaration", c, start, end)
	}
	pr, ok := it.probe[subjectKey(s)]
	switch {
	case !ok:
		return jUnjudged("no intervention on %s", s.Name)
	case pr.Program == "":
		return jUnjudged("%s", pr.Why)
	case !slices.Contains(pr.Files, c):
		return jUnjudged("no site of %s in %s was renamed", s.Name, c)
	}
	out := jFalse("renaming %s anywhere in %s:%d-%d leaves the flag as it was", s.Name, c, start, end)
	for _, site := range it.sites[subjectKey(s)] {
		if site.Path != c || site.Line < start || site.Line > end {
			continue
		}
		switch site.Verdict {
		case verdictTrue:
			return jTrue()
		case verdictUnjudged:
			out = jUnjudged("%s", site.Why)
		}
	}
	return out
}

// stepFunction is the function a flow step lies in, and its trace index.
func (it *itruth) stepFunction(i int, st span) (int, judgement) {
	c, j := it.span(st.Path, st.Start, st.End)
	if j.V != tvTrue {
		j.Why = fmt.Sprintf("step %d: %s", i+1, j.Why)
		return 0, j
	}
	u, ok := funcUnitAt(it.units[c], st.Start, st.End)
	if !ok {
		return 0, jFalse("step %d (%s:%d-%d) lies in no function", i+1, c, st.Start, st.End)
	}
	n, ok := it.fn[unitRef(u)]
	if !ok {
		return 0, jUnjudged("step %d: %s was not instrumented", i+1, u.Name)
	}
	return n, jTrue()
}

// scenarioRuns are the runs of a scenario as written.
func (it *itruth) scenarioRuns(scenario string) ([]TraceRun, judgement) {
	spec, ok := it.scen[scenario]
	if !ok && (scenario == "" || scenario == "default") {
		spec, ok = ScenarioSpec{Scenario: scenario, Kind: "tests"}, true
	}
	if !ok {
		return nil, jUnjudged("the truth ran no scenario %q", scenario)
	}
	var runs []TraceRun
	for _, r := range it.d.Runs {
		switch {
		case spec.Kind == "tests" && r.Test != "" && !strings.Contains(r.Test, "/"),
			spec.Kind == "test" && r.Dir == spec.Dir && r.Test == spec.Test,
			spec.Kind == "command" && r.Scenario == scenario:
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 && spec.Kind != "tests" {
		return nil, jUnjudged("scenario %q has no recorded run", scenario)
	}
	return runs, jTrue()
}

// flow judges a runtime_flow in its scenario.
func (it *itruth) flow(s subject, scenario string, steps []span) judgement {
	if len(steps) == 0 {
		return jFalse("no steps")
	}
	if j := it.location(s, steps[0].Path, steps[0].Start, steps[0].End); j.V != tvTrue {
		j.Why = "step 1: " + j.Why
		return j
	}
	var fns []int
	for i, st := range steps {
		n, j := it.stepFunction(i, st)
		if j.V != tvTrue {
			return j
		}
		if len(fns) == 0 || fns[len(fns)-1] != n {
			fns = append(fns, n)
		}
	}
	runs, j := it.scenarioRuns(scenario)
	if j.V != tvTrue {
		return j
	}
	cut := false
	for _, r := range runs {
		if nested(r.Entries, fns) {
			return jTrue()
		}
		cut = cut || (r.Cut && it.couldShow(r, fns))
	}
	if cut {
		return jUnjudged("the steps do not fire in order within the recorded part of scenario %q", scenario)
	}
	return jFalse("no run of scenario %q enters the steps in order, each within the one before", scenarioName(scenario))
}

// couldShow reports whether a run whose trace was cut could show the flow
// of the functions fns after the cut: unless the coverage of the same test,
// run unmutated, shows that it never executed one of them beyond package
// initialization (whose events come first, in the recorded part). A
// function without statements is never counted: it decides nothing.
func (it *itruth) couldShow(r TraceRun, fns []int) bool {
	if r.Test == "" {
		return true
	}
	run, ok := it.cov.run(r.Dir, r.Test)
	if !ok {
		return true
	}
	for _, f := range fns {
		u := it.d.Units[it.d.Functions[f]]
		if hasStatements(it.t[u.Path], u) && !it.cov.executed(run, u.key()) {
			return false
		}
	}
	return true
}

// hasStatements reports whether the body of the function u of src holds a
// statement (that coverage can count).
func hasStatements(src []byte, u unit) bool {
	if u.lbrace < 0 || u.rbrace > len(src) {
		return false
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return true
	}
	found := true
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && int(fd.Body.Lbrace)-int(f.FileStart) == u.lbrace {
			found = len(fd.Body.List) > 0
		}
	}
	return found
}

func scenarioName(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// nested reports whether a run's events (i entered, -i-1 left) enter the
// functions of want in order, each while the ones before it are running:
// at an entry of the last, the functions running hold the others in
// order.
func nested(events, want []int) bool {
	if len(want) == 0 {
		return true
	}
	var stack []int
	last := want[len(want)-1]
	for _, e := range events {
		if e < 0 {
			id := -e - 1
			if i := slices.Index(stack, id); i >= 0 {
				j := len(stack) - 1 - slices.Index(reversed(stack), id)
				stack = slices.Delete(stack, j, j+1)
			}
			continue
		}
		if e == last && subsequence(stack, want[:len(want)-1]) {
			return true
		}
		stack = append(stack, e)
	}
	return false
}

func reversed(s []int) []int {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// subsequence reports whether want occurs in order within seq.
func subsequence(seq, want []int) bool {
	i := 0
	for _, x := range seq {
		if i < len(want) && x == want[i] {
			i++
		}
	}
	return i == len(want)
}

// testDeclared reports whether the _test.go file src declares func
// name(*testing.T).
func testDeclared(src []byte, name string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name && isTestFunc(fd) {
			return true
		}
	}
	return false
}

// test judges one cited test.
func (it *itruth) test(s subject, p, name string) judgement {
	c, ok := cleanPath(p)
	if !ok || !strings.HasSuffix(c, "_test.go") {
		return jFalse("%q is not a _test.go file of the module", p)
	}
	top, _, _ := strings.Cut(name, "/")
	if src, ok := it.t[c]; !ok || !testDeclared(src, top) {
		return jFalse("%s declares no test %s", c, top)
	}
	// The test the package runs under that name must be the cited file's:
	// a file the build leaves out runs nothing, whatever another file
	// declares under the same name.
	switch f, ok := it.files[c]; {
	case !ok:
		return jUnjudged("no intervention showed whether the test binary compiles %s", c)
	case f.Verdict != verdictTrue:
		return judgement{V: tvOf(f.Verdict), Why: prefixUnjudged(f.Verdict, f.Why)}
	}
	dir := path.Dir(c)
	run, ok := it.cov.run(dir, name)
	if !ok {
		if why := it.cov.neverRan(dir, name); why != "" {
			return jFalse("%s", why)
		}
		return jUnjudged("%s in %s has no recorded run", name, dir)
	}
	if run.Outcome != "pass" {
		// The recorded outcome is of a run under coverage instrumentation;
		// a test that re-executes its own binary (testscript's RunMain)
		// may fail there only, on the coverage tool's warnings. A run of
		// the truth's without coverage that passed disputes it.
		if it.passedUninstrumented(dir, name) {
			return jUnjudged("%s fails under coverage (%s) and passes without it", name, run.Outcome)
		}
		return jFalse("%s does not pass unmutated (%s)", name, run.Outcome)
	}
	rc, ok := it.hit[subjectKey(s)+"\x00"+dir+"\x00"+name]
	if !ok {
		return jUnjudged("no intervention ran %s with %s broken", name, s.Name)
	}
	return judgement{V: tvOf(rc.Verdict), Why: prefixUnjudged(rc.Verdict, rc.Why)}
}

// passedUninstrumented reports whether the truth's traced runs (no
// coverage) include a passing run of the test name in dir.
func (it *itruth) passedUninstrumented(dir, name string) bool {
	for _, r := range it.d.Runs {
		if r.Dir == dir && r.Test == name && r.Outcome == "pass" {
			return true
		}
	}
	return false
}

func prefixUnjudged(v, why string) string {
	if v == verdictUnjudged {
		return "unjudged: " + why
	}
	if v == verdictTrue {
		return ""
	}
	return why
}

// answer judges a scripted proposal about s.
func (it *itruth) answer(s subject, raw []byte) judgement {
	p, err := decodeProposal(raw)
	if err != nil {
		return jFalse("not a proposal: %v", err)
	}
	if p.Subject != s {
		return jFalse("about %s %q, not the subject", p.Subject.Kind, p.Subject.Name)
	}
	return it.citations(s, proposalCitations(raw))
}

// citations judges what an answer or a context cites: every citation must
// hold; one false makes the whole false, else one unjudged unjudged.
func (it *itruth) citations(s subject, cs []citation) judgement {
	if len(cs) == 0 {
		return jFalse("cites nothing")
	}
	out := jTrue()
	for _, c := range cs {
		var j judgement
		switch c.kind {
		case "implementation_location":
			j = it.location(s, c.loc.Path, c.loc.Start, c.loc.End)
		case "runtime_flow":
			j = it.flow(s, c.scenario, c.steps)
		case "focused_tests":
			j = jFalse("no tests")
			for i, ref := range c.tests {
				tj := it.test(s, ref.path, ref.name)
				if i == 0 || tj.V == tvFalse || (tj.V == tvUnjudged && j.V == tvTrue) {
					j = tj
				}
				if j.V == tvFalse {
					break
				}
			}
		default:
			j = jFalse("unknown kind %q", c.kind)
		}
		j.Why = c.kind + ": " + j.Why
		switch {
		case j.V == tvFalse:
			return j
		case j.V == tvUnjudged:
			out = j
		}
	}
	return out
}
