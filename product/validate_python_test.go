package product

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// pythonNetworkx is python3-networkx of Debian 12 (bookworm), 2.8.8: a
// library that ships its pytest suite.
var pythonNetworkx = testenv.Deb{Package: "python3-networkx", Version: "2.8.8-1", SHA256: "69888603d1b54696f5c3d02d05527628d2d18661d845109a62fe24aff241aa7b"}

// mustPythonRepo is a git repository holding the Python packages of the
// Debian packages debs at its root (click/, networkx/, ...), as a
// repository of Python source holds them.
func mustPythonRepo(tb testing.TB, debs ...testenv.Deb) string {
	tb.Helper()
	repo := filepath.Join(tb.TempDir(), "py")
	for _, d := range debs {
		testenv.CopyTree(tb, testenv.PythonPackageDir(testenv.Unpacked(tb, d)), repo)
	}
	MustRun(tb, repo, "git", "init", "-q")
	MustRun(tb, repo, "git", "add", "-A")
	MustRun(tb, repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "py")
	return repo
}

// TestValidate_PythonDeclarations proves where click's and networkx's
// declarations lie with Python's own parser, in the sandbox, and judges
// it by Python's runtime: every class, function and method inspect
// locates in click/core.py is certified at its lines, named as Python
// writes it, and rejected from the line before it or under another class.
func TestValidate_PythonDeclarations(t *testing.T) {
	repo := mustPythonRepo(t, testenv.PythonClick, pythonNetworkx)
	te := MustEngine(t, repo)
	python := testenv.Python3(t)
	located := testenv.InspectDecls(t, python, repo, []string{filepath.Join(repo, "click", "core.py")})
	if len(located) < 100 {
		t.Fatalf("inspect located %d declarations in click/core.py", len(located))
	}
	for i, l := range located {
		if l.End-l.Start+1 > MaxSpanLines {
			continue // no proposal cites so much
		}
		name := "click.core." + l.Name
		if i%3 == 1 {
			name = l.Name
		}
		res := te.propose(locProposal("symbol", name, "click/core.py", l.Start, l.End))
		if res.Status != "certified" || res.Level != "ast" {
			t.Errorf("%s at %d-%d: %s %s %v", name, l.Start, l.End, res.Status, res.Level, res.Reasons)
		}
		if i%10 == 0 {
			te.checkVerdict(t, locProposal("symbol", name, "click/core.py", l.Start-1, l.End), "rejected", "is not declared in click/core.py")
		}
	}

	invoke, _ := declOf(t, located, "Command.invoke")
	for _, name := range []string{"click.core.Command.invoke", "core.Command.invoke", "click.core:Command.invoke", "Command.invoke()"} {
		te.checkVerdict(t, locProposal("symbol", name, "click/core.py", invoke.Start, invoke.End), "certified", name)
	}
	te.checkVerdict(t, locProposal("symbol", "Group.invoke", "click/core.py", invoke.Start, invoke.End), "rejected", "is not declared in click/core.py")
	// click.decorators imports Command from .core: at runtime it is the same
	// class (a re-export); click.parser binds no Command.
	te.checkVerdict(t, locProposal("symbol", "click.decorators.Command.invoke", "click/core.py", invoke.Start, invoke.End), "certified", "a re-export by a plain module")
	te.checkVerdict(t, locProposal("symbol", "click.parser.Command.invoke", "click/core.py", invoke.Start, invoke.End), "rejected", "is not declared")
	// The signature alone locates the whole method.
	res := te.checkVerdict(t, locProposal("symbol", "Command.invoke", "click/core.py", invoke.Start, invoke.Start), "certified", "signature only")
	if body := te.artifactBody(t, res.ArtifactID); !strings.Contains(body, fmt.Sprintf(`"end_line":%d`, invoke.End)) || !strings.Contains(body, fmt.Sprintf(`"start_line":%d`, invoke.Start)) {
		t.Errorf("the whole declaration is not recorded: %s", body)
	}
	// A bare method name, as for Go: the one class's, or none when several have it.
	te.checkVerdict(t, locProposal("symbol", "invoke", "click/core.py", invoke.Start, invoke.End), "rejected", "several classes of click/core.py have a method of that name")
	ensure, _ := declOf(t, located, "Context.ensure_object")
	te.checkVerdict(t, locProposal("symbol", "ensure_object", "click/core.py", ensure.Start, ensure.End), "certified", "a bare method name")
	path, _ := declOf(t, located, "Context.command_path")
	te.checkVerdict(t, locProposal("symbol", "Context.command_path", "click/core.py", path.Start, path.End), "certified", "a property")
	te.checkVerdict(t, locProposal("symbol", "Context.command_path", "click/core.py", path.Start+1, path.End), "certified", "a property, without its decorator")
	init, _ := declOf(t, located, "Context.__init__")
	te.checkVerdict(t, locProposal("symbol", "click.core.Context.__init__", "click/core.py", init.Start, init.End), "certified", "__init__")

	// A nested function, by either name Python gives it.
	outer := lineWith(t, repo, "click/decorators.py", "def pass_context(")
	inner := lineWith(t, repo, "click/decorators.py", "    def new_func(")
	for _, name := range []string{"pass_context.new_func", "click.decorators.pass_context.<locals>.new_func"} {
		te.checkVerdict(t, locProposal("symbol", name, "click/decorators.py", inner, inner+1), "certified", name)
	}
	te.checkVerdict(t, locProposal("symbol", "pass_context", "click/decorators.py", inner, inner+1), "rejected", "is not declared in click/decorators.py:")
	te.checkVerdict(t, locProposal("symbol", "pass_context", "click/decorators.py", outer, outer), "certified", "a decorated module function's signature")
}

