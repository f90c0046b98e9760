package product

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/pydecl"
	"github.com/needle-dev/needle/product/internal/pytestrun"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// Python flows are proven by running their scenario, as Go's are, with
// nothing static to fall back on: a flow whose steps are all Python is
// certified only when Needle, running the scenario in its sandbox on a
// disposable checkout (pytestrun, with every call into or out of the
// steps' files recorded by a profile hook), sees each step entered from a
// call site in the step before it, in order — the callee declared in the
// step, or a function holding it — and the last step's lines run. The
// scenario is the proposal's, as models write it: a pytest node id
// (tests/test_x.py::test_y, "pytest tests/test_x.py::test_y"), pytest on
// test files (every test of them must pass), or a command
// `python -m pkg ARGS` or `python path.py ARGS`. Without one that
// Needle can run, the flow is undecided; without an interpreter or a
// sandbox it stays lexical, labelled so. The steps' summaries are the
// proposer's prose, as for Go.

// pyFlowSteps reports whether every step is Python.
func pyFlowSteps(steps []citedStep) bool {
	return !slices.ContainsFunc(steps, func(s citedStep) bool { return !isPython(s.path) })
}

// pyFlowStart checks that a Python step holds the subject: a symbol's
// step lies in its declaration or holds its def line; an option's step
// overlaps its definition (pyOptionAt). Without Python's parser here, the
// lexical rule of locations stands in.
func (val *validator) pyFlowStart(s Subject, st citedStep, field string) (Claim, bool) {
	claim := Claim{Subject: s, Path: st.path, ExcerptDigest: excerptDigest(st.src, st.span)}
	span := typecheck.Span{Start: st.span.Start, End: st.span.End}
	if s.Kind == subjectCLIOption || s.Kind == subjectConfigurationKey {
		detail, ok, handled := val.pyOptionAt(field, s, st.path, st.src, span)
		claim.Kind, claim.Detail = claimDefined, detail
		return claim, ok && handled
	}
	f, handled := val.pyParse(field, st.path, st.src)
	if f == nil && !handled {
		// No parser here: the lexical rule, labelled.
		claim, _, ok, _ := val.subjectAt(field, s, st.path, st.src, st.span)
		claim.ExcerptDigest = excerptDigest(st.src, st.span)
		return claim, ok
	}
	if f == nil {
		return Claim{}, false
	}
	lines := strings.Split(string(st.src), "\n")
	found, ok := val.pyFind(field, s, st.path, f, lines)
	if !ok {
		return Claim{}, false
	}
	for _, d := range found {
		if (d.First <= span.Start && span.End <= d.Tail(lines)) || span.Contains(d.Line) {
			claim.Kind = claimDeclared
			return claim, true
		}
	}
	d := found[0]
	val.v.reject("%s: %s:%d-%d is not in the declaration of %s %q (%s:%d-%d)", field, st.path, span.Start, span.End, s.Kind, s.Name, st.path, d.First, d.End)
	return Claim{}, false
}

// pyScenario reads the proposal's scenario as a run: the argument list
// for pytestrun (node ids, or --module/--path and arguments) and the
// command Needle serves; ok is false for a scenario it cannot run.
func pyScenario(s string) (run []string, command string, ok bool) {
	fields := strings.Fields(strings.NewReplacer("`", " ", `"`, " ", "'", " ").Replace(s))
	for _, f := range fields {
		if file, rest, found := strings.Cut(f, "::"); found && strings.HasSuffix(file, ".py") && rest != "" && pyRelPath(file) {
			run = append(run, f)
		}
	}
	if len(run) == 0 && slices.Contains(fields, "pytest") {
		// pytest tests/test_x.py: every test of the files.
		for _, f := range fields {
			if strings.HasSuffix(f, ".py") && pyRelPath(f) {
				run = append(run, f)
			}
		}
	}
	if len(run) > 0 {
		return run, pytestrun.Command(run), true
	}
	for i, f := range fields {
		if !pyInterpreterWord(f) || i+1 >= len(fields) {
			continue
		}
		args := fields[i+1:]
		switch {
		case args[0] == "-m" && len(args) > 1 && args[1] != "pytest" && pyModuleName(args[1]):
			run = append([]string{"--module", args[1]}, args[2:]...)
		case strings.HasSuffix(args[0], ".py") && pyRelPath(args[0]):
			run = append([]string{"--path", args[0]}, args[1:]...)
		default:
			return nil, "", false
		}
		words := []string{"python"}
		if run[0] == "--module" {
			words = append(words, "-m")
		}
		for _, a := range run[1:] {
			words = append(words, shellWord(a))
		}
		return run, strings.Join(words, " "), true
	}
	return nil, "", false
}

