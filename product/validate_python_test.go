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
	te.checkVerdict(t, locProposal("symbol", "click.decorators.Command.invoke", "click/core.py", invoke.Start, invoke.End), "rejected", "is not declared")
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
// or a qualified name; not its setup_class, nor a helper function.
func TestValidate_PythonTests(t *testing.T) {
	repo := mustPythonRepo(t, pythonNetworkx)
	te := MustEngine(t, repo)
	file := "networkx/algorithms/tests/test_cycles.py"
	start := lineWith(t, repo, file, "    def test_simple_cycles(self):")
	end := lineWith(t, repo, file, "    def test_simple_cycles_graph(self):") - 2
	for _, name := range []string{file + "::TestCycles::test_simple_cycles", "test_cycles.py::TestCycles::test_simple_cycles[G0]", "TestCycles.test_simple_cycles"} {
		te.checkVerdict(t, locProposal("test", name, file, start, end), "certified", name)
	}
	te.checkVerdict(t, locProposal("test", "networkx/algorithms/tests/test_cuts.py::TestCycles::test_simple_cycles", file, start, end), "rejected", "is not a test function")
	setup := lineWith(t, repo, file, "    def setup_class(cls):")
	te.checkVerdict(t, locProposal("test", "TestCycles.setup_class", file, setup, setup), "rejected", "is not a test function")
	helper := lineWith(t, repo, file, "def assert_basis_equal(")
	te.checkVerdict(t, locProposal("test", "assert_basis_equal", file, helper, helper), "rejected", "is not a test function")
	te.checkVerdict(t, locProposal("symbol", "assert_basis_equal", file, helper, helper), "certified", "a helper is a symbol")
	// needle stats counts them as proofs by Python's parser, not go/types.
	proofs, err := te.store.proofCounts(context.Background())
	if err != nil || proofs[proofParser] != 4 || proofs[proofTypes] != 0 {
		t.Errorf("proofs by kind %v, %v; want 4 by Python's parser", proofs, err)
	}
}

// TestValidate_PythonWithoutParser: with no sandbox, or an interpreter
// that cannot run, Python declarations are checked lexically, labelled
// so, and the note says why.
func TestValidate_PythonWithoutParser(t *testing.T) {
	repo := mustPythonRepo(t, testenv.PythonClick)
	line := lineWith(t, repo, "click/core.py", "class Context:")
	for name, mutate := range map[string]func(*Config){
		"no sandbox": withoutSandbox,
		"no python":  func(c *Config) { c.Tests.Python = filepath.Join(t.TempDir(), "python3") },
		"not python": func(c *Config) { c.Tests.Python = "/bin/false" },
	} {
		te := MustEngine(t, repo, mutate)
		res := te.propose(locProposal("symbol", "Context", "click/core.py", line, line))
		if res.Status != "certified" || res.Level != "lexical" {
			t.Errorf("%s: %s %s %v", name, res.Status, res.Level, res.Reasons)
			continue
		}
		if notes := te.certificateNotes(t, res.CertificateID); !strings.Contains(notes, "Python's parser could not read click/core.py here") {
			t.Errorf("%s: the notes do not say why: %s", name, notes)
		}
	}
	// A syntax error is Python's verdict, not a reason to fall back.
	MustWriteFile(t, filepath.Join(repo, "broken.py"), "def f(:\n    pass\n")
	te := MustEngine(t, repo)
	te.checkVerdict(t, locProposal("symbol", "f", "broken.py", 1, 2), "rejected", "broken.py does not parse as Python")
	if _, err := os.Stat(filepath.Join(repo, "click", "__pycache__")); err == nil {
		t.Error("the parser wrote bytecode into the repository")
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