// TestValidate_PythonTests locates pytest's tests in networkx's suite: a
// method test* of a class Test* in a test_*.py file, by pytest's node id
// (its file being the cited one) or a qualified name, and a parameter
// set's node id for a parametrized test; not its setup_class, nor a
// helper function. A node id relative to a directory below the root, or
// with a parameter set of a test no mark parametrizes, is undecided.
func TestValidate_PythonTests(t *testing.T) {
	repo := mustPythonRepo(t, pythonNetworkx)
	te := MustEngine(t, repo)
	file := "networkx/algorithms/tests/test_cycles.py"
	start := lineWith(t, repo, file, "    def test_simple_cycles(self):")
	end := lineWith(t, repo, file, "    def test_simple_cycles_graph(self):") - 2
	for _, name := range []string{file + "::TestCycles::test_simple_cycles", "TestCycles.test_simple_cycles", "TestCycles::test_simple_cycles"} {
		res := te.checkVerdict(t, locProposal("test", name, file, start, end), "certified", name)
		if notes := te.certificateNotes(t, res.CertificateID); !strings.Contains(notes, "static: that pytest or unittest collects") {
			t.Errorf("the collection rule is not labelled static: %s", notes)
		}
	}
	te.checkVerdict(t, locProposal("test", "test_cycles.py::TestCycles::test_simple_cycles", file, start, end), "undecided", "relative to a directory below the repository's root")
	te.checkVerdict(t, locProposal("test", "networkx/algorithms/tests/test_cuts.py::TestCycles::test_simple_cycles", file, start, end), "rejected", "names another file")
	te.checkVerdict(t, locProposal("test", file+"::TestCycles::test_simple_cycles[G0]", file, start, end), "undecided", "no parametrize mark decorates the test")
	setup := lineWith(t, repo, file, "    def setup_class(cls):")
	te.checkVerdict(t, locProposal("test", "TestCycles.setup_class", file, setup, setup), "rejected", "is not a test function")
	helper := lineWith(t, repo, file, "def assert_basis_equal(")
	te.checkVerdict(t, locProposal("test", "assert_basis_equal", file, helper, helper), "rejected", "is not a test function")
	te.checkVerdict(t, locProposal("symbol", "assert_basis_equal", file, helper, helper), "certified", "a helper is a symbol")

	chordal := "networkx/algorithms/tests/test_chordal.py"
	mark := lineWith(t, repo, chordal, "    @pytest.mark.parametrize(\"G\", (nx.DiGraph(), nx.MultiGraph(), nx.MultiDiGraph()))")
	te.checkVerdict(t, locProposal("test", chordal+"::TestMCS::test_is_chordal_not_implemented[G1]", chordal, mark, mark+1), "certified", "a parameter set of a parametrized test")
	// needle stats counts them as proofs by Python's parser, not go/types.
	proofs, err := te.store.proofCounts(context.Background())
	if err != nil || proofs[proofParser] != 5 || proofs[proofTypes] != 0 {
		t.Errorf("proofs by kind %v, %v; want 5 by Python's parser", proofs, err)
	}
}

