package product

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/pydecl"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// Python declarations are proven by Python's own parser: the ast module
// of the repository's interpreter reads the file's content from the
// snapshot (pydecl), in the sandbox, since the interpreter may be the
// repository's own. A symbol "pkg.mod.Class.method" is declared in a file
// when a suffix of its dotted module path is "pkg.mod" and the file
// declares "Class.method" (see pyNames); the cited span is natural as for
// Go (pyNatural). Where no interpreter or no sandbox is at hand, the
// lexical rule stands in, labelled lexical, and the note says why.

// isPython reports whether rel is Python source or a stub.
func isPython(rel string) bool {
	ext := path.Ext(rel)
	return ext == ".py" || ext == ".pyi"
}

// pyDeadline bounds one run of the declarations script.
const pyDeadline = 30 * time.Second

// pySymbolAt proves that the symbol or test subject s is declared in the
// Python file rel at span; handled is false when Python's parser could
// not run here, and the caller falls back to the lexical rule.
func (val *validator) pySymbolAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (at typecheck.Span, ok, handled bool) {
	f, why := val.vs.pyDecls(val.ctx, src)
	if f == nil {
		val.v.note("Python's parser could not read %s here (%s): checked lexically", rel, why)
		return span, false, false
	}
	if f.SyntaxError != nil {
		val.v.reject("%s: %s does not parse as Python %s: %s (line %d)", field, rel, f.Python, f.SyntaxError.Msg, f.SyntaxError.Line)
		return span, false, true
	}
	lines := strings.Split(string(src), "\n")
	var found []pydecl.Decl
	for _, name := range pyNames(s, rel) {
		found = append(found, f.Lookup(name)...)
	}
	if len(found) == 0 {
		// A bare name that no module-level declaration has may name a
		// method, as for Go (lookup): when one class has it.
		var owners []string
		if found, owners = pyMethodsNamed(f, s.Name); len(owners) > 1 {
			val.v.reject("%s: %s %q: several classes of %s have a method of that name (%s): name the class", field, s.Kind, s.Name, rel, strings.Join(owners, ", "))
			return span, false, true
		}
	}
	if s.Kind == subjectTest {
		found = pyTests(found, f, rel)
	}
	if len(found) == 0 {
		what := "declared"
		if s.Kind == subjectTest {
			what = "a test function (pytest's test* in a test_*.py or *_test.py file, or a method test* of a Test* class or a TestCase)"
		}
		val.v.reject("%s: %s %q is not %s in %s (Python %s's ast)", field, s.Kind, s.Name, what, rel, f.Python)
		return span, false, true
	}
	for _, d := range found {
		if at, ok := pyNatural(d, d.Tail(lines), span); ok {
			val.v.note("%s %q: declared in %s:%d-%d, as Python %s's ast reads it", s.Kind, s.Name, rel, d.First, d.End, f.Python)
			return at, true, true
		}
	}
	d := found[0]
	val.v.reject("%s: %s %q is not declared in %s:%d-%d; its declaration is %s:%d-%d (%d-%d with its decorators; Python %s's ast)",
		field, s.Kind, s.Name, rel, span.Start, span.End, rel, d.Line, d.End, d.First, d.End, f.Python)
	return span, false, true
}

// pyMethodsNamed returns the methods named name (a bare name) and the
// classes they are methods of.
func pyMethodsNamed(f *pydecl.File, name string) ([]pydecl.Decl, []string) {
	name = strings.TrimSuffix(strings.TrimSpace(name), "()")
	if strings.ContainsAny(name, ".:[") {
		return nil, nil
	}
	var found []pydecl.Decl
	var owners []string
	for _, d := range f.Decls {
		owner, method, ok := strings.Cut(d.Name, ".")
		if ok && method == name && d.Kind == pydecl.KindMethod {
			found = append(found, d)
			if !slices.Contains(owners, owner) {
				owners = append(owners, owner)
			}
		}
	}
	return found, owners
}

// pyNatural is natural's rule for a Python declaration: the span starts
// at the def, class or assignment line or at or inside its decorators
// (recorded from the first), and ends on its last line, on the last of
// the comments trailing its block (tail), or one past either; or it ends
// inside it, on or after the def line, citing only its beginning (the
// whole declaration is recorded).
func pyNatural(d pydecl.Decl, tail int, span typecheck.Span) (typecheck.Span, bool) {
	start, end := span.Start, span.End
	switch {
	case start == d.Line:
	case d.First <= start && start < d.Line:
		start = d.First
	default:
		return span, false
	}
	switch {
	case end == d.End || end == d.End+1:
		end = d.End
	case end == tail || end == tail+1:
		end = tail
	case end >= d.Line && end < d.End && end >= span.Start:
		end = d.End
	default:
		return span, false
	}
	return typecheck.Span{Start: start, End: end}, true
}

