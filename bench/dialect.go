package bench

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strings"
)

// The natural dialect: scripted answers written the way models write them,
// right and wrong. Each writer is a function of its random source, so a
// corpus is a function of its seed; whether an answer is right is decided
// afterwards by the truth, never by what the writer meant.
//
// Right answers vary the way real ones do: paths with or without "./",
// spans with or without the doc comment and with the end line inclusive
// or one past, a flag located at its defining call or by the function that
// holds it (its name a literal or a constant), flows through resolved
// calls for "default" or a scenario in prose ("the test suite"), a flow
// through a function value (urfave/cli's ShowAppHelp calls HelpPrinter,
// which holds printHelp) for the test that takes it, named as models name
// it ("TestX", "TestX()", "go test -run '^TestX$' .", "running TestX"),
// tests named as top-level tests or subtests, and run commands in
// every shape editors and models print (-run TestX ., ./... -run TestX,
// -run '^TestX$' ./, -v, -run=TestX, -count=1, double quotes, the import
// path, -timeout 30s).
//
// Wrong answers come in classes: for locations shifted_lines, neighbour
// (the next declaration of the file), missing_file, older_version (the
// answer from before the version bump), same_name (a field, type or
// function of the same name that is not the subject) and use_not_definition
// (for a flag: a line where its name is only used — a constant's
// declaration, a look-up, a subcommand, a test passing it); for flows
// linked_by_name (the next step a function merely named like the callee),
// unlinked_step (a step nothing calls), conditional_step (every call is
// there, but the named test does not take the branch that makes the last
// one), shifted_lines, missing_file and older_version; for tests
// static_only (a test whose resolved calls lead to the subject but whose
// run never executes it: an early return, a closure never called, a branch
// not taken), names_only (a test that mentions the subject's name but
// never executes it), near (a test that executes other code of the
// subject's file), one_not_executed (a right test listed with a wrong
// one), failing_test (a test that runs the subject and fails as the module
// is), build_excluded (a test of a _test.go file a build constraint leaves
// out, go-isatty's isatty_windows_test.go, though another file declares a
// test of that name that runs) and missing_file.

// wrongClasses are the wrong answers each capability kind is given, the
// classes today's models fall into most often (and validators miss most
// easily) listed more than once: a class is drawn in proportion.
var wrongClasses = map[string][]string{
	"implementation_location": {"same_name", "shifted_lines", "use_not_definition", "neighbour", "same_name", "missing_file", "use_not_definition"},
	"runtime_flow":            {"linked_by_name", "unlinked_step", "conditional_step", "shifted_lines", "linked_by_name", "missing_file", "conditional_step"},
	"focused_tests":           {"static_only", "names_only", "one_not_executed", "failing_test", "near", "names_only", "missing_file", "one_not_executed", "build_excluded"},
}

// writer writes the scripted answers of one module version.
type writer struct {
	rng    *rand.Rand
	t      *truth
	module string
	old    *truth // the version before the bump, for older_version; nil if none
	// scenarios registers the runs the flows' scenarios name, by module
	// and scenario as written (register).
	scenarios map[string]ScenarioSpec
}

// register records the run a flow's scenario names, for the truth.
func (w *writer) register(spec ScenarioSpec) {
	if w.scenarios != nil {
		w.scenarios[w.module+"\x00"+spec.Scenario] = spec
	}
}

// proseTests are scenarios written in prose that mean any test of the
// module.
var proseTests = []string{"when the user runs the tests", "the test suite", "go test ./..."}

// scenario picks how a right flow names its scenario: "default" mostly,
// else prose meaning the same.
func (w *writer) scenario() string {
	if w.rng.IntN(3) > 0 || w.scenarios == nil {
		return "default"
	}
	s := proseTests[w.rng.IntN(len(proseTests))]
	w.register(ScenarioSpec{Scenario: s, Kind: "tests"})
	return s
}

// testScenario is a named test as a model writes it for a flow's
// scenario: the name, with its parentheses, or the command that runs it.
func (w *writer) testScenario(t citedTest) string {
	dir := path.Dir(t.decl.Path)
	rel := "."
	if dir != "." {
		rel = "./" + dir
	}
	forms := []string{t.name, t.name + "()", fmt.Sprintf("go test -run '^%s$' %s", t.name, rel), "running " + t.name}
	s := forms[w.rng.IntN(len(forms))]
	w.register(ScenarioSpec{Scenario: s, Kind: "test", Dir: dir, Test: t.name})
	return s
}

