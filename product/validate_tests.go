package product

import (
	"fmt"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// testProof is how Needle established that one focused test reaches the
// subject: by running it (executed), by a chain of type-resolved calls
// (static, nothing run), or, for a language Needle cannot run, by the test
// naming the subject (lexical). Command is the command Needle derives for
// the test; the proposer's own command is never kept or served.
type testProof struct {
	Path    string `json:"path"`
	Name    string `json:"name"`
	Reach   string `json:"reach"`
	Command string `json:"command,omitempty"`
	// Executed: what the run showed and how it went.
	Executed   string `json:"executed,omitempty"`
	Status     string `json:"status,omitempty"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	GoVersion  string `json:"go_version,omitempty"`
	Python     string `json:"python,omitempty"` // a Python test's interpreter version

	OutputDigest string `json:"output_digest,omitempty"`
	// CallPath: static reach, the resolved callees from the test to the
	// subject.
	CallPath []string `json:"call_path,omitempty"`
}

// reachTarget is what a test must execute to reach the subject: a statement
// of one of bodies, or one of the reads of an option's value (ReadSetter
// reads have a Body), all in the subject's package, which the run covers.
type reachTarget struct {
	subject Subject
	// testOnly: the subject is declared in a _test.go file, which coverage
	// does not instrument: its reach can only be static.
	testOnly bool
	what     string
	pkg      *typecheck.Package
	bodies   []targetBody
	reads    []typecheck.Read
	funcs    []*types.Func // static reach: any of these
}

type targetBody struct {
	name string // "the body of T.M", "file x.go"
	file string
	span typecheck.Span
}

// tests validates focused_tests. A Go test is a func TestX(*testing.T) (or
// a subtest "TestX/case") declared in the cited _test.go file, and it
// reaches the subject only if Needle, running it itself in a sandbox on a
// disposable checkout of the exact snapshot, sees through coverage that it
// executed code of the subject beyond what package initialization runs:
//
//   - a function or method: a statement of its body;
//   - a type: a statement of the body of one of its methods;
//   - a cli_option or configuration_key: code of the defining package that
//     reads the option's value (typecheck's Reads) — the variable or field
//     its definition binds (a flag literal's Destination, a flags struct's
//     field), a look-up of the value by name (GetBool("x"), Changed("x"),
//     viper.GetString("k"), c.Bool("x")), the Set method of the flag.Value
//     it registers, or, for an environment variable, the read itself. A
//     definition in a _test.go file defines no target. Executing the
//     definition alone (a test that builds a command defines every flag) is
//     not reach;
//   - a file: a statement of the file.
//
// Only a test that passes is certified: a failure may be the sandbox's
// doing (a refused socket or write), and the test is served to be run. When
// Needle cannot run tests at all (no sandbox, no toolchain), a chain of
// type-resolved calls from the test to the subject certifies static reach,
// labelled so; a build failure, a deadline or a failing test never does. A
// Python test is run too (validate_python_tests.go); a test of another
// language is lexical: its name is defined in its file and the file names
// the subject. The proposer's command is a hint, never kept.
func (val *validator) tests() error {
	p := &val.v.Proposal
	var goIdx, pyIdx []int
	for i := range p.Tests {
		p.Tests[i].Command = ""
		field := fmt.Sprintf("tests[%d]", i)
		src, ok, err := val.read(field+".path", p.Tests[i].Path)
		if !ok || err != nil {
			return err
		}
		if isGo(p.Tests[i].Path) {
			p.Tests[i].Name = goTestName(p.Tests[i].Name)
			goIdx = append(goIdx, i)
			continue
		}
		if isPython(p.Tests[i].Path) {
			pyIdx = append(pyIdx, i)
			continue
		}
		if !val.lexicalTest(field, p.Subject, p.Tests[i], src) {
			return nil
		}
	}
	if len(goIdx) > 0 {
		if err := val.goTests(goIdx); err != nil || !val.v.Certified() {
			return err
		}
	}
	if len(pyIdx) > 0 {
		if err := val.pythonTests(pyIdx); err != nil || !val.v.Certified() {
			return err
		}
	}
	reach := reachExecuted
	for _, t := range val.v.Tests {
		if reachRank(t.Reach) < reachRank(reach) {
			reach = t.Reach
		}
	}
	val.v.Reach = reach
	val.v.Satisfies.Polarity = []string{"positive"}
	val.v.Satisfies.Selection = []string{"primary", "representative"}
	val.v.Satisfies.Completeness = []string{"open_world"}
	return nil
}

func reachRank(r string) int {
	return map[string]int{reachLexical: 0, reachStatic: 1, reachExecuted: 2}[r]
}

// goTestName is a Go test's name as go test -v prints it, from the ways
// people write it: "TestX()" and "pkg.TestX" are TestX; a blank in a
// subtest's name is the underscore go test matches and prints.
func goTestName(name string) string {
	name = strings.TrimSuffix(name, "()")
	if q, rest, ok := strings.Cut(name, "."); ok && token.IsIdentifier(q) && strings.HasPrefix(rest, "Test") && !strings.Contains(q, "/") {
		name = rest
	}
	if top, sub, ok := strings.Cut(name, "/"); ok {
		name = top + "/" + strings.ReplaceAll(sub, " ", "_")
	}
	if !testrun.ValidTest(name) {
		// "TestX in x_test.go", "x_test.go:TestX", "func TestX(t *testing.T)",
		// "go test -run '^TestX$'": the one test name the text holds.
		if t, sub, _ := scenarioTest(name); t != "" {
			name = t
			if sub != "" {
				name += "/" + sub
			}
		}
	}
	return name
}

// goTests validates the Go tests of the proposal at idx.
func (val *validator) goTests(idx []int) (err error) {
	p := &val.v.Proposal
	var files []string
	for _, i := range idx {
		t := p.Tests[i]
		field := fmt.Sprintf("tests[%d]", i)
		switch {
		case !strings.HasSuffix(t.Path, "_test.go"):
			val.v.reject("%s.path: %s is not a _test.go file", field, t.Path)
			return nil
		case !testrun.ValidTest(t.Name):
			val.v.reject("%s.name: %q is not a Go test name (TestX, or TestX/subtest as go test -v prints it)", field, t.Name)
			return nil
		}
		if !slices.Contains(files, t.Path) {
			files = append(files, t.Path)
		}
	}
	// Nothing of a run session outlives the validation: its checkout is
	// kept for the next proposal or removed, and its files are in the
	// runner's cache.
	var rs *runSession
	if runner := val.vs.testRunner(val.ctx); runner != nil {
		if rs, err = val.vs.newRunSession(val.ctx, runner); err != nil {
			return err
		}
		defer func() {
			if cerr := rs.close(val.ctx); cerr != nil && err == nil {
				err = cerr
			}
		}()
		// The runner's self-test and test2json do not depend on the
		// program: they get ready while it is type-checked, and so does
		// the first test's run (run_ahead.go).
		prepared := make(chan struct{})
		go func() {
			defer close(prepared)
			_ = runner.Prepare(val.ctx)
		}()
		defer func() { <-prepared }()
		ahead := val.startRunAhead(rs, p.Tests[idx[0]])
		defer ahead.wait() // before the session closes
		val.ahead = ahead
		defer func() { val.ahead = nil }()
	}
	prog, ok, err := val.goProgram("tests", files...)
	if !ok || err != nil {
		return err
	}
	return val.runGoTests(idx, files, prog, rs)
}

// runGoTests proves each Go test's reach on rs (nil when Needle cannot run
// tests here), running it when Needle can.
func (val *validator) runGoTests(idx []int, files []string, prog *typecheck.Program, rs *runSession) (err error) {
	p := &val.v.Proposal
	targets := map[string]*reachTarget{} // by the test package's import path
	for _, i := range idx {
		t := p.Tests[i]
		field := fmt.Sprintf("tests[%d]", i)
		pkg, d, ok := val.goTestDecl(field, prog, t)
		if !ok {
			return nil
		}
		target := targets[pkg.Path]
		if target == nil {
			var found bool
			if target, prog, found, err = val.reachTarget(field, prog, files, pkg); !found || err != nil {
				return err
			}
			targets[pkg.Path] = target
		}
		if target.pkg.ModuleDir != pkg.ModuleDir {
			val.v.reject("%s: %s is in module %s, the subject in module %s: a test reaches only its own module here", field, t.Path, pkg.ModuleDir, target.pkg.ModuleDir)
			return nil
		}
		proof := testProof{Path: t.Path, Name: t.Name, Command: testCommand(pkg.ModuleDir, pkg.Dir, t.Name)}
		if rs == nil {
			val.cannotRun(field, prog, d, target, t, val.vs.noRunnerCause(val.ctx))
			return nil
		}
		var done, passed bool
		var xerr error
		if target.testOnly {
			val.ahead.wait() // a traced run is another run
			done, passed, xerr = val.traceTest(field, rs, pkg, target, t, &proof)
		} else {
			done, passed, xerr = val.executeTest(field, rs, pkg, target, t, &proof)
		}
		if xerr != nil || !passed {
			return xerr
		}
		if !done {
			val.cannotRun(field, prog, d, target, t, proof.Executed)
			return nil
		}
		val.addTestProof(proof, d, prog)
	}
	return nil
}

// goTestDecl finds a cited test's package and its top-level test
// function, rejecting a name its file does not declare as func(*testing.T).
func (val *validator) goTestDecl(field string, prog *typecheck.Program, t testRef) (*typecheck.Package, *typecheck.Decl, bool) {
	pkg, ok := val.goPackage(field+".path", prog, t.Path)
	if !ok {
		return nil, nil, false
	}
	top, _, _ := strings.Cut(t.Name, "/")
	d, lerr := pkg.Lookup(top)
	if lerr != nil || d.File != t.Path || !isTestFunc(d) {
		val.v.reject("%s.name: %s declares no func %s(*testing.T)", field, t.Path, top)
		return nil, nil, false
	}
	return pkg, d, true
}

// cannotRun records a test Needle cannot run here as undecided: reach is
// proven only by running it. A chain of resolved calls from the test to the
// subject, when there is one, is named as advisory: static reach is a
// candidate, never a proof.
func (val *validator) cannotRun(field string, prog *typecheck.Program, d *typecheck.Decl, target *reachTarget, t testRef, cause string) {
	advice := ""
	if !strings.Contains(t.Name, "/") {
		from := typecheck.Span{Start: d.Span.Start, End: d.Span.End}
		for _, fn := range target.funcs {
			if chain := prog.StaticPath(t.Path, from, fn, maxStaticDepth); chain != nil {
				var names []string
				for _, c := range chain {
					names = append(names, c.Name)
				}
				advice = "; advisory, not a proof: a chain of resolved calls leads there (static: " + strings.Join(names, " -> ") + ")"
				break
			}
		}
	}
	val.v.undecide("%s: whether %s reaches %s is proven only by running it, and %s%s", field, t.Name, target.what, cause, advice)
}

// traceTest proves reach of a subject declared in a _test.go file, which
// coverage does not instrument: the test's run, with a probe at the
// subject's entry, must enter it while the test runs.
func (val *validator) traceTest(field string, rs *runSession, pkg *typecheck.Package, target *reachTarget, t testRef, proof *testProof) (done, ok bool, err error) {
	var probes []testrun.Probe
	for i, b := range target.bodies {
		probes = append(probes, testrun.Probe{ID: i + 1, Kind: testrun.ProbeStatement, File: b.file, Line: b.span.Start, EndLine: b.span.End})
	}
	if len(probes) == 0 {
		val.v.reject("%s: %s %q has no statement a test could execute", field, target.subject.Kind, target.subject.Name)
		return false, false, nil
	}
	moduleless := ""
	if pkg.Moduleless {
		moduleless = pkg.ModulePath
	}
	sc := flowScenario{pkgDir: pkg.Dir, test: t.Name}
	res, files, err := rs.trace(val.ctx, pkg.ModuleDir, sc, probes, moduleless, val.vs.tests.Deadline)
	if err != nil {
		return false, false, err
	}
	if done, ok := val.runStatus(field, t.Name, res.Status, res.Reason, res.Output, proof); !done || !ok {
		return done, ok, nil
	}
	top, _, _ := strings.Cut(t.Name, "/")
	for _, ev := range res.Events {
		if ev.Test == top {
			if !val.addRunFiles(field, files) {
				return false, false, nil
			}
			b := target.bodies[ev.Probe-1]
			proof.Reach, proof.Executed, proof.Status = reachExecuted, "a statement of "+b.name+" (traced: it is in a _test.go file)", res.Status.String()
			proof.DurationMs, proof.GoVersion = res.Duration.Milliseconds(), res.GoVersion
			return true, true, nil
		}
	}
	val.v.reject("%s: %s ran (passed in %s) but executed no %s", field, t.Name, res.Duration.Round(time.Millisecond), target.what)
	return false, false, nil
}

// runStatus judges how a test run ended: done false when it could not run
// here (undecided, proof.Executed says why), ok false when the test is
// rejected (it failed, skipped, did not build).
func (val *validator) runStatus(field, name string, st testrun.Status, reason string, output []byte, proof *testProof) (done, ok bool) {
	switch st {
	case testrun.Passed:
		return true, true
	case testrun.Unavailable:
		proof.Executed = "Needle cannot run tests here: " + oneLine(clip(reason, 300))
		return false, true
	case testrun.TimedOut:
		proof.Executed = "its run did not end within the deadline (" + oneLine(clip(reason, 200)) + "); a machine under load may need a longer tests.deadline"
		return false, true
	case testrun.LimitExceeded:
		proof.Executed = "its run took more than the sandbox allows and was stopped (" + oneLine(clip(reason, 200)) + ")"
		return false, true
	case testrun.Errored, testrun.Invalid:
		proof.Executed = "its run failed: " + oneLine(clip(reason, 300))
		return false, true
	case testrun.BuildFailed:
		if missingDependency(reason) {
			proof.Executed = "its package does not build here: a dependency is missing from the module cache (`go mod download` in the module fetches it): " + oneLine(clip(reason, 300))
			return false, true
		}
	}
	val.v.reject("%s: %s did not pass when Needle ran it in its sandbox (%s: %s%s); only a passing run is certified",
		field, name, st, oneLine(clip(reason, 400)), outputTail(output))
	return false, false
}

// addRunFiles records the files a run compiled as dependencies.
func (val *validator) addRunFiles(field string, files map[string]string) bool {
	for f, digest := range files {
		if prev, seen := val.v.Files[f]; seen && prev != digest {
			val.v.reject("%s: %s changed while the test ran", field, f)
			return false
		}
		val.v.Files[f] = digest
	}
	return true
}

// addTestProof records a test as reaching the subject.
func (val *validator) addTestProof(proof testProof, d *typecheck.Decl, prog *typecheck.Program) {
	val.v.Tests = append(val.v.Tests, proof)
	src, _, _ := val.repo.ReadFileMax(proof.Path, maxCitedFileBytes)
	span := typecheck.Span{Start: d.Span.Start, End: d.Span.End}
	detail := proof.Name + " " + proof.Reach
	if proof.Reach == reachStatic {
		detail += ": " + strings.Join(proof.CallPath, " -> ")
	}
	val.addClaim(Claim{Kind: claimTestReaches, Subject: val.v.Proposal.Subject, Path: proof.Path,
		ExcerptDigest: excerptDigest(src, span), Detail: detail}, span)
}

// executeTest runs one test and judges its coverage. done is false when the
// run was impossible (the caller may fall back to static reach); ok false
// when the test is rejected.
func (val *validator) executeTest(field string, rs *runSession, pkg *typecheck.Package, target *reachTarget, t testRef, proof *testProof) (done, ok bool, err error) {
	spec := testrun.Spec{Dir: pkg.ModuleDir, Package: relPackage(pkg.ModuleDir, pkg.Dir), Test: t.Name,
		Cover: []string{relPackage(target.pkg.ModuleDir, target.pkg.Dir)}, Deadline: val.vs.tests.Deadline}
	moduleless := ""
	if pkg.Moduleless {
		moduleless = pkg.ModulePath
	}
	tr, err := val.ahead.take(spec, moduleless)
	if tr != nil {
		val.vs.ranAhead.Add(1)
	}
	if tr == nil && err == nil {
		tr, err = rs.run(val.ctx, spec, moduleless)
	}
	if err != nil {
		return false, false, err
	}
	res := tr.res
	if done, ok := val.runStatus(field, t.Name, res.Status, res.Reason, res.Output, proof); !done || !ok {
		return done, ok, nil
	}
	reached, what, err := target.executed(res)
	if err != nil {
		val.v.reject("%s: the coverage of %s cannot tell: %v", field, t.Name, err)
		return false, false, nil
	}
	if !reached {
		val.v.reject("%s: %s ran (passed in %s) but executed no %s beyond what package initialization runs",
			field, t.Name, res.Duration.Round(time.Millisecond), target.what)
		return false, false, nil
	}
	if !val.addRunFiles(field, tr.files) {
		return false, false, nil
	}
	for _, cp := range res.Packages {
		digest, err := val.repo.DirDigest(val.ctx, cp.Dir)
		if err != nil {
			return false, false, fmt.Errorf("validate: list %s: %w", cp.Dir, err)
		}
		val.v.Dirs[cp.Dir] = digest
	}
	proof.Reach, proof.Executed, proof.Status = reachExecuted, what, res.Status.String()
	proof.DurationMs, proof.GoVersion, proof.OutputDigest = res.Duration.Milliseconds(), res.GoVersion, res.OutputDigest
	return true, true, nil
}

// outputTail is the end of a test's output for a rejection reason: what
// the test said last (a refused socket, a refused write).
func outputTail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return ""
	}
	if len(s) > 300 {
		s = "…" + strings.ToValidUTF8(s[len(s)-300:], "")
	}
	return "; output: " + strings.Join(strings.Fields(s), " ")
}

// executed reports whether a run executed the target, and what it executed.
func (tg *reachTarget) executed(res *testrun.Result) (bool, string, error) {
	for _, b := range tg.bodies {
		ok, err := res.Executed(b.file, b.span.Start, b.span.End)
		if err != nil {
			return false, "", err
		}
		if ok {
			return true, "a statement of " + b.name, nil
		}
	}
	for _, r := range tg.reads {
		var ok bool
		var err error
		if r.Body != (typecheck.Span{}) {
			ok, err = res.Executed(r.File, r.Body.Start, r.Body.End)
		} else {
			ok, err = res.ExecutedAt(r.File, r.Line, r.Col)
		}
		if err != nil {
			return false, "", err
		}
		if ok {
			return true, fmt.Sprintf("the read of %s %q's value at %s line %d (%s %s)", tg.subject.Kind, tg.subject.Name, r.File, r.Line, r.Kind, r.How), nil
		}
	}
	return false, "", nil
}

// reachTarget finds what tests of pkg must execute to reach the subject:
// its declaration (or definitions and reads) in the test's own package, the
// package an external test package tests, or else in exactly one package of
// the module the test package imports, directly or transitively. It may load more packages and
// returns the program that holds them.
func (val *validator) reachTarget(field string, prog *typecheck.Program, files []string, testPkg *typecheck.Package) (*reachTarget, *typecheck.Program, bool, error) {
	s := val.v.Proposal.Subject
	switch s.Kind {
	case subjectSymbol, subjectCLIOption, subjectConfigurationKey, subjectFile:
	default:
		val.v.reject("%s: a test cannot be shown to reach a %s subject", field, s.Kind)
		return nil, prog, false, nil
	}
	if s.Kind == subjectFile {
		return val.reachTargetOfFile(field, prog, files)
	}
	candidates := reachTargetCandidates(prog, testPkg)
	if tg, ok := val.targetIn(candidates); ok {
		return tg, prog, true, nil
	}
	return val.reachTargetImported(field, prog, files, candidates, testPkg)
}

// reachTargetOfFile is the target of a file subject: any statement of the
// file, which must be a non-test Go file, loaded with the tests' files.
func (val *validator) reachTargetOfFile(field string, prog *typecheck.Program, files []string) (*reachTarget, *typecheck.Program, bool, error) {
	s := val.v.Proposal.Subject
	if !isGo(s.Name) || strings.HasSuffix(s.Name, "_test.go") {
		val.v.reject("%s: a test reaches a file only by executing its code: %s is not a non-test Go file", field, s.Name)
		return nil, prog, false, nil
	}
	all := append(slices.Clone(files), s.Name)
	prog, ok, err := val.goProgram(field, all...)
	if !ok || err != nil {
		return nil, prog, ok, err
	}
	pkg, ok := val.goPackage(field, prog, s.Name)
	if !ok {
		return nil, prog, false, nil
	}
	src, ok, err := val.read(field, s.Name)
	if !ok || err != nil {
		return nil, prog, ok, err
	}
	return &reachTarget{subject: s, what: "statement of " + s.Name, pkg: pkg,
		bodies: []targetBody{{"file " + s.Name, s.Name, typecheck.Span{Start: 1, End: lineCount(src)}}}}, prog, true, nil
}

// reachTargetCandidates are the test's own package and the package an
// external test package tests, the test's own first.
func reachTargetCandidates(prog *typecheck.Program, testPkg *typecheck.Package) []*typecheck.Package {
	var candidates []*typecheck.Package
	for _, pkg := range prog.Packages() {
		if pkg == testPkg || pkg.Dir == testPkg.Dir && pkg.Path == strings.TrimSuffix(testPkg.Path, "_test") {
			candidates = append(candidates, pkg)
		}
	}
	slices.SortStableFunc(candidates, func(a, b *typecheck.Package) int { return boolInt(a != testPkg) - boolInt(b != testPkg) })
	return candidates
}

// reachTargetImported looks the subject up in the module's packages the
// test imports, directly or through other packages (a subject in an
// internal package that the tested package uses), each loaded with
// bodies: it must be declared in exactly one.
func (val *validator) reachTargetImported(field string, prog *typecheck.Program, files []string, candidates []*typecheck.Package, testPkg *typecheck.Package) (*reachTarget, *typecheck.Program, bool, error) {
	s := val.v.Proposal.Subject
	more, dirs := val.reachTargetImportFiles(candidates, files)
	if len(dirs) > 0 {
		var ok bool
		var err error
		if prog, ok, err = val.goProgram(field, more...); !ok || err != nil {
			return nil, prog, ok, err
		}
		var found []*reachTarget
		for _, pkg := range prog.Packages() {
			if dirs[pkg.Dir] && !strings.HasSuffix(pkg.Path, "_test") {
				if tg, ok := val.targetIn([]*typecheck.Package{pkg}); ok {
					found = append(found, tg)
				}
			}
		}
		switch len(found) {
		case 1:
			return found[0], prog, true, nil
		case 0:
		default:
			var where []string
			for _, f := range found {
				where = append(where, f.pkg.Path)
			}
			val.v.reject("%s: %s %q is declared in several packages the test imports (%s): qualify it", field, s.Kind, s.Name, strings.Join(where, ", "))
			return nil, prog, false, nil
		}
	}
	val.v.reject("%s: %s %q is declared neither in the test's package %s nor in a package of its module it imports (directly or not)", field, s.Kind, s.Name, testPkg.Path)
	return nil, prog, false, nil
}

// reachTargetImportFiles adds to files one Go file of each directory of
// the module that the candidates import, directly or transitively, and
// returns those directories.
func (val *validator) reachTargetImportFiles(candidates []*typecheck.Package, files []string) ([]string, map[string]bool) {
	more, dirs := slices.Clone(files), map[string]bool{}
	seen := map[string]bool{}
	var walk func(pkg *typecheck.Package, imps []*types.Package)
	walk = func(pkg *typecheck.Package, imps []*types.Package) {
		for _, imp := range imps {
			if seen[imp.Path()] {
				continue
			}
			seen[imp.Path()] = true
			dir, ok := moduleDir(pkg, imp.Path())
			if !ok {
				continue // another module's: not the subject's
			}
			if f := val.aGoFile(dir); f != "" && !dirs[dir] {
				dirs[dir] = true
				more = append(more, f)
			}
			walk(pkg, imp.Imports())
		}
	}
	for _, pkg := range candidates {
		walk(pkg, pkg.Types.Imports())
	}
	return more, dirs
}

// targetIn looks the subject up in the first of pkgs that has it.
func (val *validator) targetIn(pkgs []*typecheck.Package) (*reachTarget, bool) {
	s := val.v.Proposal.Subject
	for _, pkg := range pkgs {
		switch s.Kind {
		case subjectSymbol:
			d, err := lookup(pkg, s.Name)
			if err != nil {
				continue
			}
			tg := symbolTarget(pkg, d)
			tg.subject = s
			tg.testOnly = strings.HasSuffix(d.File, "_test.go")
			return tg, true
		case subjectCLIOption, subjectConfigurationKey:
			defs, _ := pkg.FindOption(s.Name, optionKinds(s.Kind)...)
			program := programDefs(defs)
			if len(program) == 0 {
				// No definition names it: a parser of its own may implement
				// it (an implicit --help). Reaching it is running the block
				// its comparison guards, or a statement using its constant.
				if tg := implicitTarget(s, pkg); tg != nil {
					return tg, true
				}
				continue
			}
			tg := &reachTarget{subject: s, what: fmt.Sprintf("read of %s %q's value", s.Kind, s.Name), pkg: pkg, reads: pkg.Reads(s.Name, program)}
			for _, r := range tg.reads {
				if decl, ok := pkg.DeclAt(r.File, r.Line); ok {
					if fn, ok := decl.Object.(*types.Func); ok && !slices.Contains(tg.funcs, fn) {
						tg.funcs = append(tg.funcs, fn)
					}
				}
			}
			return tg, true
		}
	}
	return nil, false
}

// implicitTarget is what reaching an option no definition names means: a
// statement of a block a comparison with its name guards, or one using
// the named constant that spells it; nil when the package has neither.
func implicitTarget(s Subject, pkg *typecheck.Package) *reachTarget {
	cands := pkg.ImplicitOptions(s.Name, optionKinds(s.Kind)...)
	if len(cands) == 0 {
		return nil
	}
	tg := &reachTarget{subject: s, what: fmt.Sprintf("statement deciding %s %q (a comparison with its name, or its constant)", s.Kind, s.Name), pkg: pkg}
	for _, c := range cands {
		switch c.Kind {
		case typecheck.ImplicitCompare:
			// Coverage's block of a case body starts on its case line.
			tg.bodies = append(tg.bodies, targetBody{fmt.Sprintf("the block %s:%d's comparison guards", c.File, c.Line), c.File,
				typecheck.Span{Start: min(c.Line, c.Guard.Start), End: c.Guard.End}})
		case typecheck.ImplicitConstant:
			for _, u := range c.Uses {
				tg.reads = append(tg.reads, typecheck.Read{Kind: typecheck.ReadByName, How: "constant " + c.Constant, File: u.File, Line: u.Line, Col: u.Col})
			}
		}
	}
	return tg
}

// symbolTarget is what reaching a declaration means: a statement of a
// function's or method's body, or of one of a type's methods'. Variables,
// constants and interface methods have no statements of their own.
func symbolTarget(pkg *typecheck.Package, d *typecheck.Decl) *reachTarget {
	tg := &reachTarget{pkg: pkg, what: "statement of the body of " + d.Name()}
	switch d.Kind {
	case typecheck.DeclFunc, typecheck.DeclMethod:
		if fn, ok := d.Object.(*types.Func); ok && d.Body != (typecheck.Span{}) {
			tg.bodies = []targetBody{{"the body of " + d.Name(), d.File, d.Body}}
			tg.funcs = []*types.Func{fn}
		}
	case typecheck.DeclType:
		tg.what = "statement of a method of " + d.Name()
		if named, ok := types.Unalias(d.Object.Type()).(*types.Named); ok {
			for m := range named.Methods() {
				if md, err := pkg.Lookup(d.Name() + "." + m.Name()); err == nil && md.Body != (typecheck.Span{}) {
					tg.bodies = append(tg.bodies, targetBody{"the body of " + md.Name(), md.File, md.Body})
					tg.funcs = append(tg.funcs, m)
				}
			}
		}
	default:
		tg.what = "statement of " + d.Name() + ", a " + d.Kind.String() + " (it has none)"
	}
	return tg
}

// moduleDir is the repository directory of an import path of pkg's module.
func moduleDir(pkg *typecheck.Package, importPath string) (string, bool) {
	rest, ok := strings.CutPrefix(importPath, pkg.ModulePath)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "", false
	}
	if rest == "" {
		return pkg.ModuleDir, true
	}
	return pathJoin(pkg.ModuleDir, strings.TrimPrefix(rest, "/")), true
}

// aGoFile returns a non-test Go file of dir, "" if there is none.
func (val *validator) aGoFile(dir string) string {
	entries, err := os.ReadDir(filepath.Join(val.repo.Root(), filepath.FromSlash(dir)))
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			return pathJoin(dir, e.Name())
		}
	}
	return ""
}

// relPackage is a package directory as go test takes it from the module's
// directory: "." or "./sub".
func relPackage(moduleDir, dir string) string {
	if moduleDir == "." || moduleDir == "" {
		if dir == "." || dir == "" {
			return "."
		}
		return "./" + dir
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, moduleDir), "/")
	if rel == "" {
		return "."
	}
	return "./" + rel
}

// testCommand is the command Needle serves for a Go test: go test on the
// test's package, from its module's directory (go -C), selecting exactly
// the test with testrun's anchored pattern, quoted for a POSIX shell.
func testCommand(moduleDir, dir, name string) string {
	cmd := "go test "
	if moduleDir != "." && moduleDir != "" {
		cmd = "go -C " + shellQuote(moduleDir) + " test "
	}
	return cmd + relPackage(moduleDir, dir) + " -run " + shellQuote(testrun.RunPattern(name))
}

// TestCommand is the command Needle derives for the Go test name in the
// file testPath of the repository's root module: go test on its package
// directory, selecting exactly that test ("go test ./dir -run '^TestX$'").
func TestCommand(testPath, name string) string {
	return testCommand(".", path.Dir(testPath), name)
}

// shellQuote quotes s for a POSIX shell: in single quotes, a single quote
// written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lexicalTest accepts a non-Go test on lexical evidence: its name is
// defined in its file (a definition-shaped line, or a test-framework call
// naming it) and the file names the subject. Reach is unproven, and no
// command is served: Needle has no trusted runner for the language.
func (val *validator) lexicalTest(field string, subject Subject, t testRef, src []byte) bool {
	val.lexical()
	whole := typecheck.Span{Start: 1, End: lineCount(src)}
	name := subject.Name
	if subject.Kind == subjectSymbol {
		parts := strings.Split(strings.TrimSuffix(name, "()"), ".")
		name = parts[len(parts)-1]
	}
	switch {
	case !lexicalTestDefined(t.Path, src, t.Name):
		val.v.reject("%s.name: %s defines no test %q (lexical evidence: a definition-shaped line, or it(…)/test(…) naming it)", field, t.Path, t.Name)
	case !lexicalWord(src, name, whole):
		val.v.reject("%s: %s does not mention %q", field, t.Path, subject.Name)
	default:
		val.v.Tests = append(val.v.Tests, testProof{Path: t.Path, Name: t.Name, Reach: reachLexical})
		c := Claim{Kind: claimTestMentions, Subject: subject, Path: t.Path, ExcerptDigest: excerptDigest(src, whole), Detail: t.Name}
		val.addClaim(c, whole)
		return true
	}
	return false
}