// pyNames are the names inside the file that the subject's name may mean:
// the whole name, and each tail of it whose head is a suffix of the file's
// dotted module path (pkg/mod.py is pkg.mod, pkg/__init__.py is pkg). The
// forms models and tools write are read as Python means them: a pytest
// node id (tests/test_x.py::TestC::test_y[param]), module:qualname, a
// __qualname__'s <locals>, a trailing "()".
func pyNames(s Subject, rel string) []string {
	name := strings.TrimSuffix(strings.TrimSpace(s.Name), "()")
	if file, rest, ok := strings.Cut(name, "::"); ok {
		if file != rel && !strings.HasSuffix(rel, "/"+file) {
			return nil
		}
		name = strings.ReplaceAll(rest, "::", ".")
	}
	name = pyParam.Regexp().ReplaceAllString(name, "")
	name = strings.ReplaceAll(strings.ReplaceAll(name, ":", "."), ".<locals>", "")
	parts := strings.Split(name, ".")
	module := strings.Split(strings.TrimSuffix(strings.TrimSuffix(rel, path.Ext(rel)), "/__init__"), "/")
	var out []string
	for k := 0; k < len(parts); k++ {
		if pySuffix(module, parts[:k]) {
			out = append(out, strings.Join(parts[k:], "."))
		}
	}
	return out
}

// pyParam is a pytest parametrization id at the end of a node id.
var pyParam = lazyregexp.New(`\[[^\]]*\]$`)

// pySuffix reports whether head is a suffix of the module path's parts.
func pySuffix(module, head []string) bool {
	if len(head) > len(module) {
		return false
	}
	tail := module[len(module)-len(head):]
	for i := range head {
		if tail[i] != head[i] {
			return false
		}
	}
	return true
}

// pyTests keeps the declarations that pytest or unittest would collect as
// tests with their default settings: a function test* at module level of
// a test_*.py or *_test.py file, or a method test* of a class Test* there
// (without __init__), or of a class deriving from a *TestCase anywhere.
func pyTests(found []pydecl.Decl, f *pydecl.File, rel string) []pydecl.Decl {
	base := path.Base(rel)
	pytestFile := strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py") || strings.HasSuffix(base, "_test.py")
	var out []pydecl.Decl
	for _, d := range found {
		owner, name, nested := strings.Cut(d.Name, ".")
		if !nested {
			if d.Kind == pydecl.KindFunction && pytestFile && strings.HasPrefix(d.Name, "test") {
				out = append(out, d)
			}
			continue
		}
		if d.Kind != pydecl.KindMethod || strings.Contains(name, ".") || !strings.HasPrefix(name, "test") {
			continue
		}
		for _, c := range f.Lookup(owner) {
			if c.Kind != pydecl.KindClass {
				continue
			}
			if pytestFile && strings.HasPrefix(owner, "Test") && len(f.Lookup(owner+".__init__")) == 0 || testCaseBase(c.Bases) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func testCaseBase(bases []string) bool {
	for _, b := range bases {
		if strings.HasSuffix(b, "TestCase") {
			return true
		}
	}
	return false
}

// pyDecls runs the declarations script on src with the repository's
// interpreter in the sandbox, once per content; nil and why when it
// cannot run here.
func (vs *validators) pyDecls(ctx context.Context, src []byte) (*pydecl.File, string) {
	interp, env, why := vs.pythonInterpreter()
	if interp == "" {
		return nil, why
	}
	r := vs.testRunner(ctx)
	if r == nil {
		return nil, vs.noRunnerCause(ctx)
	}
	key := interp + "\x00" + fileDigest(src)
	vs.mu.Lock()
	f := vs.pyFiles[key]
	vs.mu.Unlock()
	if f != nil {
		return f, ""
	}
	res := r.Exec(ctx, testrun.ExecSpec{Dir: vs.repo.Root(), Argv: pydecl.Argv(interp), Env: env, Stdin: src, Deadline: pyDeadline, MaxOutput: 16 << 20})
	if res.Status != testrun.Passed {
		return nil, fmt.Sprintf("%s: %s %s", interp, res.Reason, strings.TrimSpace(tailString(string(res.Stderr), 512)))
	}
	f, err := pydecl.Parse(res.Stdout, strings.Count(string(src), "\n")+1)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", interp, err)
	}
	vs.mu.Lock()
	if vs.pyFiles == nil {
		vs.pyFiles = map[string]*pydecl.File{}
	}
	vs.pyFiles[key] = f
	vs.mu.Unlock()
	return f, ""
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// pythonInterpreter is the repository's Python: the one configured
// (python.interpreter), else the repository's .venv, else python3 on
// PATH; "" and why when there is none. env is what it runs with: a PATH
// that finds its own directory first, no bytecode written, UTF-8 I/O, and
// pyenv's root when the interpreter is a pyenv shim.
func (vs *validators) pythonInterpreter() (interp string, env []string, why string) {
	switch {
	case vs.tests.Python != "":
		interp = vs.tests.Python
	case executable(filepath.Join(vs.repo.Root(), ".venv", "bin", "python3")):
		interp = filepath.Join(vs.repo.Root(), ".venv", "bin", "python3")
	case executable(filepath.Join(vs.repo.Root(), ".venv", "bin", "python")):
		interp = filepath.Join(vs.repo.Root(), ".venv", "bin", "python")
	default:
		p, err := exec.LookPath("python3")
		if err == nil {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			return "", nil, "no Python interpreter: no .venv in the repository, no python3 on PATH (set python.interpreter)"
		}
		interp = p
	}
	env = []string{"PATH=" + filepath.Dir(interp) + ":/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "LANG=C.UTF-8"}
	if shims := filepath.Dir(interp); filepath.Base(shims) == "shims" {
		root := os.Getenv("PYENV_ROOT")
		if root == "" {
			root = filepath.Dir(shims)
		}
		env = append(env, "PYENV_ROOT="+root)
		if v := os.Getenv("PYENV_VERSION"); v != "" {
			env = append(env, "PYENV_VERSION="+v)
		}
	}
	return interp, env, ""
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
