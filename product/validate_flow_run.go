package product

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// scenarioFacet is the form of a need's scenario facet (checkBoundedName).
var scenarioFacet = lazyregexp.New(`^[a-z0-9][a-z0-9._+/-]{0,63}$`)

// flowScenario is a runnable scenario of a flow: a test of a package, or a
// command of a main package with its arguments, or — derived — the tests
// of the steps' packages.
type flowScenario struct {
	pkgDir  string   // repository-relative directory of the package that runs
	test    string   // TestX or TestX/sub; "" for a command or the package's tests
	command []string // non-nil: run the main package with these arguments
	derived bool
}

// String is the scenario as Needle's own command.
func (s flowScenario) String() string {
	pkg := "./" + s.pkgDir
	if s.pkgDir == "." || s.pkgDir == "" {
		pkg = "."
	}
	switch {
	case s.command != nil:
		args := make([]string, len(s.command))
		for i, a := range s.command {
			args[i] = shellWord(a)
		}
		return strings.TrimSpace("go run " + pkg + " " + strings.Join(args, " "))
	case s.test != "":
		return "go test " + pkg + " -run " + shellQuote(testrun.RunPattern(s.test))
	}
	return "go test " + pkg
}

// shellWord quotes a word for a POSIX shell only when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./,:@+", r))
	}) < 0 {
		return s
	}
	return shellQuote(s)
}

