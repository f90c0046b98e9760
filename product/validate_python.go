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
	"unicode/utf8"

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
// Python file rel at span; handled is false when Python's parser cannot
// run here at all, and the caller falls back to the lexical rule. A parser
// that ran and did not answer, or answered against the source, leaves the
// proposal undecided: it is never certified on a weaker proof.
func (val *validator) pySymbolAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (at typecheck.Span, ok, handled bool) {
	f, handled := val.pyParse(field, rel, src)
	if f == nil {
		return span, false, handled
	}
	lines := strings.Split(string(src), "\n")
	found, ok := val.pyFind(field, s, rel, f, lines)
	if !ok {
		return span, false, true
	}
	for _, d := range found {
		for _, c := range append(pyOwners(f, d), d) {
			if n, why := pyAgrees(c, lines); why != "" {
				val.v.undecide("%s: the interpreter's answer for %s does not match the source at %s:%d (%s)", field, c.Name, rel, n, why)
				return span, false, true
			}
		}
	}
	for _, d := range found {
		if at, ok := pyNatural(d, d.Tail(lines), pyBlankAfter(lines, d.Tail(lines)), span); ok {
			val.v.note("%s %q: declared in %s:%d-%d, as Python %s's ast reads it", s.Kind, s.Name, rel, d.First, d.End, f.Python)
			if s.Kind == subjectTest {
				val.v.note("static: that pytest or unittest collects %q was judged by their default collection rules, not by running them", s.Name)
			}
			return at, true, true
		}
	}
	// X = Y binds X to what Y is bound to there: a def or class before it.
	for _, d := range found {
		if target, ok := pyAliased(f, d); ok {
			if at, ok := pyNatural(target, target.Tail(lines), pyBlankAfter(lines, target.Tail(lines)), span); ok {
				val.v.note("static: that %s is %s (%s = %s on line %d of %s) was judged from the source, not by importing it", s.Name, target.Name, d.Name, d.Alias, d.Line, rel)
				return at, true, true
			}
		}
	}
	d := found[0]
	val.v.reject("%s: %s %q is not declared in %s:%d-%d; its declaration is %s:%d-%d (%d-%d with its decorators; Python %s's ast)",
		field, s.Kind, s.Name, rel, span.Start, span.End, rel, d.Line, d.End, d.First, d.End, f.Python)
	return span, false, true
}

// pyParse reads rel (content src) with Python's parser. It returns the
// parsed file, or nil with handled false when the parser cannot run here
// (the caller falls back to the lexical rule, and the note says why), or
// nil with handled true when the proposal is rejected (the repository's
// Python does not parse the file) or undecided (the parser ran and gave
// no answer, or another Python refused the file).
func (val *validator) pyParse(field, rel string, src []byte) (f *pydecl.File, handled bool) {
	if loneCR(src) {
		val.v.note("%s has a carriage return that ends no line: Python counts it as a line break, Needle's lines do not; checked lexically", rel)
		return nil, false
	}
	r := val.vs.pyDecls(val.ctx, src)
	switch {
	case r.fallback != "":
		val.v.note("Python's parser could not read %s here (%s): checked lexically", rel, r.fallback)
		return nil, false
	case r.undecided != "":
		val.v.undecide("%s: Python's parser gave no answer for %s: %s", field, rel, r.undecided)
		return nil, true
	}
	f = r.file
	if f.SyntaxError != nil {
		msg := printableText(headString(f.SyntaxError.Msg, 200))
		if !r.own {
			val.v.undecide("%s: Python %s (python3 on PATH, not the repository's) does not parse %s: %s (line %d); set python.interpreter to the repository's Python",
				field, f.Python, rel, msg, f.SyntaxError.Line)
			return nil, true
		}
		val.v.reject("%s: %s does not parse as Python %s: %s (line %d)", field, rel, f.Python, msg, f.SyntaxError.Line)
		return nil, true
	}
	return f, true
}