// conditional returns a passing test that runs the function of step a
// but not the function of step b (by its recorded coverage): a scenario
// in which a flow from a to b does not happen although a calls b.
func (w *writer) conditional(a, b span) (citedTest, bool) {
	fa, okA := w.t.prog.enclosing(a.Path, a.Start+(a.End-a.Start)/2)
	fb, okB := w.t.prog.enclosing(b.Path, b.Start+(b.End-b.Start)/2)
	if !okA || !okB {
		return citedTest{}, false
	}
	for _, td := range w.t.prog.tests {
		run, ok := w.t.reach.run(path.Dir(td.Path), td.Name)
		if ok && run.Outcome == "pass" && w.t.reach.executed(run, fa.Path+"#"+fa.Name) && !w.t.reach.executed(run, fb.Path+"#"+fb.Name) {
			return citedTest{decl: td, name: td.Name}, true
		}
	}
	return citedTest{}, false
}

// cite is a path as a model writes it: sometimes with "./".
func (w *writer) cite(p string) string {
	if w.rng.IntN(10) < 3 {
		return "./" + p
	}
	return p
}

// natural returns a span of d as models cite declarations: with or without
// the doc comment, the end line inclusive or one past.
func (w *writer) natural(d decl) span {
	s := span{Path: d.Path, Start: d.Start, End: d.End}
	switch w.rng.IntN(4) {
	case 1:
		s.Start = d.Doc
	case 2:
		s.End = d.End + 1
	case 3:
		s.Start, s.End = d.Doc, d.End+1
	}
	if s.End > lineCount(w.t.prog.t[d.Path]) {
		s.End = d.End
	}
	return s
}

// flagSpan is where a model locates a flag: the defining call, a line of
// context around it, or the function that holds it.
func (w *writer) flagSpan(f flagDef) span {
	s := span{Path: f.Path, Start: f.Start, End: f.End}
	switch w.rng.IntN(3) {
	case 1:
		s.Start, s.End = max(f.Start-1, 1), min(f.End+1, lineCount(w.t.prog.t[f.Path]))
	case 2:
		if d, ok := w.t.prog.enclosing(f.Path, f.Line); ok {
			s = span{Path: d.Path, Start: d.Doc, End: d.End}
		}
	}
	return s
}

// subjectSpan is a right location of the subject, or false when it has
// none at this version.
func (w *writer) subjectSpan(s subject) (span, bool) {
	if s.Kind == "cli_option" {
		defs := w.t.flagDefs(s.Name)
		if len(defs) == 0 {
			return span{}, false
		}
		return w.flagSpan(defs[w.rng.IntN(len(defs))]), true
	}
	d, ok := w.t.symbol(s.Name)
	if !ok {
		return span{}, false
	}
	return w.natural(d), true
}

// anchorLine is the line that declares the subject within sp (its name, a
// definition's name argument).
func (w *writer) anchorLine(s subject, sp span) int {
	for _, a := range w.t.anchors(s) {
		if a.path == sp.Path && sp.Start <= a.line && a.line <= sp.End {
			return a.line
		}
	}
	return sp.Start
}