// proveFlow decides how the flow is proven: by a run of its scenario
// that shows every link (executed), by go/types alone (static), or not at
// all (a rejection, or undecided when the run it needs cannot happen).
// Failing to remove its run's checkout is its error.
func (val *validator) proveFlow(prog *typecheck.Program, steps []citedStep, links []stepLink) (_ *flowProof, _ bool, err error) {
	lexical, staticOK := flowLinksStatic(links)
	if lexical {
		return &flowProof{Reach: reachLexical}, true, nil // a lexical flow: nothing Needle can run
	}
	if prog == nil {
		return &flowProof{Reach: reachStatic}, true, nil
	}
	pkg, err := prog.PackageOf(steps[0].path)
	if err != nil {
		val.typeFailure("steps[0]", steps[0].path, err)
		return nil, false, nil
	}
	label := val.v.Proposal.Scenario
	named, why := val.namedScenario(pkg, steps, label)
	if why != "" {
		val.v.reject("scenario: %s", why)
		return nil, false, nil
	}
	runner := val.vs.testRunner(val.ctx)
	if runner == nil {
		return val.flowWithoutRunner(named, label, staticOK)
	}
	rs, err := val.vs.newRunSession(val.ctx, runner)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if cerr := rs.close(val.ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	probes, plan := flowProbes(steps, links)
	moduleless := ""
	if pkg.Moduleless {
		moduleless = pkg.ModulePath
	}
	var lastRun *testrun.TraceResult
	for _, sc := range flowScenarioTries(named, pkg, steps) {
		res, files, rerr := rs.trace(val.ctx, pkg.ModuleDir, sc, probes, moduleless, val.vs.tests.Deadline)
		if rerr != nil {
			return nil, false, rerr
		}
		lastRun = res
		if val.flowRunStopped(sc, res) {
			return nil, false, nil
		}
		if seen, entered, ok := plan.shown(res.Events); ok {
			if ok, err := val.recordFlowRun(files, res); !ok || err != nil {
				return nil, false, err
			}
			return &flowProof{Reach: reachExecuted, Scenario: sc.String(), Derived: sc.derived, Status: res.Status.String(),
				DurationMs: res.Duration.Milliseconds(), GoVersion: res.GoVersion, Seen: seen, Entered: entered}, true, nil
		}
		if named != nil && val.flowRunCutShort(sc, res) {
			return nil, false, nil
		}
	}
	return val.flowNotShown(named, staticOK, plan.missing(lastRun), lastRun)
}

// flowLinksStatic reports whether a link crosses into another language
// (lexical), and whether go/types resolves every link (staticOK).
func flowLinksStatic(links []stepLink) (lexical, staticOK bool) {
	staticOK = true
	for _, l := range links {
		if l.lexical {
			return true, false
		}
		if len(l.callees) == 0 {
			staticOK = false
		}
	}
	return false, staticOK
}

// flowWithoutRunner decides a flow where nothing can run: undecided when
// it needs a run (a named scenario, a link go/types cannot resolve), else
// static.
func (val *validator) flowWithoutRunner(named *flowScenario, label string, staticOK bool) (*flowProof, bool, error) {
	cause := val.vs.noRunnerCause(val.ctx)
	switch {
	case named != nil:
		val.v.undecide("scenario %q: the flow is for a scenario Needle must run (%s), and %s", label, named, cause)
	case !staticOK:
		val.v.undecide("a link through an interface or a function value is shown only by running the code, and %s", cause)
	default:
		return val.staticFlow(&flowProof{Reach: reachStatic}, "nothing was run ("+cause+")")
	}
	return nil, false, nil
}

// flowScenarioTries are the runs that may show the flow: the named
// scenario alone, else those derived from the steps' packages.
func flowScenarioTries(named *flowScenario, pkg *typecheck.Package, steps []citedStep) []flowScenario {
	if named != nil {
		return []flowScenario{*named}
	}
	return derivedScenarios(pkg, steps)
}

// flowRunStopped records a run that could not happen or did not build
// (undecided, or a rejection for a scenario that does not build) and
// reports whether it did.
func (val *validator) flowRunStopped(sc flowScenario, res *testrun.TraceResult) bool {
	switch res.Status {
	case testrun.Unavailable:
		val.v.undecide("Needle cannot run the scenario here: %s", oneLine(clip(res.Reason, 300)))
		return true
	case testrun.Invalid, testrun.Errored:
		val.v.undecide("the run of %s failed: %s", sc, oneLine(clip(res.Reason, 300)))
		return true
	case testrun.BuildFailed:
		if missingDependency(res.Reason) {
			val.v.undecide("%s does not build here: a dependency is missing from the module cache (`go mod download` in the module fetches it): %s", sc, oneLine(clip(res.Reason, 300)))
		} else {
			val.v.reject("scenario %s does not build: %s", sc, oneLine(clip(res.Reason, 400)))
		}
		return true
	}
	return false
}

// recordFlowRun binds the verdict to the files and package directories
// the run that showed the flow read; ok is false, with a rejection, when a
// file changed while it ran.
func (val *validator) recordFlowRun(files map[string]string, res *testrun.TraceResult) (bool, error) {
	for f, digest := range files {
		if prev, have := val.v.Files[f]; have && prev != digest {
			val.v.reject("%s changed while the scenario ran", f)
			return false, nil
		}
		val.v.Files[f] = digest
	}
	for _, cp := range res.Packages {
		digest, err := val.repo.DirDigest(val.ctx, cp.Dir)
		if err != nil {
			return false, fmt.Errorf("validate: list %s: %w", cp.Dir, err)
		}
		val.v.Dirs[cp.Dir] = digest
	}
	return true, nil
}

// flowRunCutShort records as undecided a named scenario's run that a
// deadline or the sandbox's limits stopped before it showed the flow.
func (val *validator) flowRunCutShort(sc flowScenario, res *testrun.TraceResult) bool {
	switch res.Status {
	case testrun.TimedOut:
		val.v.undecide("the run of %s did not end within %s and did not show the flow before it", sc, val.vs.tests.Deadline)
		return true
	case testrun.LimitExceeded:
		val.v.undecide("the run of %s was stopped by the sandbox's limits (%s) and did not show the flow before it", sc, oneLine(clip(res.Reason, 200)))
		return true
	}
	return false
}

// flowNotShown decides a flow no run showed (what: what the last run
// lacked): a named scenario's is rejected, a statically linked one is
// static, and any other is rejected for want of a run that takes it.
func (val *validator) flowNotShown(named *flowScenario, staticOK bool, what string, lastRun *testrun.TraceResult) (*flowProof, bool, error) {
	switch {
	case named != nil:
		val.v.reject("scenario %s ran (%s) and %s: the flow does not happen in that scenario", named, lastRun.Status, what)
	case staticOK:
		return val.staticFlow(&flowProof{Reach: reachStatic}, "the tests of the steps' packages ran and did not show it ("+what+")")
	default:
		val.v.reject("no run shows the flow: the tests of the steps' packages ran and %s; a link through an interface or a function value is proven only by a run that takes it (name the scenario that does: a test, or a command with its arguments)", what)
	}
	return nil, false, nil
}

// staticFlow certifies a flow whose every link go/types resolves, labelled
// static (why: what no run showed), unless TestsConfig.NoStatic refuses
// static proofs.
func (val *validator) staticFlow(static *flowProof, why string) (*flowProof, bool, error) {
	if val.vs.tests.NoStatic {
		val.v.reject("the flow is not shown by a run: %s; static flows are not accepted here", why)
		return nil, false, nil
	}
	val.v.note("static flow: every link is resolved by go/types; %s", why)
	return static, true, nil
}

// missingDependency reports whether a build failed for want of a module.
func missingDependency(reason string) bool {
	// The go command, offline in the sandbox with a read-only module
	// cache, says so in these words: it tried to download, or to lock a
	// download in the cache.
	for _, s := range []string{"cannot find module", "missing go.sum entry", "no required module provides", "module lookup disabled",
		"cannot query module", "GOPROXY=off", "go: downloading "} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return strings.Contains(reason, "/cache/download/") && strings.Contains(reason, "read-only file system")
}

// flowPlan is what a run must show: per link, the entry probes of step
// i+1's functions, entered from step i; per step, its statement probe.
type flowPlan struct {
	steps   []citedStep
	links   []stepLink
	entries [][]int // per step: entry probe ids
	stmt    []int   // per step: statement probe id
	within  []bool  // per step: its functions hold it rather than being declared in it
	names   map[int]string
}

// flowProbes lays the probes of a flow: the entry of each function a step
// declares or lies in, and the first statement of each step.
func flowProbes(steps []citedStep, links []stepLink) ([]testrun.Probe, *flowPlan) {
	plan := &flowPlan{steps: steps, links: links, names: map[int]string{}}
	var probes []testrun.Probe
	id := 0
	for _, s := range steps {
		entries, names, within := stepFuncs(s)
		var ids []int
		for _, line := range entries {
			id++
			probes = append(probes, testrun.Probe{ID: id, Kind: testrun.ProbeEntry, File: s.path, Line: line})
			ids = append(ids, id)
			plan.names[id] = names[line]
		}
		id++
		probes = append(probes, testrun.Probe{ID: id, Kind: testrun.ProbeStatement, File: s.path, Line: s.span.Start, EndLine: s.span.End})
		plan.entries = append(plan.entries, ids)
		plan.stmt = append(plan.stmt, id)
		plan.within = append(plan.within, within)
	}
	return probes, plan
}

// shown looks for the flow in a run's events (see chain).
func (fp *flowPlan) shown(events []testrun.TraceEvent) (seen, entered []string, ok bool) {
	w := fp.walk(events)
	return w.seen, w.entered, w.done
}

// activation is one call of a step's function on one goroutine, with the
// steps it stands for in a chain from the first step: valid[j] when it is
// step j's function, entered from a call site in step j-1 while a valid
// activation of step j-1 was running (step 0: any call).
type activation struct {
	probe int
	valid map[int][]string // step → the links that led to it ("site -> function")
}

// flowWalk is the state of matching a flow against a run's events.
type flowWalk struct {
	fp      *flowPlan
	stacks  map[string][]*activation // by goroutine
	best    int                      // the furthest step a valid chain reached
	seen    []string
	entered []string
	done    bool
}

// walk matches the flow against a run's events, in order: the flow is
// shown when its last step's function is entered along a valid chain (or,
// when the last step lies inside a function, its first statement runs in
// such an activation). A chain is nested, as calls are: each step is
// entered while the activation of the step before it, itself entered
// along the chain, is still running on the same goroutine — from a call
// site in that step's lines, or, for a link by function reference
// (RunE: run), from wherever the value is called.
func (fp *flowPlan) walk(events []testrun.TraceEvent) *flowWalk {
	w := &flowWalk{fp: fp, stacks: map[string][]*activation{}, best: -1}
	if len(fp.entries[0]) == 0 {
		w.best = 0 // a package-level first step: there from initialization on
	}
	for _, ev := range events {
		if w.done {
			break
		}
		stack := w.stacks[ev.Goroutine]
		switch ev.Kind {
		case testrun.Entered:
			w.enterFlowStep(ev, stack)
		case testrun.Returned:
			for k := len(stack) - 1; k >= 0; k-- {
				if stack[k].probe == ev.Probe {
					w.stacks[ev.Goroutine] = stack[:k]
					break
				}
			}
		case testrun.Ran:
			w.ranFlowLastStep(ev, stack)
		}
	}
	if len(fp.steps) == 1 && !w.done {
		w.enteredSoleStep(events)
	}
	return w
}

// enterFlowStep pushes the activation an entry starts, valid for each step
// whose chain it continues, and finishes the walk when it enters the last
// step's function along a valid chain.
func (w *flowWalk) enterFlowStep(ev testrun.TraceEvent, stack []*activation) {
	fp := w.fp
	last := len(fp.steps) - 1
	a := &activation{probe: ev.Probe, valid: map[int][]string{}}
	for j := range fp.steps {
		if !slices.Contains(fp.entries[j], ev.Probe) {
			continue
		}
		if j == 0 {
			a.valid[0] = []string{}
			continue
		}
		if trail, ok := w.link(stack, j, ev); ok {
			a.valid[j] = trail
		}
	}
	for j, trail := range a.valid {
		w.best = max(w.best, j)
		if j == last && !fp.within[last] {
			w.finish(trail)
		}
	}
	w.stacks[ev.Goroutine] = append(stack, a)
}

// ranFlowLastStep finishes the walk when the last step's first statement
// runs inside an activation of its function that a valid chain entered.
func (w *flowWalk) ranFlowLastStep(ev testrun.TraceEvent, stack []*activation) {
	fp := w.fp
	last := len(fp.steps) - 1
	if ev.Probe != fp.stmt[last] {
		return
	}
	if last == 0 {
		w.finish(nil)
		return
	}
	for k := len(stack) - 1; k >= 0; k-- {
		if slices.Contains(fp.entries[last], stack[k].probe) {
			if trail, ok := stack[k].valid[last]; ok {
				w.finish(trail)
			}
			break
		}
	}
}

// enteredSoleStep finishes a one-step flow whose function the run entered
// at all: there is no chain to follow.
func (w *flowWalk) enteredSoleStep(events []testrun.TraceEvent) {
	fp := w.fp
	for _, ev := range events {
		if ev.Kind == testrun.Entered && slices.Contains(fp.entries[0], ev.Probe) && !fp.within[0] {
			w.finish(nil)
			break
		}
	}
}

// link reports whether an entry into a function of step j continues a
// valid chain: the trail of links that leads to it.
func (w *flowWalk) link(stack []*activation, j int, ev testrun.TraceEvent) ([]string, bool) {
	fp := w.fp
	from := fp.steps[j-1]
	name := fp.names[ev.Probe]
	if j == 1 && len(fp.entries[0]) == 0 {
		// The first step is no function's (a package-level declaration,
		// a var whose initializer calls or names the next step): its code
		// runs at package initialization, and what it calls or hands on is
		// the next step's entry.
		if ev.File == from.path && from.span.Contains(ev.Line) {
			return []string{fmt.Sprintf("%s:%d -> %s", ev.File, ev.Line, name)}, true
		}
		if !fp.links[0].direct() && len(fp.links[0].callees) > 0 {
			return []string{fmt.Sprintf("%s:%d -> %s (a reference in step 1, called at %s:%d)", from.path, from.span.Start, name, ev.File, ev.Line)}, true
		}
		return nil, false
	}
	if ev.File == from.path && from.span.Contains(ev.Line) {
		// A call from step j-1's lines, made while an activation of a step
		// j-1 function entered along the chain runs: the caller itself, or,
		// when step j-1's function called itself (a dispatcher running the
		// selected subcommand), the call that the chain entered.
		for k := len(stack) - 1; k >= 0; k-- {
			if slices.Contains(fp.entries[j-1], stack[k].probe) {
				if trail, ok := stack[k].valid[j-1]; ok {
					return append(slices.Clone(trail), fmt.Sprintf("%s:%d -> %s", ev.File, ev.Line, name)), true
				}
			}
		}
		return nil, false
	}
	if fp.links[j-1].direct() || len(fp.links[j-1].callees) == 0 {
		return nil, false
	}
	// A link by reference: step j-1 handed the function on, and it is
	// called from elsewhere while a valid step j-1 is still running.
	for k := len(stack) - 1; k >= 0; k-- {
		if trail, ok := stack[k].valid[j-1]; ok {
			return append(slices.Clone(trail), fmt.Sprintf("%s:%d -> %s (a reference in step %d, called at %s:%d)", from.path, from.span.Start, name, j, ev.File, ev.Line)), true
		}
	}
	return nil, false
}

func (w *flowWalk) finish(trail []string) {
	w.done = true
	w.seen = trail
	w.entered = nil
	for _, t := range trail {
		_, fn, _ := strings.Cut(t, " -> ")
		fn, _, _ = strings.Cut(fn, " (")
		w.entered = append(w.entered, fn)
	}
}

// missing says what the run did not show, for a reason.
func (fp *flowPlan) missing(res *testrun.TraceResult) string {
	if res == nil {
		return "nothing ran"
	}
	best := fp.walk(res.Events).best
	switch {
	case best < 0:
		return fmt.Sprintf("step 1 (%s:%d-%d) never ran", fp.steps[0].path, fp.steps[0].span.Start, fp.steps[0].span.End)
	case best+1 >= len(fp.steps):
		last := fp.steps[len(fp.steps)-1]
		return fmt.Sprintf("step %d's lines %s:%d-%d never ran within it", len(fp.steps), last.path, last.span.Start, last.span.End)
	}
	next := fp.steps[best+1]
	return fmt.Sprintf("step %d (%s:%d-%d) was never entered from step %d while it ran", best+2, next.path, next.span.Start, next.span.End, best+1)
}

// derivedScenarios are the runs Needle tries when the proposal names no
// scenario it can run: the tests of the package of each step, the first
// step's first, at most three packages.
func derivedScenarios(pkg *typecheck.Package, steps []citedStep) []flowScenario {
	var out []flowScenario
	for _, s := range steps {
		dir := path.Dir(s.path)
		if slices.ContainsFunc(out, func(o flowScenario) bool { return o.pkgDir == dir }) {
			continue
		}
		out = append(out, flowScenario{pkgDir: dir, derived: true})
		if len(out) == 3 {
			break
		}
	}
	return out
}

// namedScenario maps the proposal's scenario, as models write it, to a run:
// a test ("TestX", "TestX/sub", "TestX()", "go test ./pkg -run '^TestX$'",
// "pkg_test.go: TestX") or a command ("app --version", "go run ./cmd/app
// -v", "`grepx --crlf x`"). nil for "default" and for prose that names
// neither: that is only a label. why is set when the scenario names a test
// that does not exist, or several.
func (val *validator) namedScenario(pkg *typecheck.Package, steps []citedStep, label string) (*flowScenario, string) {
	label = strings.TrimSpace(label)
	if label == "" || label == scenarioDefault {
		return nil, ""
	}
	mod := moduleFiles(val.repo.Root(), pkg.ModuleDir)
	if name, sub, hint := scenarioTest(label); name != "" {
		var dirs []string
		for _, t := range mod.tests[name] {
			if hint != "" && !(t == hint || path.Dir(t) == hint || path.Dir(t) == strings.TrimPrefix(hint, "./")) {
				continue
			}
			if d := path.Dir(t); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 1 {
			// Several packages declare it: the steps' packages decide.
			var near []string
			for _, d := range dirs {
				if slices.ContainsFunc(steps, func(s citedStep) bool { return path.Dir(s.path) == d }) {
					near = append(near, d)
				}
			}
			if len(near) == 1 {
				dirs = near
			}
		}
		switch len(dirs) {
		case 0:
			return nil, fmt.Sprintf("%q names the test %s, which no _test.go file of the module declares (func %s(*testing.T))", label, name, name)
		case 1:
			t := name
			if sub != "" {
				t += "/" + sub
			}
			return &flowScenario{pkgDir: dirs[0], test: t}, ""
		default:
			return nil, fmt.Sprintf("%q names the test %s, which several packages declare (%s): name the package", label, name, strings.Join(dirs, ", "))
		}
	}
	if dir, args, ok := scenarioCommand(label, mod); ok {
		return &flowScenario{pkgDir: dir, command: args}, ""
	}
	return nil, ""
}

// testToken finds a Go test name in text: "Test" followed by a character
// that is not a lower-case letter, optionally "/subtest".
// The name and each subtest may be anchored as a -run pattern writes them
// ("^TestX$/^sub$").
var testToken = lazyregexp.New(`(?:^|[^\w])\^?(Test(?:[A-Z0-9_][\w]*)?)\b(?:\(\))?\$?((?:/\^?[^\s'"` + "`" + `$,;)/^]+\$?)*)`)

// pathToken finds a package hint: "./dir", "dir/x_test.go".
var pathToken = lazyregexp.New(`(?:^|\s)(\./[\w./-]+|[\w./-]+_test\.go)`)

// scenarioTest reads a test scenario: its name, subtest and package hint.
func scenarioTest(label string) (name, sub, hint string) {
	var names []string
	for _, m := range testToken.Regexp().FindAllStringSubmatch(label, -1) {
		n := m[1]
		if !isTestName(n) || n == "TestMain" {
			continue
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
		if len(names) == 1 && m[2] != "" {
			parts := strings.Split(strings.TrimPrefix(m[2], "/"), "/")
			for i, p := range parts {
				parts[i] = strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$")
			}
			sub = strings.Join(parts, "/")
		}
	}
	if len(names) != 1 {
		return "", "", ""
	}
	if m := pathToken.FindStringSubmatch(label); m != nil {
		hint = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(m[1], "./"), "..."), "/")
		if hint == "" && !strings.HasSuffix(m[1], "...") {
			hint = "."
		}
	}
	return names[0], strings.ReplaceAll(sub, " ", "_"), hint
}

// scenarioCommand reads a command scenario: a program the module builds
// (a main package, by its directory's name, the module's last element, or
// the module's one main package standing for "app") and its arguments.
func scenarioCommand(label string, mod *moduleIndex) (string, []string, bool) {
	if len(mod.mains) == 0 {
		return "", nil, false
	}
	if prog, args, ok, decided := scenarioCommandLine(label, mod); decided {
		return prog, args, ok
	}
	return scenarioCommandInProse(label, mod)
}

// moduleMainNamed is the main package a program word names: by its
// directory's name, or the module's last element for the module's root.
func moduleMainNamed(mod *moduleIndex, prog string) (string, bool) {
	prog = path.Base(prog)
	for _, m := range mod.mains {
		if path.Base(m) == prog || (m == mod.dir && prog == path.Base(mod.path)) {
			return m, true
		}
	}
	return "", false
}

// scenarioCommandLine reads a label that is a command line, or holds one
// in backquotes: `go run DIR args`, a program of the module and its
// arguments, or, in a module with one program, a program word followed by
// flags. decided is false when the words are no such command, and the
// label is read as prose.
func scenarioCommandLine(label string, mod *moduleIndex) (prog string, args []string, ok, decided bool) {
	text := label
	if i := strings.Index(text, "`"); i >= 0 {
		if j := strings.Index(text[i+1:], "`"); j >= 0 {
			text = text[i+1 : i+1+j]
		}
	}
	words, ok := shellSplit(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "$")))
	if !ok || len(words) == 0 {
		return "", nil, false, false
	}
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
		dir := strings.TrimSuffix(strings.TrimPrefix(words[2], "./"), "/")
		if dir == "" || dir == "." {
			dir = mod.dir
		} else {
			dir = pathJoin(mod.dir, dir)
		}
		if slices.Contains(mod.mains, dir) {
			return dir, words[3:], true, true
		}
		return "", nil, false, true
	}
	if m, ok := moduleMainNamed(mod, words[0]); ok {
		return m, words[1:], true, true
	}
	// "app --version": a program word and arguments that look like a
	// command line, in a module with one program.
	if len(mod.mains) == 1 && len(words) <= 8 && programWord.MatchString(words[0]) {
		flags := 0
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "-") {
				flags++
			}
		}
		if flags > 0 && flags*2 >= len(words)-1 {
			return mod.mains[0], words[1:], true, true
		}
	}
	return "", nil, false, false
}