// pyFind returns the declarations of f the subject names, rejecting the
// proposal (ok false) when there are none.
func (val *validator) pyFind(field string, s Subject, rel string, f *pydecl.File, lines []string) (found []pydecl.Decl, ok bool) {
	names, param, in := pyNames(s, rel)
	switch in {
	case nodeOther:
		val.v.reject("%s: the node id %q names another file than %s", field, s.Name, rel)
		return nil, false
	case nodeBelow:
		val.v.undecide("%s: the node id %q is relative to a directory below the repository's root; whether pytest's rootdir is there is not checked", field, s.Name)
		return nil, false
	}
	for _, name := range names {
		found = append(found, pyRuntimeDecls(f.Lookup(name))...)
	}
	if len(found) == 0 && s.Kind == subjectSymbol {
		beyond, note, undecided := val.pyBeyond(f, s, rel, names)
		if undecided != "" {
			val.v.undecide("%s: %s %q is not declared in %s as such, and the source cannot tell what it names: %s", field, s.Kind, s.Name, rel, undecided)
			return nil, false
		}
		if note != "" {
			val.v.note("%s", note)
		}
		found = beyond
	}
	if len(found) == 0 && s.Kind == subjectSymbol {
		// A bare name that no module-level declaration has may name a
		// method, as for Go (lookup): when one class has it.
		var owners []string
		if found, owners = pyMethodsNamed(f, s.Name); len(owners) > 1 {
			val.v.reject("%s: %s %q: several classes of %s have a method of that name (%s): name the class", field, s.Kind, s.Name, rel, strings.Join(owners, ", "))
			return nil, false
		}
	}
	what := "declared"
	if s.Kind == subjectTest {
		found = pyTests(found, f, rel, lines)
		what = "a test function (pytest's test* in a test_*.py or *_test.py file, or a method test* of a Test* class there or of a TestCase in a test*.py file)"
		if param && len(found) > 0 {
			if found = slices.DeleteFunc(found, func(d pydecl.Decl) bool { return !pyParametrized(d, f, lines) }); len(found) == 0 {
				val.v.undecide("%s: the node id %q names a parameter set, and no parametrize mark decorates the test or its class (a parametrized fixture may make one: not checked)", field, s.Name)
				return nil, false
			}
		}
	}
	if len(found) == 0 {
		val.v.reject("%s: %s %q is not %s in %s (Python %s's ast)", field, s.Kind, s.Name, what, rel, f.Python)
		return nil, false
	}
	return found, true
}

// pyOwners are the declarations enclosing d by its name (C of C.m, f and
// f.g of f.g.h) that the interpreter reports around it, to be checked
// too; one it does not report is a declaration at line 0, which pyAgrees
// refuses.
func pyOwners(f *pydecl.File, d pydecl.Decl) []pydecl.Decl {
	var out []pydecl.Decl
	parts := strings.Split(d.Name, ".")
	for k := 1; k < len(parts); k++ {
		owner := strings.Join(parts[:k], ".")
		found := slices.DeleteFunc(f.Lookup(owner), func(o pydecl.Decl) bool {
			return o.Kind == pydecl.KindVariable || o.Line >= d.Line || o.End < d.End
		})
		if len(found) == 0 {
			found = []pydecl.Decl{{Name: owner, Kind: pydecl.KindClass}}
		}
		out = append(out, found[0])
	}
	return out
}

// loneCR reports whether src has a carriage return not followed by a
// newline.
func loneCR(src []byte) bool {
	for i, c := range src {
		if c == '\r' && (i+1 == len(src) || src[i+1] != '\n') {
			return true
		}
	}
	return false
}

// pyAgrees checks a declaration the interpreter reported against the
// source itself, since the interpreter may be the repository's: its line
// defines its name (def, async def, class, or an assignment binding it),
// its first decorator line is a decorator, and its block ends where it
// says (no declaration at its own or an outer level inside it, and the
// next statement after it at its level or outside). It returns the line
// and what is wrong, or "".
func pyAgrees(d pydecl.Decl, lines []string) (int, string) {
	line := func(n int) string { return strings.TrimRight(lines[n-1], "\r") }
	if d.Line < 1 || d.End > len(lines) {
		return d.Line, "not in the interpreter's answer, or past the end"
	}
	name := d.Name[strings.LastIndex(d.Name, ".")+1:]
	head := strings.TrimSpace(line(d.Line))
	switch d.Kind {
	case pydecl.KindClass:
		if !pyHead(head, "class "+name) {
			return d.Line, "no class " + name
		}
	case pydecl.KindFunction, pydecl.KindMethod:
		if !pyHead(head, "def "+name) && !pyHead(head, "async def "+name) {
			return d.Line, "no def " + name
		}
	case pydecl.KindVariable:
		if !assigns(head, name) {
			return d.Line, "no assignment to " + name
		}
		return 0, ""
	}
	if d.First < d.Line && !strings.HasPrefix(strings.TrimSpace(line(d.First)), "@") {
		return d.First, "no decorator"
	}
	indent := pydecl.Indent(line(d.Line))
	for n := d.Line + 1; n <= d.End; n++ {
		l := line(n)
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") && pydecl.Indent(l) <= indent && (pyHead(t, "def") || pyHead(t, "async def") || pyHead(t, "class") || strings.HasPrefix(t, "@")) {
			return n, "another declaration inside the block"
		}
	}
	for n := d.End + 1; n <= len(lines); n++ {
		l := line(n)
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if pydecl.Indent(l) > indent {
			return n, "the block goes on"
		}
		break
	}
	return 0, ""
}