func (w *writer) proposal(kind string, s subject, fields map[string]any) json.RawMessage {
	m := map[string]any{"kind": kind, "subject": s}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// missingPath is a file a model might guess that the module does not have.
func (w *writer) missingPath(near string) string {
	dir, base := path.Split(near)
	base = strings.TrimSuffix(base, ".go")
	for _, suffix := range []string{"_impl.go", "s.go", "_util.go", "_flags.go"} {
		p := dir + strings.TrimSuffix(base, "_test") + suffix
		if strings.HasSuffix(base, "_test") {
			p = dir + strings.TrimSuffix(base, "_test") + strings.TrimSuffix(suffix, ".go") + "_test.go"
		}
		if _, ok := w.t.prog.t[p]; !ok {
			return p
		}
	}
	return dir + "needle_missing.go"
}

// location writes an implementation_location answer, wrong the way asked
// (if it can be; the class it really is returned).
func (w *writer) location(s subject, wrong string) (json.RawMessage, string) {
	sp, ok := w.subjectSpan(s)
	if !ok {
		return w.proposal("implementation_location", s, map[string]any{"path": w.missingPath(""), "start_line": 1, "end_line": 20}), "missing_file"
	}
	switch wrong {
	case "shifted_lines":
		k := w.anchorLine(s, sp) - sp.Start + 1 + w.rng.IntN(3)
		sp.Start, sp.End = sp.Start+k, sp.End+k
	case "neighbour":
		if nb, ok := w.neighbour(sp); ok {
			sp = w.natural(nb)
		} else {
			return w.location(s, "shifted_lines")
		}
	case "missing_file":
		sp.Path = w.missingPath(sp.Path)
	case "older_version":
		if w.old == nil {
			return w.location(s, "")
		}
		if len(w.old.anchors(s)) == 0 {
			return w.location(s, "")
		}
		p, _ := (&writer{rng: w.rng, t: w.old, module: w.module}).location(s, "")
		return p, wrong
	case "same_name":
		if d, ok := w.sameName(s); ok {
			sp = w.natural(d)
		} else {
			return w.location(s, "neighbour")
		}
	case "use_not_definition":
		if u, ok := w.useOnly(s); ok {
			sp = span{Path: u.Path, Start: max(u.Line-1, 1), End: min(u.Line+1, lineCount(w.t.prog.t[u.Path]))}
		} else {
			return w.location(s, "same_name")
		}
	}
	return w.proposal("implementation_location", s, map[string]any{"path": w.cite(sp.Path), "start_line": sp.Start, "end_line": sp.End}), wrong
}

// neighbour is the declaration after the one at sp in its file (or the one
// before, for the last).
func (w *writer) neighbour(sp span) (decl, bool) {
	var same []decl
	for _, d := range w.t.prog.decls {
		if d.Path == sp.Path && !d.Test && (d.Kind == "func" || d.Kind == "method") && (d.End < sp.Start || d.Start > sp.End) {
			same = append(same, d)
		}
	}
	if len(same) == 0 {
		return decl{}, false
	}
	for _, d := range same {
		if d.Start > sp.End {
			return d, true
		}
	}
	return same[len(same)-1], true
}

// sameName is another declaration named like the subject: a field, a
// type, a method of another type or a function of another package. For a
// flag, a function or method named like the flag.
func (w *writer) sameName(s subject) (decl, bool) {
	want, self := lastName(s.Name), decl{}
	if s.Kind == "cli_option" {
		want = flagName(s.Name)
	} else {
		self, _ = w.t.symbol(s.Name)
	}
	var found []decl
	for _, d := range w.t.prog.decls {
		if d.Test || !strings.EqualFold(lastName(d.Name), want) || (d.Path == self.Path && d.Line == self.Line) {
			continue
		}
		found = append(found, d)
	}
	if len(found) == 0 {
		return decl{}, false
	}
	// Prefer what is most easily confused: a field or a type first.
	slices.SortStableFunc(found, func(a, b decl) int { return kindRank(a.Kind) - kindRank(b.Kind) })
	return found[0], true
}

func kindRank(k string) int { return map[string]int{"field": 0, "type": 1, "method": 2, "func": 3}[k] }

// useOnly is a line where a flag's name is a string constant that is no
// definition's name argument, outside the definitions' calls.
func (w *writer) useOnly(s subject) (use, bool) {
	if s.Kind != "cli_option" {
		return use{}, false
	}
	name := flagName(s.Name)
	// Every definition is left out, a test's own FlagSet's too: its name
	// argument defines a flag.
	defs := slices.DeleteFunc(slices.Clone(w.t.prog.flags), func(f flagDef) bool { return f.Name != name })
	var found []use
	for _, u := range w.t.prog.uses {
		if u.Value != name && u.Value != "-"+name && u.Value != "--"+name {
			continue
		}
		if slices.ContainsFunc(defs, func(f flagDef) bool { return f.Path == u.Path && f.Start-1 <= u.Line && u.Line <= f.End+1 }) {
			continue
		}
		found = append(found, u)
	}
	if len(found) == 0 {
		return use{}, false
	}
	return found[w.rng.IntN(len(found))], true
}

// flowSteps returns a right flow: the subject's span, then up to two
// functions each step calls.
func (w *writer) flowSteps(s subject) ([]span, bool) {
	first, ok := w.flowStart(s)
	if !ok {
		return nil, false
	}
	steps := []span{first}
	for len(steps) < 3 {
		last := steps[len(steps)-1]
		next := w.t.prog.callees(last.Path, last.Start, last.End)
		next = slices.DeleteFunc(next, func(d decl) bool {
			return slices.ContainsFunc(steps, func(s span) bool { return s.Path == d.Path && s.Start <= d.Line && d.Line <= s.End })
		})
		if len(next) == 0 || (len(steps) == 2 && w.rng.IntN(2) == 0) {
			break
		}
		steps = append(steps, w.natural(next[w.rng.IntN(len(next))]))
	}
	return steps, len(steps) >= 2
}

// flowStart is the first step of a flow about s: the subject's declaration,
// or the function holding a flag's definition.
func (w *writer) flowStart(s subject) (span, bool) {
	if s.Kind == "cli_option" {
		defs := w.t.flagDefs(s.Name)
		if len(defs) == 0 {
			return span{}, false
		}
		f := defs[0]
		if d, ok := w.t.prog.enclosing(f.Path, f.Line); ok {
			return w.natural(d), true
		}
		return span{Path: f.Path, Start: f.Start, End: f.End}, true
	}
	d, ok := w.t.symbol(s.Name)
	if !ok {
		return span{}, false
	}
	return w.natural(d), true
}

// valueFlow is a flow of s through a function value: the subject's
// declaration, a function that a variable or field it calls holds (urfave/
// cli's ShowAppHelp calls HelpPrinter, which holds printHelp), then, when
// there is one, a function that one calls by either way; and a passing test
// whose recorded coverage executed every step's function, the scenario
// that takes it. ok is false when the subject has none.
func (w *writer) valueFlow(s subject) ([]decl, citedTest, bool) {
	if s.Kind != "symbol" {
		return nil, citedTest{}, false
	}
	d, ok := w.t.symbol(s.Name)
	if !ok {
		return nil, citedTest{}, false
	}
	var best []decl
	var bestTest citedTest
	for _, t1 := range w.t.prog.valueCallees(d.Path, d.Start, d.End) {
		if t1.Path == d.Path && t1.Line == d.Line {
			continue
		}
		chains := [][]decl{}
		for _, t2 := range append(w.t.prog.valueCallees(t1.Path, t1.Start, t1.End), w.t.prog.callees(t1.Path, t1.Start, t1.End)...) {
			if (t2.Path != d.Path || t2.Line != d.Line) && (t2.Path != t1.Path || t2.Line != t1.Line) {
				chains = append(chains, []decl{d, t1, t2})
			}
		}
		chains = append(chains, []decl{d, t1})
		for _, chain := range chains {
			if len(chain) <= len(best) {
				continue
			}
			if t, ok := w.executingAll(chain); ok {
				best, bestTest = chain, t
			}
		}
	}
	return best, bestTest, len(best) >= 2
}

// executingAll returns a passing top-level test whose recorded coverage
// executed every function of ds, the one a model would name: in the
// package of ds[0], named after it, first in file order.
func (w *writer) executingAll(ds []decl) (citedTest, bool) {
	var best citedTest
	bestRank := -1
	for _, td := range w.t.prog.tests {
		run, ok := w.t.reach.run(path.Dir(td.Path), td.Name)
		if !ok || run.Outcome != "pass" {
			continue
		}
		if slices.ContainsFunc(ds, func(d decl) bool { return !w.t.reach.executed(run, d.Path+"#"+d.Name) }) {
			continue
		}
		if r := testRank(td, ds[0]); r > bestRank {
			best, bestRank = citedTest{decl: td, name: td.Name}, r
		}
	}
	return best, bestRank >= 0
}

// testRank is how readily a model names td for a flow from d: a test of
// d's package, and one named after d.
func testRank(td testDecl, d decl) int {
	r := 0
	if path.Dir(td.Path) == path.Dir(d.Path) {
		r += 2
	}
	if strings.Contains(td.Name, lastName(d.Name)) {
		r++
	}
	return r
}

// valueRank orders the subjects with a flow through a function value: a
// flow a test named after the subject takes, in the subject's package,
// whose steps lie in one file (ShowAppHelp → printHelp → printHelpCustom
// in urfave/cli's help.go), with more steps, first.
func (w *writer) valueRank(s subject) int {
	chain, test, ok := w.valueFlow(s)
	if !ok {
		return -1
	}
	r := 10*testRank(test.decl, chain[0]) + len(chain)
	if !slices.ContainsFunc(chain, func(d decl) bool { return d.Path != chain[0].Path }) {
		r += 5
	}
	return r
}

// flow writes a runtime_flow answer.
func (w *writer) flow(s subject, wrong string) (json.RawMessage, string) {
	if chain, test, ok := w.valueFlow(s); ok {
		var steps []span
		for _, d := range chain {
			steps = append(steps, w.natural(d))
		}
		return w.flowOf(s, steps, wrong, w.testScenario(test))
	}
	steps, ok := w.flowSteps(s)
	if !ok {
		first, ok := w.flowStart(s)
		if !ok {
			return w.proposal("runtime_flow", s, map[string]any{"scenario": "default", "steps": []any{
				map[string]any{"path": w.missingPath(""), "start_line": 1, "end_line": 10, "summary": "Handles " + s.Name + "."}}}), "missing_file"
		}
		steps = []span{first}
	}
	scenario := "default"
	if wrong == "" {
		scenario = w.scenario()
	}
	return w.flowOf(s, steps, wrong, scenario)
}

// flowOf writes a runtime_flow answer from right steps and a scenario,
// made wrong the way asked (if it can be; the class it really is returned).
func (w *writer) flowOf(s subject, steps []span, wrong, scenario string) (json.RawMessage, string) {
	switch wrong {
	case "conditional_step":
		// Every call exists, but the named scenario, a test, does not take
		// the branch that makes the last one.
		if len(steps) < 2 {
			return w.flow(s, "unlinked_step")
		}
		test, ok := w.conditional(steps[len(steps)-2], steps[len(steps)-1])
		if !ok {
			return w.flow(s, "unlinked_step")
		}
		scenario = test.name
		w.register(ScenarioSpec{Scenario: scenario, Kind: "test", Dir: path.Dir(test.decl.Path), Test: test.name})
	case "linked_by_name":
		// After some step, a function merely named like one the step calls.
		linked := false
		for k := range steps {
			cands := w.t.prog.sameNameOnly(steps[k].Path, steps[k].Start, steps[k].End)
			if len(cands) > 0 {
				steps = append(steps[:k+1], w.natural(cands[w.rng.IntN(len(cands))]))
				linked = true
				break
			}
		}
		if !linked {
			return w.flow(s, "unlinked_step")
		}
	case "unlinked_step":
		called := w.t.prog.callees(steps[0].Path, steps[0].Start, steps[0].End)
		nb, ok := w.neighbour(steps[0])
		if !ok || slices.ContainsFunc(called, func(d decl) bool { return d.Path == nb.Path && d.Line == nb.Line }) {
			return w.flow(s, "shifted_lines")
		}
		steps = []span{steps[0], w.natural(nb)}
	case "shifted_lines":
		if len(steps) < 2 {
			steps[0].Start, steps[0].End = steps[0].End+1, steps[0].End+1+(steps[0].End-steps[0].Start)
			break
		}
		last := &steps[len(steps)-1]
		k := last.End - last.Start + 1
		last.Start, last.End = last.Start+k, last.End+k
	case "missing_file":
		steps[len(steps)-1].Path = w.missingPath(steps[len(steps)-1].Path)
	case "older_version":
		if w.old == nil {
			return w.flow(s, "")
		}
		old := &writer{rng: w.rng, t: w.old, module: w.module, scenarios: w.scenarios}
		if _, ok := old.flowStart(s); !ok {
			return w.flow(s, "")
		}
		p, _ := old.flow(s, "")
		return p, wrong
	}
	return w.flowProposal(s, steps, scenario), wrong
}

// flowProposal is the runtime_flow proposal citing steps, each with a
// worker's summary, in scenario.
func (w *writer) flowProposal(s subject, steps []span, scenario string) json.RawMessage {
	var list []any
	for i, st := range steps {
		list = append(list, map[string]any{"path": w.cite(st.Path), "start_line": st.Start, "end_line": st.End, "summary": w.summary(s, steps, i)})
	}
	return w.proposal("runtime_flow", s, map[string]any{"scenario": scenario, "steps": list})
}

// summary is a worker's prose for step i.
func (w *writer) summary(s subject, steps []span, i int) string {
	name := func(sp span) string {
		if d, ok := w.t.prog.enclosing(sp.Path, sp.Start+(sp.End-sp.Start)/2); ok {
			return d.Name
		}
		return path.Base(sp.Path)
	}
	if i == 0 {
		return fmt.Sprintf("%s starts here (%s).", s.Name, name(steps[0]))
	}
	return fmt.Sprintf("%s calls %s.", name(steps[i-1]), name(steps[i]))
}

// citedTest is a test a model cites: its declaration and the name it gives.
type citedTest struct {
	decl testDecl
	name string // "TestX" or "TestX/sub"
}

// executing returns the passing tests whose run executed d, and the
// passing subtests that did.
func (w *writer) executing(d decl) (tests, subtests []citedTest) {
	key := d.Path + "#" + d.Name
	for _, td := range w.t.prog.tests {
		run, ok := w.t.reach.run(path.Dir(td.Path), td.Name)
		if !ok || run.Outcome != "pass" || !w.t.reach.executed(run, key) {
			continue
		}
		tests = append(tests, citedTest{decl: td, name: td.Name})
		for _, sub := range run.Subtests {
			if r, ok := w.t.reach.run(path.Dir(td.Path), td.Name+"/"+sub); ok && r.Outcome == "pass" && w.t.reach.executed(r, key) && simpleName.MatchString(sub) {
				subtests = append(subtests, citedTest{decl: td, name: td.Name + "/" + sub})
			}
		}
	}
	return tests, subtests
}

var simpleName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// notExecuting returns the tests (with a recorded run) that do not execute
// d, in the classes of wrong test answers.
func (w *writer) notExecuting(d decl, class string) []citedTest {
	key := d.Path + "#" + d.Name
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(lastName(d.Name)) + `\b`)
	var out []citedTest
	for _, td := range w.t.prog.tests {
		run, ok := w.t.reach.run(path.Dir(td.Path), td.Name)
		if !ok || w.t.reach.executed(run, key) {
			continue
		}
		var match bool
		switch class {
		case "static_only":
			if self, ok := w.t.prog.funcAt(td.Path, td.Start); ok {
				match = w.t.prog.staticReach(self, 8)[key]
			}
		case "names_only":
			match = word.MatchString(lines(w.t.prog.t[td.Path], td.Start, td.End))
		case "near":
			for _, f := range run.Executed {
				if strings.HasPrefix(w.t.reach.funcs[f], d.Path+"#") {
					match = true
					break
				}
			}
		}
		if match {
			out = append(out, citedTest{decl: td, name: td.Name})
		}
	}
	return out
}