// TestValidate_PythonWithoutParser: with no sandbox Python declarations
// are checked lexically, labelled so, and the note says why; an
// interpreter that gives no answer leaves them undecided; a syntax error
// is a rejection only when the repository's Python says so.
func TestValidate_PythonWithoutParser(t *testing.T) {
	repo := mustPythonRepo(t, testenv.PythonClick)
	line := lineWith(t, repo, "click/core.py", "class Context:")
	noSandbox := MustEngine(t, repo, withoutSandbox)
	res := noSandbox.propose(locProposal("symbol", "Context", "click/core.py", line, line))
	if res.Status != "certified" || res.Level != "lexical" {
		t.Errorf("no sandbox: %s %s %v", res.Status, res.Level, res.Reasons)
	} else if notes := noSandbox.certificateNotes(t, res.CertificateID); !strings.Contains(notes, "Python's parser could not read click/core.py here") {
		t.Errorf("no sandbox: the notes do not say why: %s", notes)
	}
	// An interpreter that runs and gives no answer is no reason for a
	// weaker proof: undecided, saying why.
	for _, python := range []string{filepath.Join(t.TempDir(), "python3"), "/bin/false"} {
		te := MustEngine(t, repo, func(c *Config) { c.Tests.Python = python })
		te.checkVerdict(t, locProposal("symbol", "Context", "click/core.py", line, line), "undecided", "Python's parser gave no answer for click/core.py: "+python)
	}
	// A syntax error is the repository's Python's verdict (the configured
	// interpreter's); python3 on PATH may be another version, and leaves
	// it undecided.
	MustWriteFile(t, filepath.Join(repo, "broken.py"), "def f(:\n    pass\n")
	te := MustEngine(t, repo, func(c *Config) { c.Tests.Python = testenv.Python3(t) })
	te.checkVerdict(t, locProposal("symbol", "f", "broken.py", 1, 2), "rejected", "broken.py does not parse as Python")
	te = MustEngine(t, repo)
	te.checkVerdict(t, locProposal("symbol", "f", "broken.py", 1, 2), "undecided", "not the repository's")
	// A carriage return that ends no line shifts Python's line numbers
	// against Needle's: the lexical rule stands in.
	MustWriteFile(t, filepath.Join(repo, "cr.py"), "def f():\n    return 1  # a\r b\n")
	res = te.checkVerdict(t, locProposal("symbol", "f", "cr.py", 1, 2), "certified", "a lone carriage return")
	if res.Level != "lexical" {
		t.Errorf("a file with a lone carriage return: level %s", res.Level)
	}
	if out := MustRun(t, repo, "git", "status", "--porcelain", "--untracked-files=all"); out != "?? broken.py\n?? cr.py\n" {
		t.Errorf("the parser's runs changed the repository:\n%s", out)
	}
}

