package product

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/pydecl"
	"github.com/needle-dev/needle/product/internal/pytestrun"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// Python focused tests are run, as Go's are. A test is named by its
// pytest node id (tests/test_x.py::TestC::test_y, [param] for a
// parametrized one) or its qualified name; Python's parser finds it in
// its file (pyFind), and Needle runs it with pytest under coverage.py
// (pytestrun), with the repository's interpreter, in codex's sandbox, on
// a disposable checkout of the snapshot: no network, writes confined to
// the run's box, a deadline. A test reaches the subject when the test
// itself (its setup, call and teardown) executes, beyond what importing
// the modules runs — coverage.py's dynamic contexts set aside what a
// module's import runs, whenever it happens, with the functions it calls,
// and pytest's collection:
//
//   - a function or method: a line of its body (a def's body runs only
//     when it is called); for a one-line def, whose body shares the def's
//     line, the entry of its code, which only a call makes;
//   - a class: a line of the body of one of its methods;
//   - a file: a line of the body of one of its functions or methods;
//   - a click option or a typer parameter: a line of its command's body,
//     which click calls with the value it parsed; an environment variable:
//     its read, inside a function; an argparse or optparse option: a parse
//     filled it in and code other than the parser read its value from the
//     namespace (an attribute, getattr, vars). The run records these reads
//     on the namespaces the parses return; a namespace of the code's own
//     class is not traced, and leaves the proof undecided.
//
// Only a test that passes is certified; one that cannot import a module
// (a dependency missing from the interpreter's environment) is undecided,
// naming it. A proof depends on the files the
// run executed (every module it imported) and pytest's configuration
// files; an edit there replays it, any other edit leaves it fresh.
// pytest and coverage come from the interpreter's environment: Needle
// never installs packages, and without them the proof is undecided,
// naming the package.

// pyMissingModule is Python's word for a module it cannot import.
var pyMissingModule = lazyregexp.New(`No module named '([A-Za-z_][A-Za-z0-9_.]*)'`)

// pyConfigFiles configure pytest's collection: a proof depends on them.
var pyConfigFiles = []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"}