// command is a run command for test as a model or an editor prints it.
func (w *writer) command(test citedTest) string {
	dir := path.Dir(test.decl.Path)
	rel, dotSlash := ".", "./"
	if dir != "." {
		rel, dotSlash = "./"+dir, "./"+dir+"/"
	}
	imp := w.module
	if dir != "." {
		imp += "/" + dir
	}
	name := test.name
	anchored := "^" + name + "$"
	if top, sub, ok := strings.Cut(name, "/"); ok {
		anchored = "^" + top + "$/^" + sub + "$"
	}
	forms := []string{
		fmt.Sprintf("go test %s -run '%s'", rel, anchored),
		fmt.Sprintf("go test -run %s %s", name, rel),
		fmt.Sprintf("go test ./... -run %s", name),
		fmt.Sprintf("go test -run '%s' %s", anchored, dotSlash),
		fmt.Sprintf("go test -v -run %s %s", name, rel),
		fmt.Sprintf("go test -run=%s %s", name, rel),
		fmt.Sprintf("go test -count=1 -run '%s' %s", anchored, rel),
		fmt.Sprintf(`go test -run "%s" %s`, anchored, rel),
		fmt.Sprintf("go test %s -run %s", imp, name),
		fmt.Sprintf("go test -timeout 30s -run ^%s$ %s", strings.ReplaceAll(name, "/", "$/^"), imp),
	}
	return forms[w.rng.IntN(len(forms))]
}