// pyHead reports whether a stripped line starts with keyword and name
// followed by what may follow a name there.
func pyHead(line, prefix string) bool {
	rest, ok := strings.CutPrefix(line, prefix)
	return ok && (rest == "" || strings.ContainsRune(" \t(:[", rune(rest[0])))
}

// assigns reports whether the statement line binds name: an assignment
// (x = ..., x = y = ..., a, (b, *c) = ..., x: T = ..., x: T) whose
// targets, every part before the last "=" (or the annotated name), name
// it; an attribute or a subscript target binds no name.
func assigns(line, name string) bool {
	parts := splitAssign(line)
	if len(parts) == 1 {
		target, _, ok := strings.Cut(parts[0], ":")
		return ok && strings.TrimSpace(target) == name
	}
	for i, t := range parts[:len(parts)-1] {
		if target, _, ok := strings.Cut(t, ":"); ok && i == 0 && len(parts) == 2 {
			t = target // x: T = value
		}
		if bindsName(t, name) {
			return true
		}
	}
	return false
}

// bindsName reports whether the assignment target t (a name, or names in
// a tuple or list, starred or not) binds name.
func bindsName(t, name string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] == '.' || t[i] == '[' && i > 0 && strings.ContainsRune(")]_", rune(t[i-1])) ||
			t[i] == '[' && i > 0 && isIdentByte(t[i-1]) || t[i] == '(' && i > 0 && isIdentByte(t[i-1]) {
			return false // an attribute, a subscript, a call
		}
	}
	for _, f := range strings.FieldsFunc(t, func(r rune) bool { return strings.ContainsRune(" \t,()[]*", r) }) {
		if f == name {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// splitAssign splits a line at each "=" that is an assignment's, not part
// of ==, !=, <=, >=, :=, an augmented operator or a keyword argument
// inside brackets.
func splitAssign(line string) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '#':
			return append(parts, line[from:i])
		case '=':
			prev, next := byte(0), byte(0)
			if i > 0 {
				prev = line[i-1]
			}
			if i+1 < len(line) {
				next = line[i+1]
			}
			if depth == 0 && next != '=' && !strings.ContainsRune("=!<>:+-*/%&|^@", rune(prev)) {
				parts = append(parts, line[from:i])
				from = i + 1
			} else if next == '=' {
				i++
			}
		}
	}
	return append(parts, line[from:])
}

// pyParametrized reports whether the test d, or its class, is decorated
// with a parametrize mark (pytest.mark.parametrize): only then does a
// node id's [id] name one of its runs.
func pyParametrized(d pydecl.Decl, f *pydecl.File, lines []string) bool {
	marked := func(d pydecl.Decl) bool {
		for _, dec := range d.Decorators {
			if (strings.HasSuffix(dec, ".parametrize") || dec == "parametrize") && strings.Contains(pyLines(lines, d.First, d.Line), "parametrize") {
				return true
			}
		}
		return false
	}
	if marked(d) {
		return true
	}
	if owner, _, ok := strings.Cut(d.Name, "."); ok {
		for _, c := range f.Lookup(owner) {
			if marked(c) {
				return true
			}
		}
	}
	return false
}

// pyLines is lines from..to (1-based, inclusive, clipped) of the source.
func pyLines(lines []string, from, to int) string {
	from, to = max(from, 1), min(to, len(lines))
	if from > to {
		return ""
	}
	return strings.Join(lines[from-1:to], "\n")
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
// the comments trailing its block (tail), one past either, or on a blank
// line after them before the next code (gap: PEP 8 puts two between
// top-level definitions); or it ends inside it, on or after the def line,
// citing only its beginning (the whole declaration is recorded).
func pyNatural(d pydecl.Decl, tail, gap int, span typecheck.Span) (typecheck.Span, bool) {
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
	case end == tail || end == tail+1 || end > tail && end <= gap:
		end = tail
	case end >= d.Line && end < d.End && end >= span.Start:
		end = d.End
	default:
		return span, false
	}
	return typecheck.Span{Start: start, End: end}, true
}