// scenarioCommandInProse reads prose naming a program of the module
// ("running textctl with no arguments", "textctl (no arguments)", "when
// the user runs app -v x"): its arguments are the words after it up to the
// first that is prose again.
func scenarioCommandInProse(label string, mod *moduleIndex) (string, []string, bool) {
	plain, ok := shellSplit(strings.Map(func(r rune) rune {
		if strings.ContainsRune(",.;:!?()[]{}`\"'$<>|&*~", r) {
			return ' '
		}
		return r
	}, label))
	if !ok {
		return "", nil, false
	}
	for i, w := range plain {
		m, ok := moduleMainNamed(mod, w)
		if !ok {
			continue
		}
		args := []string{} // no arguments is still a command
		for _, a := range plain[i+1:] {
			if proseWords[strings.ToLower(a)] {
				break
			}
			args = append(args, a)
		}
		return m, args, true
	}
	return "", nil, false
}

var programWord = lazyregexp.New(`^[A-Za-z][\w.-]*$`)

// proseWords end a command's arguments written inside a sentence.
var proseWords = map[string]bool{"with": true, "and": true, "to": true, "when": true, "then": true, "on": true, "in": true,
	"for": true, "that": true, "which": true, "so": true, "after": true, "before": true, "using": true, "via": true, "by": true,
	"while": true, "where": true, "without": true, "is": true, "are": true, "it": true, "no": true, "any": true}