// tests writes a focused_tests answer.
func (w *writer) tests(s subject, wrong string) (json.RawMessage, string) {
	d, ok := w.t.symbol(s.Name)
	if !ok {
		return w.missingTests(s)
	}
	cited := w.rightTests(d)
	switch wrong {
	case "static_only", "names_only", "near":
		bad := w.notExecuting(d, wrong)
		if len(bad) == 0 {
			next := map[string]string{"static_only": "names_only", "names_only": "near", "near": "missing_file"}[wrong]
			return w.tests(s, next)
		}
		cited = []citedTest{bad[w.rng.IntN(len(bad))]}
	case "failing_test":
		// A test that runs the subject but fails as the module is.
		failing := w.failingTests(d)
		if len(failing) == 0 {
			return w.tests(s, "static_only")
		}
		cited = []citedTest{failing[w.rng.IntN(len(failing))]}
	case "build_excluded":
		// A test of the subject's package declared in a _test.go file that
		// a build constraint leaves out.
		ex := w.excludedTests(path.Dir(d.Path))
		if len(ex) == 0 {
			return w.tests(s, "names_only")
		}
		cited = []citedTest{excludedPick(w.t.prog.tests, ex)}
	case "one_not_executed":
		bad := w.notExecuting(d, "near")
		if len(bad) == 0 || len(cited) == 0 {
			return w.tests(s, "static_only")
		}
		cited = []citedTest{cited[0], bad[w.rng.IntN(len(bad))]}
	case "missing_file":
		return w.missingTests(s)
	}
	if len(cited) == 0 {
		return w.missingTests(s)
	}
	var list []any
	for _, c := range cited {
		list = append(list, map[string]any{"path": w.cite(c.decl.Path), "name": c.name, "command": w.command(c)})
	}
	return w.proposal("focused_tests", s, map[string]any{"tests": list}), wrong
}

