package product

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// implicitOptionAt proves an option that no definition names but code
// implements: a parser comparing the name (case "help":, name == "h") or a
// key written as a named constant and used as a map key. That a constant
// equals the name proves nothing (a subcommand called help, a map of help
// texts); a run must show the candidate deciding: the block the comparison
// guards, or a statement using the constant, runs. For a flag the run must
// be given the option: the module's program run with it as its argument,
// or a test whose own source passes it as written on a command line
// ("--help", "-h"), and no test of the run that is not given it may run
// the candidate too: then it runs whatever the command line says. It
// returns the claim's detail, or ok false with the outcome recorded
// (rejected, or undecided when nothing can run here); failing to remove
// its run's checkout is its error.
func (val *validator) implicitOptionAt(field string, s Subject, pkg *typecheck.Package, rel string, span typecheck.Span) (_ string, _ bool, err error) {
	cands := implicitOptionCandidates(pkg, s, rel, span)
	if len(cands) == 0 {
		return "", false, nil
	}
	runner := val.vs.testRunner(val.ctx)
	if runner == nil {
		val.v.undecide("%s: %s:%d is a candidate implementation of %s %q (a %s), which only a run can show deciding, and %s",
			field, rel, cands[0].Line, s.Kind, s.Name, cands[0].Kind, val.vs.noRunnerCause(val.ctx))
		return "", false, nil
	}
	rs, err := val.vs.newRunSession(val.ctx, runner)
	if err != nil {
		return "", false, err
	}
	defer func() {
		if cerr := rs.close(val.ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	probes, owner := implicitOptionProbes(cands)
	moduleless := ""
	if pkg.Moduleless {
		moduleless = pkg.ModulePath
	}
	mod := moduleFiles(val.repo.Root(), pkg.ModuleDir)
	tries := implicitOptionScenarios(s, pkg)
	var last *testrun.TraceResult
	ranRegardless := ""
	for _, sc := range tries {
		res, files, err := rs.trace(val.ctx, pkg.ModuleDir, sc, probes, moduleless, val.vs.tests.Deadline)
		if err != nil {
			return "", false, err
		}
		last = res
		usable, stop := val.implicitOptionRunUsable(field, sc, res)
		if stop {
			return "", false, nil
		}
		if !usable {
			continue
		}
		detail, done, note := val.implicitOptionShown(field, s, pkg, sc, res, files, owner, mod)
		if ranRegardless == "" {
			ranRegardless = note
		}
		if done {
			return detail, detail != "", nil
		}
	}
	ran := "nothing could run"
	if last != nil {
		ran = fmt.Sprintf("%d run(s) of the package (%s)", len(tries), last.Status)
	}
	val.v.reject("%s: %s:%d compares or names %q, but no run given the option shows it deciding (%s%s): a string equal to the name is a use until a run shows otherwise",
		field, rel, cands[0].Line, s.Name, ran, ranRegardless)
	return "", false, nil
}

// implicitOptionCandidates are the package's implicit implementations of
// the option that lie in the cited span.
func implicitOptionCandidates(pkg *typecheck.Package, s Subject, rel string, span typecheck.Span) []typecheck.Implicit {
	var cands []typecheck.Implicit
	for _, c := range pkg.ImplicitOptions(s.Name, optionKinds(s.Kind)...) {
		if c.File == rel && span.Contains(c.Line) {
			cands = append(cands, c)
		}
	}
	return cands
}

// implicitOptionProbes lays a statement probe on what shows each candidate
// deciding (the block a comparison guards, each use of a constant) and
// maps each probe to its candidate.
func implicitOptionProbes(cands []typecheck.Implicit) ([]testrun.Probe, map[int]typecheck.Implicit) {
	var probes []testrun.Probe
	owner := map[int]typecheck.Implicit{}
	for _, c := range cands {
		switch c.Kind {
		case typecheck.ImplicitCompare:
			probes = append(probes, testrun.Probe{ID: len(probes) + 1, Kind: testrun.ProbeStatement, File: c.File, Line: c.Guard.Start, EndLine: c.Guard.End})
			owner[len(probes)] = c
		case typecheck.ImplicitConstant:
			for _, u := range c.Uses {
				probes = append(probes, testrun.Probe{ID: len(probes) + 1, Kind: testrun.ProbeStatement, File: u.File, Line: u.Line, EndLine: u.Line})
				owner[len(probes)] = c
			}
		}
	}
	return probes, owner
}

// implicitOptionScenarios are the runs tried in order: a main package's
// program given the flag as its argument, then the package's tests.
func implicitOptionScenarios(s Subject, pkg *typecheck.Package) []flowScenario {
	var tries []flowScenario
	if s.Kind == subjectCLIOption && pkg.Name() == "main" {
		if arg := commandLineSpelling(s.Name); arg != "" {
			tries = append(tries, flowScenario{pkgDir: pkg.Dir, command: []string{arg}})
		}
	}
	return append(tries, flowScenario{pkgDir: pkg.Dir, derived: true})
}

// implicitOptionRunUsable says whether a run's events can show a candidate
// deciding; stop when nothing can run here (recorded as undecided), and
// neither for a scenario that did not build or ran no test: the next one is
// tried.
func (val *validator) implicitOptionRunUsable(field string, sc flowScenario, res *testrun.TraceResult) (usable, stop bool) {
	switch res.Status {
	case testrun.Unavailable, testrun.Invalid, testrun.Errored, testrun.LimitExceeded:
		val.v.undecide("%s: Needle cannot run %s here: %s", field, sc, oneLine(clip(res.Reason, 300)))
		return false, true
	case testrun.BuildFailed:
		if missingDependency(res.Reason) {
			val.v.undecide("%s: %s does not build here: a dependency is missing from the module cache (`go mod download` in the module fetches it)", field, sc)
			return false, true
		}
		return false, false // a main package without tests, say: the next scenario
	case testrun.NoTest:
		return false, false
	}
	return true, false
}

// implicitOptionShown looks in one run's events for a candidate deciding
// on the option. done with a detail is the claim's; done without one
// stops the search (its files changed). note names a test not given the
// flag that ran a candidate, which then runs whatever the command line says.
func (val *validator) implicitOptionShown(field string, s Subject, pkg *typecheck.Package, sc flowScenario, res *testrun.TraceResult,
	files map[string]string, owner map[int]typecheck.Implicit, mod *moduleIndex) (detail string, done bool, note string) {
	// A candidate that also runs in a test not given the option runs
	// whatever the command line says (kong's DefaultEnvars compares
	// each flag's name with "help" while it builds the parser): it
	// does not decide on the option, even where a test gives it.
	passes := map[string]bool{}
	given := func(test string) bool {
		p, seen := passes[test]
		if !seen {
			p = testPassesOption(val.repo.Root(), mod, test, s.Name)
			passes[test] = p
		}
		return p
	}
	regardless := map[int]string{} // probe → a test not given the option that ran it
	if s.Kind == subjectCLIOption && sc.command == nil {
		for _, ev := range res.Events {
			if _, ok := owner[ev.Probe]; ok && ev.Test != "" && regardless[ev.Probe] == "" && !given(ev.Test) {
				regardless[ev.Probe] = ev.Test
			}
		}
	}
	for _, ev := range res.Events {
		c, ok := owner[ev.Probe]
		if !ok {
			continue
		}
		if s.Kind == subjectCLIOption && sc.command == nil && (!given(ev.Test) || regardless[ev.Probe] != "") {
			if t := regardless[ev.Probe]; t != "" && note == "" {
				note = fmt.Sprintf("; it ran in %s too, which is not given the option: it runs whatever the command line says", t)
			}
			continue // the run did not give the option (a subcommand of that name, say), or it runs without it
		}
		if !val.addRunFiles(field, files) {
			return "", true, note
		}
		by := sc.String()
		if sc.command == nil && ev.Test != "" {
			by = flowScenario{pkgDir: pkg.Dir, test: ev.Test}.String()
		}
		how := c.Kind.String()
		if c.Constant != "" {
			how += " " + c.Constant
		}
		return fmt.Sprintf("%s %s by %s, shown deciding by %s", c.Def, s.Name, how, by), true, note
	}
	return "", false, note
}

// commandLineSpelling is an option as a user types it: "--name" for a long
// name, "-x" for a short one; "" for a subject that lists several names.
func commandLineSpelling(name string) string {
	on, ok := typecheck.ParseOption(name)
	if !ok || strings.ContainsAny(name, ",|/") {
		return ""
	}
	if on.Short != "" {
		return "-" + on.Short
	}
	return "--" + on.Long
}

// testPassesOption reports whether the source of test (a top-level test
// of the module) holds the option as written on a command line: "--name"
// or "-x" in a string literal.
func testPassesOption(root string, mod *moduleIndex, test, name string) bool {
	if test == "" {
		return false
	}
	on, ok := typecheck.ParseOption(name)
	if !ok {
		return false
	}
	var want []string
	if on.Long != "" {
		want = append(want, "--"+on.Long, "-"+on.Long)
	}
	if on.Short != "" {
		want = append(want, "-"+on.Short)
	}
	for _, file := range mod.tests[test] {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path.Base(file), src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != test || fd.Body == nil {
				continue
			}
			found := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || found {
					return !found
				}
				for _, w := range want {
					if containsOption(lit.Value, w) {
						found = true
					}
				}
				return true
			})
			if found {
				return true
			}
		}
	}
	return false
}

// containsOption reports whether text holds the command-line word w as a
// word of its own: not inside a longer option ("-h" is not in "--help")
// nor followed by more of a name ("--help" is not in "--helper").
func containsOption(text, w string) bool {
	word := func(b byte) bool {
		return b == '-' || b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], w)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(w)
		if (at == 0 || !word(text[at-1])) && (end == len(text) || !word(text[end])) {
			return true
		}
		i = at + 1
	}
}