// pyInterpreterWord reports whether a scenario's word runs Python: python,
// python3, python3.11, a path ending in one of them.
func pyInterpreterWord(w string) bool {
	b := path.Base(w)
	return b == "python" || strings.HasPrefix(b, "python3") && strings.Trim(b[len("python3"):], ".0123456789") == ""
}

// pyRelPath reports whether p is a clean relative path inside the
// repository, usable in a run's comma-separated file list.
func pyRelPath(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && !strings.HasPrefix(p, "../") && p != ".." && !strings.ContainsAny(p, ",\\")
}

// pyModuleName reports whether m is a dotted Python module name.
func pyModuleName(m string) bool {
	for _, part := range strings.Split(m, ".") {
		if part == "" || !isIdentByte(part[0]) || part[0] >= '0' && part[0] <= '9' || strings.IndexFunc(part, func(r rune) bool { return r > 127 || !isIdentByte(byte(r)) }) >= 0 {
			return false
		}
	}
	return true
}

// provePythonFlow runs the flow's scenario and checks each link; it
// returns the proof, or ok false with the outcome recorded. A flow Needle
// cannot run here (no interpreter, no sandbox) is lexical. Failing to
// remove its run's checkout is its error.
func (val *validator) provePythonFlow(steps []citedStep) (_ *flowProof, ok bool, err error) {
	py := val.vs.pythonInterpreter()
	runner := val.vs.testRunner(val.ctx)
	if py.path == "" || runner == nil {
		why := py.why
		if why == "" {
			why = val.vs.noRunnerCause(val.ctx)
		}
		val.lexical()
		val.v.note("Needle could not run the Python flow here (%s): checked lexically", why)
		return &flowProof{Reach: reachLexical}, true, nil
	}
	run, command, ok := pyScenario(val.v.Proposal.Scenario)
	if !ok {
		val.v.undecide("scenario: Needle proves a Python flow by running its scenario, and %q names none it can run: a pytest test (tests/test_x.py::test_y) or a command (python -m pkg ARGS, python path.py ARGS)", clip(val.v.Proposal.Scenario, 200))
		return nil, false, nil
	}
	var files []string
	for _, s := range steps {
		if !pyRelPath(s.path) {
			val.v.undecide("steps: the path %q cannot be watched in a run", s.path)
			return nil, false, nil
		}
		if !slices.Contains(files, s.path) {
			files = append(files, s.path)
		}
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
	dir, err := rs.ensureCheckout(val.ctx, "")
	if err != nil {
		return nil, false, err
	}
	res := runner.Exec(val.ctx, testrun.ExecSpec{Dir: dir, Argv: pytestrun.ArgvCalls(py.path, files, run),
		Env: append(slices.Clone(py.env), "PYTHONDONTWRITEBYTECODE=1"), Deadline: val.vs.tests.Deadline, MaxOutput: 64 << 20})
	r, status, ok := val.pyFlowRun(res, run, command)
	if !ok {
		return nil, false, nil
	}
	proof := &flowProof{Reach: reachExecuted, Scenario: command, Status: status, DurationMs: res.Duration.Milliseconds(), Python: r.Python}
	if !val.pyFlowLinks(steps, r, command, proof) {
		return nil, false, nil
	}
	deps, err := pyRunFiles(dir, r)
	if err != nil {
		return nil, false, err
	}
	if !val.addRunFiles("scenario", deps) {
		return nil, false, nil
	}
	return proof, true, nil
}

// pyFlowRun reads a scenario's run: ok false records why it tells
// nothing (undecided), or why the test it names did not pass (rejected).
// A command's status is its exit status; a test's, passed.
func (val *validator) pyFlowRun(res *testrun.ExecResult, run []string, command string) (*pytestrun.Result, string, bool) {
	tail := oneLine(printableText(strings.TrimSpace(tailString(string(res.Stderr), 400))))
	switch res.Status {
	case testrun.Passed:
	case testrun.Unavailable:
		val.v.undecide("scenario: Needle cannot run %s here: %s", command, oneLine(clip(res.Reason, 300)))
		return nil, "", false
	default:
		val.v.undecide("scenario: the run of %s did not finish (%s: %s): %s", command, res.Status, oneLine(clip(res.Reason, 200)), tail)
		return nil, "", false
	}
	r, err := pytestrun.Parse(res.Stdout)
	if err != nil {
		val.v.undecide("scenario: the run of %s gave no answer: %v", command, err)
		return nil, "", false
	}
	if r.Missing != "" {
		val.v.undecide("scenario: Python %s cannot import %s, which running %s needs: Needle never installs packages; install %s in the repository's environment, or set python.interpreter", r.Python, r.Missing, command, r.Missing)
		return nil, "", false
	}
	if run[0] == "--module" || run[0] == "--path" {
		return r, fmt.Sprintf("exit %d", r.Exit), true
	}
	for _, id := range run {
		ran := r.Ran(id)
		if len(ran) == 0 {
			val.v.reject("scenario: pytest ran no test for %s when Needle ran it in its sandbox (pytest's exit status %d): %s", id, r.Exit, tail)
			return nil, "", false
		}
		for item, o := range ran {
			if o != pytestrun.Passed {
				val.v.reject("scenario: %s did not pass when Needle ran it in its sandbox (%s %s): %s", id, item, o, tail)
				return nil, "", false
			}
		}
	}
	return r, testrun.Passed.String(), true
}

// pyFlowLinks checks, on the run's calls, that each step entered the next
// from a call site in it, in order, and that the last step's lines ran;
// it fills the proof's Seen and Entered, or rejects.
func (val *validator) pyFlowLinks(steps []citedStep, r *pytestrun.Result, command string, proof *flowProof) bool {
	after := -1
	for i := 0; i+1 < len(steps); i++ {
		a, b := steps[i], steps[i+1]
		f, ok, _ := val.pyDeclsOf(fmt.Sprintf("steps[%d]", i+1), b.path)
		if !ok {
			return false
		}
		at := slices.IndexFunc(r.Calls[after+1:], func(c pytestrun.Call) bool {
			return c.CallerFile == a.path && a.span.Contains(c.CallerLine) && c.CalleeFile == b.path && pyEnters(f, c.CalleeLine, b.span)
		})
		if at < 0 {
			val.v.reject("steps[%d]: the scenario's run (%s) did not enter %s:%d-%d from a call in step %d (%s:%d-%d) after the step before%s",
				i+1, command, b.path, b.span.Start, b.span.End, i, a.path, a.span.Start, a.span.End, pyCallsFrom(r, a))
			return false
		}
		after += at + 1
		c := r.Calls[after]
		proof.Seen = append(proof.Seen, fmt.Sprintf("%s:%d -> %s", c.CallerFile, c.CallerLine, c.Callee))
		proof.Entered = append(proof.Entered, c.Callee)
	}
	last := steps[len(steps)-1]
	if _, ok := r.Executed(last.path, last.span.Start, last.span.End); !ok {
		val.v.reject("steps[%d]: the scenario's run (%s) ran no line of the last step, %s:%d-%d", len(steps)-1, command, last.path, last.span.Start, last.span.End)
		return false
	}
	return true
}

// pyEnters reports whether a function whose code starts at line (its
// first decorator, or its def) is declared in span, or holds it.
func pyEnters(f *pydecl.File, line int, span typecheck.Span) bool {
	if span.Contains(line) {
		return true
	}
	for _, d := range f.Decls {
		if (d.Kind == pydecl.KindFunction || d.Kind == pydecl.KindMethod) && (d.First == line || d.Line == line) && d.First <= span.Start && span.End <= d.End {
			return true
		}
	}
	return false
}

// pyCallsFrom names, for a rejection, what the run did call from step a.
func pyCallsFrom(r *pytestrun.Result, a citedStep) string {
	var out []string
	for _, c := range r.Calls {
		if c.CallerFile == a.path && a.span.Contains(c.CallerLine) && len(out) < 4 {
			out = append(out, fmt.Sprintf("%s:%d -> %s (%s:%d)", c.CallerFile, c.CallerLine, c.Callee, c.CalleeFile, c.CalleeLine))
		}
	}
	if len(out) == 0 {
		return "; it made no call from that step into the steps' files"
	}
	return "; from that step it called " + strings.Join(out, ", ")
}