// pythonTests proves the Python tests of the proposal (idx), running each.
func (val *validator) pythonTests(idx []int) (err error) {
	p := &val.v.Proposal
	runner := val.vs.testRunner(val.ctx)
	var rs *runSession
	defer func() {
		if rs != nil {
			if cerr := rs.close(val.ctx); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for _, i := range idx {
		t := p.Tests[i]
		field := fmt.Sprintf("tests[%d]", i)
		src, ok, err := val.read(field+".path", t.Path)
		if !ok || err != nil {
			return err
		}
		f, handled := val.pyParse(field+".name", t.Path, src)
		switch {
		case f == nil && handled:
			return nil // rejected or undecided
		case f == nil:
			// No interpreter or no sandbox: the lexical rule, labelled.
			if !val.lexicalTest(field, p.Subject, t, src) {
				return nil
			}
			continue
		}
		lines := strings.Split(string(src), "\n")
		found, ok := val.pyFind(field+".name", Subject{Kind: subjectTest, Name: t.Name}, t.Path, f, lines)
		if !ok {
			return nil
		}
		d := found[0]
		id := t.Path + "::" + strings.ReplaceAll(d.Name, ".", "::") + pyParam.Regexp().FindString(strings.TrimSpace(t.Name))
		if rs == nil {
			if runner == nil {
				val.v.undecide("%s: %s can only be proven by running it, and %s", field, id, val.vs.noRunnerCause(val.ctx))
				return nil
			}
			if rs, err = val.vs.newRunSession(val.ctx, runner); err != nil {
				return err
			}
		}
		ok, err = val.runPythonTest(field, rs, runner, t, d, id)
		if !ok || err != nil {
			return err
		}
	}
	return nil
}

// runPythonTest runs one test and judges what it executed.
func (val *validator) runPythonTest(field string, rs *runSession, runner *testrun.Runner, t testRef, d pydecl.Decl, id string) (bool, error) {
	dir, err := rs.ensureCheckout(val.ctx, "")
	if err != nil {
		return false, err
	}
	r, took, tail, ok := val.execPythonTest(field, runner, dir, id)
	if !ok {
		return false, nil
	}
	ran := r.Ran(id)
	if m := pyMissingModule.Regexp().FindStringSubmatch(tail); m != nil && (len(ran) == 0 || slices.ContainsFunc(slices.Collect(maps.Values(ran)), func(o string) bool { return o != pytestrun.Passed })) {
		val.v.undecide("%s: running %s, Python could not import %s: a dependency missing from the interpreter's environment (Needle never installs packages; install it there, or set python.interpreter)", field, id, m[1])
		return false, nil
	}
	if len(ran) == 0 {
		val.v.reject("%s: pytest ran no test for %s when Needle ran it in its sandbox (pytest's exit status %d): %s", field, id, r.Exit, oneLine(tailString(tail, 400)))
		return false, nil
	}
	for item, o := range ran {
		if o != pytestrun.Passed {
			val.v.reject("%s: %s did not pass when Needle ran it in its sandbox (%s %s); only a passing run is certified: %s", field, id, item, o, oneLine(tailString(tail, 400)))
			return false, nil
		}
	}
	what, decided, err := val.pyReached(field, r)
	if err != nil || !decided {
		return false, err
	}
	if what == "" {
		val.v.reject("%s: %s ran (passed in %s) but executed no %s beyond what importing the modules runs",
			field, id, took.Round(time.Millisecond), pyTargetWhat(val.v.Proposal.Subject))
		return false, nil
	}
	files, err := pyRunFiles(dir, r)
	if err != nil {
		return false, err
	}
	if !val.addRunFiles(field, files) {
		return false, nil
	}
	proof := testProof{Path: t.Path, Name: id, Reach: reachExecuted, Command: pytestrun.Command([]string{id}),
		Executed: what, Status: testrun.Passed.String(), DurationMs: took.Milliseconds(), Python: r.Python}
	val.v.Tests = append(val.v.Tests, proof)
	src, _, _ := val.repo.ReadFileMax(t.Path, maxCitedFileBytes)
	span := typecheck.Span{Start: d.First, End: d.End}
	val.addClaim(Claim{Kind: claimTestReaches, Subject: val.v.Proposal.Subject, Path: t.Path,
		ExcerptDigest: excerptDigest(src, span), Detail: id + " " + reachExecuted}, span)
	return true, nil
}

// execPythonTest runs the node id in the checkout dir and reads its
// record; ok is false when the proposal was left undecided. tail is what
// the run printed on stderr, as the runner kept its end.
func (val *validator) execPythonTest(field string, runner *testrun.Runner, dir, id string) (r *pytestrun.Result, took time.Duration, tail string, ok bool) {
	py := val.vs.pythonInterpreter()
	res := runner.Exec(val.ctx, testrun.ExecSpec{Dir: dir, Argv: pytestrun.Argv(py.path, []string{id}),
		Env: append(slices.Clone(py.env), "PYTHONDONTWRITEBYTECODE=1"), Deadline: val.vs.tests.Deadline, MaxOutput: 64 << 20})
	tail = printableText(strings.TrimSpace(string(res.Stderr)))
	switch res.Status {
	case testrun.Passed:
	case testrun.Unavailable:
		val.v.undecide("%s: Needle cannot run %s here: %s", field, id, oneLine(clip(res.Reason, 300)))
		return nil, 0, "", false
	default:
		val.v.undecide("%s: the run of %s with %s did not finish (%s: %s): %s", field, id, py.path, res.Status, oneLine(clip(res.Reason, 200)), oneLine(tailString(tail, 400)))
		return nil, 0, "", false
	}
	r, err := pytestrun.Parse(res.Stdout)
	if err != nil {
		val.v.undecide("%s: the run of %s with %s gave no answer: %v", field, id, py.path, err)
		return nil, 0, "", false
	}
	if r.Missing != "" {
		val.v.undecide("%s: %s (Python %s) cannot import %s, which running %s needs: Needle never installs packages; install %s in the repository's environment, or set python.interpreter",
			field, py.path, r.Python, r.Missing, id, r.Missing)
		return nil, 0, "", false
	}
	return r, res.Duration, tail, true
}

// pyTargetWhat says what a test of the subject must execute.
func pyTargetWhat(s Subject) string {
	switch s.Kind {
	case subjectFile:
		return "statement of a function of " + s.Name
	case subjectCLIOption:
		return "statement of the command that receives " + s.Name + ", nor read of its parsed value"
	case subjectConfigurationKey:
		return "read of " + s.Name
	}
	return "statement of the body of " + s.Name
}

// pyRunFiles digests, as they are in the checkout, the files the run
// executed and pytest's configuration files: the proof's dependencies.
func pyRunFiles(dir string, r *pytestrun.Result) (map[string]string, error) {
	files := map[string]string{}
	for _, f := range append(slices.Collect(maps.Keys(r.Files)), pyConfigFiles...) {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			if os.IsNotExist(err) && slices.Contains(pyConfigFiles, f) {
				continue
			}
			return nil, fmt.Errorf("validate: read %s in the test checkout: %w", f, err)
		}
		files[f] = fileDigest(data)
	}
	return files, nil
}

// pyReached says what of the subject the run executed ("" for nothing);
// decided is false when the proposal was left undecided.
func (val *validator) pyReached(field string, r *pytestrun.Result) (what string, decided bool, err error) {
	s := val.v.Proposal.Subject
	if s.Kind == subjectFile {
		if !isPython(s.Name) {
			val.v.reject("%s: the file subject %s is not Python: a Python test's run shows nothing of it", field, s.Name)
			return "", false, nil
		}
		f, ok, err := val.pyDeclsOf(field, s.Name)
		if !ok || err != nil {
			return "", false, err
		}
		return pyBodiesRan(r, s.Name, f.Decls), true, nil
	}
	pending := "" // a file where the source could not tell what the subject names
	for _, rel := range pyRanFiles(r) {
		src, _, err := val.repo.ReadFileMax(rel, maxCitedFileBytes)
		if err != nil {
			continue // deleted since, or too large: the run's files are digested below
		}
		if !pyMayName(src, s) {
			continue
		}
		f, ok, err := val.pyDeclsOf(field, rel)
		if !ok || err != nil {
			return "", false, err
		}
		switch s.Kind {
		case subjectSymbol:
			decls, undecided := val.pySubjectDecls(f, s, rel)
			if what := pyBodiesRan(r, rel, decls); what != "" {
				return what, true, nil
			}
			if undecided != "" && pending == "" {
				pending = fmt.Sprintf("%s: what %q names in %s, which the run executed, the source cannot tell: %s", field, s.Name, rel, undecided)
			}
		case subjectCLIOption, subjectConfigurationKey:
			what, decided := val.pyOptionRan(field, r, rel, f)
			if !decided || what != "" {
				return what, decided, nil
			}
		default:
			val.v.undecide("%s: a Python test's reach of a %s subject is not traced", field, s.Kind)
			return "", false, nil
		}
	}
	if pending != "" {
		val.v.undecide("%s", pending)
		return "", false, nil
	}
	return "", true, nil
}

// pyMayName reports whether src may hold the subject, before it is
// parsed: a symbol's last name as a word, or one of an option's names
// ("-h, --host" by -h or --host, without their dashes).
func pyMayName(src []byte, s Subject) bool {
	if s.Kind == subjectSymbol {
		last := strings.TrimSuffix(s.Name, "()")
		return containsWord(src, []byte(last[strings.LastIndexAny(last, ".:")+1:]), false)
	}
	for _, n := range strings.FieldsFunc(s.Name, func(r rune) bool { return r == ',' || r == '/' || r == '|' || r == ' ' }) {
		if n = strings.TrimLeft(strings.TrimPrefix(n, "$"), "-"); n != "" && strings.Contains(string(src), n) {
			return true
		}
	}
	return false
}

// pyDeclsOf parses a file of the snapshot with Python's parser.
func (val *validator) pyDeclsOf(field, rel string) (*pydecl.File, bool, error) {
	src, ok, err := val.read(field, rel)
	if !ok || err != nil {
		return nil, false, err
	}
	f, _ := val.pyParse(field, rel, src)
	if f == nil && len(val.v.Reasons)+len(val.v.Undecided) == 0 {
		val.v.undecide("%s: Python's parser cannot read %s here, and a test's reach needs its declarations", field, rel)
	}
	return f, f != nil, nil
}

// pyRanFiles are the Python files of the repository the run executed,
// sorted, test files last.
func pyRanFiles(r *pytestrun.Result) []string {
	var out []string
	for f := range r.Files {
		if isPython(f) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if ta, tb := pyTestFile(a), pyTestFile(b); ta != tb {
			if ta {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	return out
}

// pySubjectDecls are the declarations of f the symbol subject names (by
// f's own names, or through a re-export or inheritance: pyBeyond): a
// function or method, or a class's methods; undecided says what the
// source cannot tell.
func (val *validator) pySubjectDecls(f *pydecl.File, s Subject, rel string) (decls []pydecl.Decl, undecided string) {
	names, _, _ := pyNames(s, rel)
	var found []pydecl.Decl
	for _, n := range names {
		found = append(found, pyRuntimeDecls(f.Lookup(n))...)
	}
	if len(found) == 0 {
		var note string
		if found, note, undecided = val.pyBeyond(f, s, rel, names); note != "" {
			val.v.note("%s", note)
		}
	}
	if len(found) == 0 && undecided == "" {
		if ms, owners := pyMethodsNamed(f, s.Name); len(owners) == 1 {
			found = ms
		}
	}
	var out []pydecl.Decl
	for _, d := range found {
		if d.Kind != pydecl.KindClass {
			out = append(out, d)
			continue
		}
		for _, m := range f.Decls {
			if m.Kind == pydecl.KindMethod && strings.HasPrefix(m.Name, d.Name+".") && !strings.Contains(m.Name[len(d.Name)+1:], ".") {
				out = append(out, m)
			}
		}
	}
	return out, undecided
}

// pyBodiesRan says which body of decls the run executed a line of, "" for
// none. A variable has no body. A one-line def's body shares its line with
// the def, which importing runs: its call shows as the entry of its code
// (which starts at its first decorator), except on line 1, where the
// module's own code starts.
func pyBodiesRan(r *pytestrun.Result, rel string, decls []pydecl.Decl) string {
	for _, d := range decls {
		if d.Body == 0 || d.Kind == pydecl.KindClass || d.Kind == pydecl.KindVariable {
			continue
		}
		if d.Body == d.Line {
			if d.First > 1 && r.Entry(rel, d.First) {
				return fmt.Sprintf("a call of %s, the one-line def on line %d of %s", d.Name, d.Line, rel)
			}
			continue
		}
		if n, ok := r.Executed(rel, d.Body, d.End); ok {
			return fmt.Sprintf("line %d of the body of %s in %s", n, d.Name, rel)
		}
	}
	return ""
}

// pyOptionRan says whether the run read the option's value in rel: for an
// environment variable, its read inside a function; for a click option or
// a typer parameter, the body of the command that receives the value; for
// an argparse or optparse option, a read of the value a parse filled in.
func (val *validator) pyOptionRan(field string, r *pytestrun.Result, rel string, f *pydecl.File) (what string, decided bool) {
	s := val.v.Proposal.Subject
	kinds := optionKinds(s.Kind)
	untraced := ""
	for _, o := range f.Options {
		if !slices.ContainsFunc(pyDefinitions(o, rel), func(d typecheck.Definition) bool { return slices.Contains(kinds, d.Kind) && d.Matches(s.Name) }) {
			continue
		}
		fn, inFunc := pyFunctionAt(f, o.Start)
		switch {
		case o.API == "argparse" || o.API == "optparse":
			p, ok := r.ParsedAt(rel, o.Start, o.End, o.Names)
			switch {
			case ok && p.Read:
				return fmt.Sprintf("a parse filled in %s (defined on line %d of %s) and the code read its value", s.Name, p.Line, rel), true
			case ok && p.Untraced:
				untraced = "the parse filled in a namespace of the code's own class, whose reads Needle does not trace"
			}
		case o.API == "os" && inFunc && fn.Body != 0 && o.Start >= fn.Body:
			if n, ok := r.Executed(rel, o.Start, o.End); ok {
				return fmt.Sprintf("the read of %s on line %d of %s, in %s", s.Name, n, rel, fn.Name), true
			}
		case o.API == "os":
			untraced = "it is read where importing the module reads it, or a default argument's"
		case inFunc && (o.Derived || o.Start < fn.Line):
			if what := pyBodiesRan(r, rel, []pydecl.Decl{fn}); what != "" {
				return "the command receiving " + s.Name + ": " + what, true
			}
		default:
			untraced = "no command function receives it where it is defined"
		}
	}
	if untraced != "" {
		val.v.undecide("%s: whether the test reads %s %q is not decided: %s", field, s.Kind, s.Name, untraced)
		return "", false
	}
	return "", true
}

// pyFunctionAt is the innermost function or method whose lines (with its
// decorators and signature) hold line.
func pyFunctionAt(f *pydecl.File, line int) (pydecl.Decl, bool) {
	var best pydecl.Decl
	found := false
	for _, d := range f.Decls {
		if (d.Kind == pydecl.KindFunction || d.Kind == pydecl.KindMethod) && d.First <= line && line <= d.End && (!found || d.First >= best.First) {
			best, found = d, true
		}
	}
	return best, found
}