// missingTests is a focused_tests answer citing a test in a file that
// does not exist.
func (w *writer) missingTests(s subject) (json.RawMessage, string) {
	p := w.missingPath("needle_test.go")
	return w.proposal("focused_tests", s, map[string]any{"tests": []any{map[string]any{"path": w.cite(p),
		"name": "Test" + strings.ReplaceAll(s.Name, ".", "_"), "command": "go test -run Test" + strings.ReplaceAll(s.Name, ".", "_") + " ."}}}), "missing_file"
}

// rightTests picks the tests a right answer cites for d: the first passing
// test that executes it and, of three or more, the middle one; now and
// then a subtest in place of the first.
func (w *writer) rightTests(d decl) []citedTest {
	tests, subtests := w.executing(d)
	var cited []citedTest
	if len(tests) > 0 {
		cited = append(cited, tests[0])
		if len(tests) > 2 {
			cited = append(cited, tests[len(tests)/2])
		}
		if len(subtests) > 0 && w.rng.IntN(3) == 0 {
			cited[0] = subtests[w.rng.IntN(len(subtests))]
		}
	}
	return cited
}

// failingTests are the tests that execute d but fail as the module is.
func (w *writer) failingTests(d decl) []citedTest {
	var failing []citedTest
	for _, td := range w.t.prog.tests {
		run, ok := w.t.reach.run(path.Dir(td.Path), td.Name)
		if ok && run.Outcome == "fail" && w.t.reach.executed(run, d.Path+"#"+d.Name) {
			failing = append(failing, citedTest{decl: td, name: td.Name})
		}
	}
	return failing
}