// TestValidate_PythonLyingInterpreter: the interpreter may be the
// repository's own (.venv); what it says is checked against the source,
// and an answer the source does not bear out leaves the proposal
// undecided, never certified.
func TestValidate_PythonLyingInterpreter(t *testing.T) {
	repo := mustPythonRepo(t, testenv.PythonClick)
	line := lineWith(t, repo, "click/core.py", "class Context:")
	liar := filepath.Join(t.TempDir(), "python3")
	use := lineWith(t, repo, "click/core.py", "        return self._meta")
	for name, out := range map[string]string{
		"a name at a line that does not define it": `{"python":"3.11.2","decls":[{"name":"Forged","kind":"class","line":%d,"first":%d,"end":%d}]}`,
		"a block that ends early":                  `{"python":"3.11.2","decls":[{"name":"Context","kind":"class","line":%d,"first":%d,"end":%d}]}`,
		"a method without its class":               `{"python":"3.11.2","decls":[{"name":"Context.__init__","kind":"method","line":%d,"first":%d,"end":%d}]}`,
		"a variable where the name is only used":   `{"python":"3.11.2","decls":[{"name":"_meta","kind":"variable","line":%d,"first":%d,"end":%d}]}`,
	} {
		end := line + 1
		subject := map[string]string{"a block that ends early": "Context", "a method without its class": "Context.__init__", "a variable where the name is only used": "_meta"}[name]
		if subject == "" {
			subject = "Forged"
		}
		if subject == "_meta" {
			line, end = use, use
		}
		if subject == "Context.__init__" {
			line = lineWith(t, repo, "click/core.py", "    def __init__(")
			end = line + 1
		}
		MustWriteFile(t, liar, "#!/bin/sh\ncat >/dev/null\nprintf '%s' '"+fmt.Sprintf(out, line, line, end)+"'\n")
		if err := os.Chmod(liar, 0o755); err != nil {
			t.Fatal(err)
		}
		te := MustEngine(t, repo, func(c *Config) { c.Tests.Python = liar })
		te.checkVerdict(t, locProposal("symbol", subject, "click/core.py", line, end), "undecided", "does not match the source")
		line = lineWith(t, repo, "click/core.py", "class Context:")
	}
}

// TestAssigns reads the targets of assignment lines as Python binds them.
func TestAssigns(t *testing.T) {
	for _, c := range []struct {
		line, name string
		want       bool
	}{
		{"x = 1", "x", true},
		{"x = y = None", "y", true},
		{"x = y = None", "None", false},
		{"a, (b, *c) = f()", "c", true},
		{"[a, b] = 1, 2", "b", true},
		{"x: int = 1", "x", true},
		{"x: int", "x", true},
		{"x: Dict[str, int] = {}", "str", false},
		{"self.x = 1", "x", false},
		{"d[x] = 1", "x", false},
		{"f(x=1)", "x", false},
		{"return x", "x", false},
		{"if x == 1:", "x", false},
		{"x += 1", "x", false},
		{"y = x  # x = 2", "x", false},
		{"(n := 3)", "n", false},
	} {
		if got := assigns(c.line, c.name); got != c.want {
			t.Errorf("assigns(%q, %q) = %v, want %v", c.line, c.name, got, c.want)
		}
	}
}

// certificateNotes are the notes of a certificate.
func (te *testEngine) certificateNotes(t *testing.T, id string) string {
	t.Helper()
	var notes string
	if err := te.store.db.QueryRow(`SELECT body ->> '$.notes' FROM certificates WHERE certificate_id = ?`, id).Scan(&notes); err != nil {
		t.Fatal(err)
	}
	return notes
}

// declOf finds the declaration inspect located under name.
func declOf(tb testing.TB, located []testenv.Located, name string) (testenv.Located, bool) {
	tb.Helper()
	for _, l := range located {
		if l.Name == name {
			return l, true
		}
	}
	tb.Fatalf("inspect located no %s", name)
	return testenv.Located{}, false
}