// pyAliased is the def or class the variable d (X = Y) aliases: the last
// binding of Y in d's scope before d, when it is a def or a class.
func pyAliased(f *pydecl.File, d pydecl.Decl) (pydecl.Decl, bool) {
	if d.Kind != pydecl.KindVariable || d.Alias == "" {
		return pydecl.Decl{}, false
	}
	scope, _, _ := cutLast(d.Name, ".")
	name := d.Alias
	if scope != d.Name {
		name = scope + "." + d.Alias
	}
	var last pydecl.Decl
	found := false
	for _, t := range f.Lookup(name) {
		if t.Line < d.Line && (!found || t.Line > last.Line) {
			last, found = t, true
		}
	}
	return last, found && last.Kind != pydecl.KindVariable
}

// pyBlankAfter is the last of the blank lines right after line n (n when
// the next line is not blank).
func pyBlankAfter(lines []string, n int) int {
	for n < len(lines) && strings.TrimSpace(lines[n]) == "" {
		n++
	}
	return n
}

// pyNames are the names inside the file that the subject's name may mean:
// the whole name, and each tail of it whose head is a suffix of the file's
// dotted module path (pkg/mod.py is pkg.mod, pkg/__init__.py is pkg). The
// forms models and tools write are read as Python means them: a pytest
// node id (tests/test_x.py::TestC::test_y[param], its file being rel
// itself; param reports the [param]), module:qualname, a __qualname__'s
// <locals>, a trailing "()". in says how a node id's file is rel.
func pyNames(s Subject, rel string) (names []string, param bool, in nodeFile) {
	name := strings.TrimSuffix(strings.TrimSpace(s.Name), "()")
	in = nodeSame
	if file, rest, ok := strings.Cut(name, "::"); ok && !isPython(file) {
		// TestC::test_y: a node id without its file, as a model may
		// write one; :: parts are qualifiers.
		name = strings.ReplaceAll(name, "::", ".")
	} else if ok {
		switch {
		case file == rel:
		case strings.HasSuffix(rel, "/"+file):
			in = nodeBelow
		default:
			return nil, false, nodeOther
		}
		name = strings.ReplaceAll(rest, "::", ".")
	}
	if s.Kind == subjectTest {
		stripped := pyParam.Regexp().ReplaceAllString(name, "")
		param, name = stripped != name, stripped
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, ":", "."), ".<locals>", "")
	parts := strings.Split(name, ".")
	module := strings.Split(strings.TrimSuffix(strings.TrimSuffix(rel, path.Ext(rel)), "/__init__"), "/")
	for k := 0; k < len(parts); k++ {
		if hasSuffix(module, parts[:k]) {
			names = append(names, strings.Join(parts[k:], "."))
		}
	}
	return names, param, in
}

// nodeFile is how a pytest node id's file is the cited one.
type nodeFile int

const (
	nodeSame  nodeFile = iota // the same path, or no node id
	nodeBelow                 // a path relative to a directory below the repository's root (a pytest rootdir there?)
	nodeOther                 // another file
)

// pyParam is a pytest parametrization id at the end of a node id.
var pyParam = lazyregexp.New(`\[[^\]]*\]$`)