// excludedPick chooses among ex, tests a build constraint leaves out
// (isatty_windows_test.go on linux), the first one named like a test of
// the same package that does run, else the first.
func excludedPick(tests, ex []testDecl) citedTest {
	pick := ex[0]
	for _, e := range ex {
		if slices.ContainsFunc(tests, func(td testDecl) bool { return td.Name == e.Name && path.Dir(td.Path) == path.Dir(e.Path) }) {
			pick = e
			break
		}
	}
	return citedTest{decl: pick, name: pick.Name}
}

// excludedTests are the tests declared in the _test.go files of the
// package in dir that the build leaves out on this platform (a build
// constraint, a file name's GOOS): files of the tree the type checker did
// not load. By syntax: the files are not compiled.
func (w *writer) excludedTests(dir string) []testDecl {
	var out []testDecl
	for _, rel := range slices.Sorted(mapKeys(w.t.prog.t)) {
		if path.Dir(rel) != dir || !strings.HasSuffix(rel, "_test.go") || skipFile(rel) {
			continue
		}
		if _, loaded := w.t.prog.lineCnt[rel]; loaded {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, w.t.prog.t[rel], parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && isTestFunc(fd) {
				out = append(out, testDecl{Name: fd.Name.Name, Path: rel, Start: fset.Position(fd.Pos()).Line, End: fset.Position(fd.End()).Line})
			}
		}
	}
	return out
}