// shellSplit splits a command line as a POSIX shell would for simple
// words, single and double quotes; ok is false for anything else
// (expansions, redirections, pipes).
func shellSplit(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case strings.ContainsRune("|&;<>()$`\\*?[]{}~", r):
			return nil, false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		words = append(words, cur.String())
	}
	return words, true
}

// moduleIndex is what a scenario needs to know of a module's files: the
// test functions (name → _test.go files) and the main packages.
type moduleIndex struct {
	dir, path string
	tests     map[string][]string
	mains     []string
}

// maxIndexedFiles bounds the files moduleFiles parses.
const maxIndexedFiles = 4000

// moduleFiles indexes the module at dir of the repository at root by
// syntax: its tests and main packages (directories with a nested go.mod,
// testdata, vendor and names starting with . or _ are not the module's).
func moduleFiles(root, dir string) *moduleIndex {
	idx := &moduleIndex{dir: dir, tests: map[string][]string{}}
	base := filepath.Join(root, filepath.FromSlash(dir))
	if data, err := os.ReadFile(filepath.Join(base, "go.mod")); err == nil {
		idx.path = modfile.ModulePath(data)
	}
	count := 0
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != base && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != base {
				if _, err := os.Lstat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || count >= maxIndexedFiles {
			return nil
		}
		count++
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly)
			if err == nil && f.Name.Name == "main" && !slices.Contains(idx.mains, path.Dir(rel)) {
				idx.mains = append(idx.mains, path.Dir(rel))
			}
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && isTestName(fd.Name.Name) && fd.Type.Params != nil && len(fd.Type.Params.List) == 1 {
				idx.tests[fd.Name.Name] = append(idx.tests[fd.Name.Name], rel)
			}
		}
		return nil
	})
	slices.Sort(idx.mains)
	return idx
}