// pyTests keeps the declarations that pytest or unittest would collect as
// tests with their default settings: a function test* at module level of
// a test_*.py or *_test.py file, or a method test* of a class Test* there
// (without __init__), or of a class deriving from a *TestCase in such a
// file or in one unittest's discovery finds (test*.py).
func pyTests(found []pydecl.Decl, f *pydecl.File, rel string, lines []string) []pydecl.Decl {
	base := path.Base(rel)
	pytestFile := strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py") || strings.HasSuffix(base, "_test.py")
	unittestFile := strings.HasPrefix(base, "test") && strings.HasSuffix(base, ".py")
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
			if pytestFile && strings.HasPrefix(owner, "Test") && len(f.Lookup(owner+".__init__")) == 0 || (pytestFile || unittestFile) && testCaseBase(c.Bases) && strings.Contains(pyLines(lines, c.Line, c.Line+4), "TestCase") {
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

// pyResult is what running the declarations script on a file gave: the
// declarations; or fallback, why Python's parser cannot run here at all
// (no interpreter, no sandbox), when the lexical rule stands in; or
// undecided, why it ran and gave no answer. own is true when the
// interpreter is the repository's (its .venv) or the configured one, so a
// syntax error is the repository's Python's verdict.
type pyResult struct {
	file      *pydecl.File
	fallback  string
	undecided string
	own       bool
}

// maxPyFiles bounds the memo of declarations (pyDecls).
const maxPyFiles = 1024

// pyDecls runs the declarations script on src with the repository's
// interpreter in the sandbox, once per interpreter and content.
func (vs *validators) pyDecls(ctx context.Context, src []byte) pyResult {
	py := vs.pythonInterpreter()
	if py.path == "" {
		return pyResult{fallback: py.why}
	}
	r := vs.testRunner(ctx)
	if r == nil {
		return pyResult{fallback: vs.noRunnerCause(ctx)}
	}
	key := py.key + "\x00" + fileDigest(src)
	vs.mu.Lock()
	f := vs.pyFiles[key]
	vs.mu.Unlock()
	if f != nil {
		return pyResult{file: f, own: py.own}
	}
	res := r.Exec(ctx, testrun.ExecSpec{Dir: vs.repo.Root(), Argv: pydecl.Argv(py.path), Env: py.env, Stdin: src, Deadline: pyDeadline, MaxOutput: 16 << 20})
	why := fmt.Sprintf("%s: %s %s", py.path, res.Reason, printableText(strings.TrimSpace(tailString(string(res.Stderr), 512))))
	switch res.Status {
	case testrun.Passed:
	case testrun.Unavailable:
		return pyResult{fallback: why}
	default:
		return pyResult{undecided: why}
	}
	f, err := pydecl.Parse(res.Stdout, lineCount(src))
	if err != nil {
		return pyResult{undecided: fmt.Sprintf("%s: %v", py.path, err)}
	}
	vs.mu.Lock()
	if vs.pyFiles == nil || len(vs.pyFiles) >= maxPyFiles {
		vs.pyFiles = map[string]*pydecl.File{}
	}
	vs.pyFiles[key] = f
	vs.mu.Unlock()
	return pyResult{file: f, own: py.own}
}

// headString is s cut to its first n bytes, at a rune boundary.
func headString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// tailString is s cut to its last n bytes.
func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// python is the interpreter that reads Python source: its path, the
// environment it runs with, what its answers depend on besides the source
// (key), and whether it is the repository's own or the configured one.
type python struct {
	path, key, why string
	env            []string
	own            bool
}

// pythonInterpreter is the repository's Python: the one configured
// (python.interpreter), else the repository's .venv when its python is
// an interpreter outside the repository (a venv's link to its base
// Python, not a file the repository holds), else python3 on PATH; path is
// "" and why says so when there is none. It runs with the system's PATH
// (its own directory last), and with PYENV_VERSION when set: a pyenv shim
// picks the version by it or by the repository's .python-version, so both
// are in the key.
func (vs *validators) pythonInterpreter() python {
	root := vs.repo.Root()
	var py python
	switch {
	case vs.tests.Python != "":
		py.path, py.own = vs.tests.Python, true
	default:
		for _, name := range []string{"python3", "python"} {
			p := filepath.Join(root, ".venv", "bin", name)
			if real, err := filepath.EvalSymlinks(p); err == nil && executable(real) && !inside(root, real) {
				// Run by its real path: so no pyvenv.cfg of the
				// repository's tells it where its standard library is.
				py.path, py.own = real, true
				break
			}
		}
	}
	if py.path == "" {
		p, err := exec.LookPath("python3")
		if err == nil {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			py.why = "no Python interpreter: no .venv in the repository with an interpreter outside it, no python3 on PATH (set python.interpreter)"
			return py
		}
		py.path = p
	}
	py.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:" + filepath.Dir(py.path), "LANG=C.UTF-8"}
	version := os.Getenv("PYENV_VERSION")
	if version != "" {
		py.env = append(py.env, "PYENV_VERSION="+version)
	}
	pin, _ := os.ReadFile(filepath.Join(root, ".python-version"))
	py.key = py.path + "\x00" + version + "\x00" + string(pin)
	return py
}

// executable reports whether p is a regular file someone may execute.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