// trace runs one scenario with probes in the session's checkout and
// returns the run with the digests of the files it compiled (its
// dependencies). Like test runs, a traced run is cached per snapshot: the
// same scenario and probes on the same source run once.
func (rs *runSession) trace(ctx context.Context, moduleDir string, sc flowScenario, probes []testrun.Probe, moduleless string, deadline time.Duration) (*testrun.TraceResult, map[string]string, error) {
	key := mustID(tagRunCache, struct {
		Snapshot, Module, Dir, Test string
		Command                     []string
		Probes                      []testrun.Probe
		Deadline                    time.Duration
	}{rs.snapshot + " " + moduleless, moduleDir, sc.pkgDir, sc.test, sc.command, probes, deadline})
	rs.vs.mu.Lock()
	cached := rs.vs.traces[key]
	rs.vs.mu.Unlock()
	if cached != nil {
		return cached.res, cached.files, nil
	}
	co, err := rs.ensureCheckout(ctx, moduleless)
	if err != nil {
		return nil, nil, err
	}
	spec := testrun.TraceSpec{Checkout: co, Dir: moduleDir, Package: relPackage(moduleDir, sc.pkgDir), Probes: probes, Deadline: deadline}
	switch {
	case sc.command != nil:
		spec.Command = sc.command
	case sc.test != "":
		spec.Tests = []string{sc.test}
	}
	res := rs.runner.Trace(ctx, spec)
	files, err := rs.compiled(res.Packages, moduleDir, moduleless != "")
	if err != nil {
		return nil, nil, err
	}
	switch res.Status {
	case testrun.TimedOut, testrun.Errored, testrun.Unavailable, testrun.LimitExceeded:
	default:
		if ctx.Err() == nil {
			rs.vs.mu.Lock()
			rs.vs.traces[key] = &tracedRun{res: res, files: files}
			rs.vs.mu.Unlock()
		}
	}
	return res, files, nil
}

// tracedRun is a traced run with the digests of the files it compiled.
type tracedRun struct {
	res   *testrun.TraceResult
	files map[string]string
}
