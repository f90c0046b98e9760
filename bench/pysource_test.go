package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// networkx288 is python3-networkx of Debian 12, with its test suite.
var networkx288 = ModuleVersion{Version: "2.8.8-1", Sum: "sha256:69888603d1b54696f5c3d02d05527628d2d18661d845109a62fe24aff241aa7b",
	Deb: &DebPin{Package: "python3-networkx"}}

// TestCorpus_PythonPins: a Python subject is pinned by the sha256: of
// its .deb or fixture, from exactly one of them; a Go module by its h1:
// hash alone; anything else is refused when the corpus loads.
func TestCorpus_PythonPins(t *testing.T) {
	fixture := ModuleVersion{Version: "1", Sum: "sha256:" + strings.Repeat("a", 64), Fixture: "../../fixtures/python/lines-1.txtar"}
	for _, c := range []struct {
		s    Subject
		want string
	}{
		{Subject{Module: "networkx", Language: "python", Versions: []ModuleVersion{networkx288, fixture}}, ""},
		{Subject{Module: "networkx", Language: "python", Versions: []ModuleVersion{{Version: "1", Sum: "h1:x", Deb: &DebPin{Package: "p"}}}}, "pinned by the sha256:"},
		{Subject{Module: "networkx", Language: "python", Versions: []ModuleVersion{{Version: "1", Sum: networkx288.Sum, Deb: networkx288.Deb, Fixture: fixture.Fixture}}}, "exactly one of"},
		{Subject{Module: "networkx", Language: "python", Versions: []ModuleVersion{{Version: "1", Sum: networkx288.Sum, Deb: &DebPin{Package: "Bad Name"}}}}, "Debian package name"},
		{Subject{Module: "networkx", Language: "python", Versions: []ModuleVersion{{Version: "1", Sum: networkx288.Sum, Fixture: "/etc/x.txtar"}}}, "relative to the corpus directory"},
		{Subject{Module: "net-x", Language: "python", Versions: []ModuleVersion{networkx288}}, "import name"},
		{Subject{Module: "example.com/m", Versions: []ModuleVersion{networkx288}}, "go.sum h1: hash alone"},
		{Subject{Module: "example.com/m", Language: "rust", Versions: []ModuleVersion{{Version: "1", Sum: "h1:x"}}}, `language "rust"`},
	} {
		c2 := &Corpus{Manifest: Manifest{Subjects: []Subject{c.s}}}
		err := c2.check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
}

// TestMaterialize_Python builds a Python subject's repository from a
// Debian package (networkx 2.8.8, checked against its SHA-256) and from a
// fixture, one commit per version; a fixture that does not match its pin
// is refused.
func TestMaterialize_Python(t *testing.T) {
	t.Setenv("NEEDLEBENCH_DEBS", testenv.Cache(t, "debs")) // the tests' own cache of .debs
	dir := t.TempDir()
	v2 := []byte("-- lines/__init__.py --\n-- lines/core.py --\ndef split(text):\n    return text.split()\n")
	if err := os.WriteFile(filepath.Join(dir, "lines-2.txtar"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(v2)
	c := &Corpus{Dir: dir, Manifest: Manifest{Subjects: []Subject{
		{Module: "networkx", Language: "python", Versions: []ModuleVersion{networkx288}},
		{Module: "lines", Language: "python", Versions: []ModuleVersion{{Version: "2", Sum: "sha256:" + hex.EncodeToString(sum[:]), Fixture: "lines-2.txtar"}}},
	}}}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	repos, err := materialize(context.Background(), c, filepath.Join(t.TempDir(), "repos"), nil)
	if err != nil {
		t.Fatal(err)
	}
	nx := repos["networkx"]
	for _, f := range []string{"networkx/__init__.py", "networkx/algorithms/cycles.py", "networkx/algorithms/tests/test_cycles.py"} {
		if _, ok := nx.trees["2.8.8-1"][f]; !ok {
			t.Errorf("networkx 2.8.8-1 lacks %s", f)
		}
		if _, err := os.Stat(filepath.Join(nx.Dir, f)); err != nil {
			t.Errorf("the repository: %v", err)
		}
	}
	for f := range nx.trees["2.8.8-1"] {
		if strings.HasSuffix(f, ".pyc") || !strings.HasPrefix(f, "networkx/") {
			t.Errorf("networkx's tree holds %s", f)
		}
	}
	if out, err := git(context.Background(), nx.Dir, "log", "--format=%s"); err != nil || out != "networkx 2.8.8-1" {
		t.Errorf("networkx's commits: %q %v", out, err)
	}
	if got := string(repos["lines"].trees["2"]["lines/core.py"]); !strings.Contains(got, "def split") {
		t.Errorf("the fixture's lines/core.py: %q", got)
	}

	if err := os.WriteFile(filepath.Join(dir, "lines-2.txtar"), append(v2, '#'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := materialize(context.Background(), c, filepath.Join(t.TempDir(), "repos"), nil); err == nil || !strings.Contains(err.Error(), "the corpus pins") {
		t.Errorf("a fixture changed after pinning: %v", err)
	}
}

// pyReachTree is a small package whose tests tell calling a function
// from importing a module that calls it, a method from its class, a
// failure from a pass.
var pyReachTree = tree{
	"pkg/__init__.py": []byte(""),
	"pkg/core.py": []byte(`def table():
    return [1]


TABLE = table()


def twice(x):
    def inner(y):
        return y * 2
    return inner(x)


class Box:
    def size(self):
        return 3
`),
	"tests/test_core.py": []byte(`from pkg import core


def test_twice():
    assert core.twice(2) == 4


def test_import_only():
    assert core.TABLE == [1]


def test_box():
    assert core.Box().size() == 3


def test_fails():
    assert core.table() == []
`),
}

// TestCoverPython runs a package's tests in the sandbox and records which
// functions each test itself called: not what its module's import called,
// a nested function by its qualified name, a failing test's outcome.
func TestCoverPython(t *testing.T) {
	python, opts := mustPySandbox(t)
	c, err := coverPython(context.Background(), opts, python, "pkg", "1", pyReachTree)
	if err != nil {
		t.Fatal(err)
	}
	r := newReach(c)
	want := map[string][]string{
		"test_twice":       {"pkg/core.py#twice", "pkg/core.py#twice.inner"},
		"test_import_only": nil,
		"test_box":         {"pkg/core.py#Box.size"},
		"test_fails":       {"pkg/core.py#table"},
	}
	for name, funcs := range want {
		run, ok := r.run("tests/test_core.py", name)
		if !ok {
			t.Fatalf("no run of %s: %+v", name, c)
		}
		var got []string
		for _, i := range run.Executed {
			got = append(got, c.Functions[i])
		}
		slices.Sort(got)
		if !slices.Equal(got, funcs) {
			t.Errorf("%s called %v, want %v", name, got, funcs)
		}
		if outcome := map[bool]string{true: "fail", false: "pass"}[name == "test_fails"]; run.Outcome != outcome {
			t.Errorf("%s: outcome %s, want %s", name, run.Outcome, outcome)
		}
	}
	if !strings.HasPrefix(c.GoVersion, "python3.") || !strings.Contains(c.Sandbox, "codex sandbox") {
		t.Errorf("the record: %q, %q", c.GoVersion, c.Sandbox)
	}
}

// TestPyLocationTruth marks every declaration of a copy, imports it in
// the sandbox and resolves subjects as Python does: a re-export, an
// inherited method, a decorated function, a property, a nested class;
// a name that does not resolve is unjudged.
func TestPyLocationTruth(t *testing.T) {
	python, opts := mustPySandbox(t)
	tr := tree{
		"pkg/__init__.py": []byte("from .core import twice as double\n"),
		"pkg/core.py": []byte(`import functools


def logged(f):
    @functools.wraps(f)
    def wrapper(*a):
        return f(*a)
    return wrapper


@logged
def twice(x):
    """Twice x."""
    return 2 * x


class Box:
    def size(self):
        return 3

    @property
    def label(self):
        return "box"

    class Lid:
        def open(self):
            return True


class Crate(Box):
    pass
`),
	}
	units, cases, err := pyLocationTruth(context.Background(), opts, python, tr, []string{"pkg/core.py"},
		[]string{"pkg.double", "pkg.core.twice", "pkg.core.Crate.size", "pkg.core.Box.label", "pkg.core.Box.Lid.open", "pkg.core.Box", "pkg.core.nothing"})
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]string{}
	for _, c := range cases {
		if c.Verdict == verdictTrue {
			if truth[c.Subject] != "" {
				t.Errorf("%s: two true declarations", c.Subject)
			}
			truth[c.Subject] = units[c.Unit].Name + "@" + strconv.Itoa(units[c.Unit].Head)
		}
		if c.Verdict == verdictUnjudged && c.Subject != "symbol:pkg.core.nothing" {
			t.Errorf("%s unjudged: %s", c.Subject, c.Why)
		}
	}
	want := map[string]string{
		"symbol:pkg.double": "twice@12", "symbol:pkg.core.twice": "twice@12", "symbol:pkg.core.Crate.size": "Box.size@18",
		"symbol:pkg.core.Box.label": "Box.label@22", "symbol:pkg.core.Box.Lid.open": "Box.Lid.open@26", "symbol:pkg.core.Box": "Box@17",
	}
	for s, w := range want {
		if truth[s] != w {
			t.Errorf("%s: true at %q, want %q", s, truth[s], w)
		}
	}
	if _, ok := truth["symbol:pkg.core.nothing"]; ok {
		t.Error("a name Python does not resolve has a true declaration")
	}
	if n := len(units); n != 9 {
		t.Errorf("%d declarations marked: %+v", n, units)
	}
}

// TestPyReachTruth breaks a function on a copy and runs the cited tests in
// the sandbox: a test reached it when the break fired during the test
// itself; what a module's import runs does not count, a nested function
// is broken by its qualified name, a test pytest does not find is
// unjudged.
func TestPyReachTruth(t *testing.T) {
	python, opts := mustPySandbox(t)
	const f = "tests/test_core.py::"
	for _, c := range []struct {
		qualname string
		want     map[string]string
	}{
		{"table", map[string]string{"test_import_only": verdictFalse, "test_fails": verdictTrue, "test_nowhere": verdictUnjudged}},
		{"twice.inner", map[string]string{"test_twice": verdictTrue, "test_box": verdictFalse}},
		{"Box.size", map[string]string{"test_box": verdictTrue, "test_twice": verdictFalse}},
		{"Box.nothing", map[string]string{"test_box": verdictUnjudged}},
	} {
		var ids []string
		for name := range c.want {
			ids = append(ids, f+name)
		}
		slices.Sort(ids)
		cases, err := pyReachTruth(context.Background(), opts, python, pyReachTree, "pkg.core."+c.qualname, "pkg/core.py", c.qualname, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range cases {
			if rc.Dir != "tests/test_core.py" || rc.Verdict != c.want[rc.Test] {
				t.Errorf("%s, %s: %s (%s), want %s", c.qualname, rc.Test, rc.Verdict, rc.Why, c.want[rc.Test])
			}
		}
	}
}

// TestPythonFixtures: the project's Python CLI fixture, at its two
// versions, materializes as one repository (pinned by its files'
// SHA-256), and its own tests pass in the sandbox, reaching what they
// name: the fixture is real code for the corpus, with real drift.
func TestPythonFixtures(t *testing.T) {
	python, opts := mustPySandbox(t)
	s := Subject{Module: "shelf", Language: languagePython}
	for _, v := range []string{"1", "2"} {
		file := "../../fixtures/python/shelf@" + v + ".txtar"
		data, err := os.ReadFile(filepath.Join("..", "fixtures", "python", "shelf@"+v+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		s.Versions = append(s.Versions, ModuleVersion{Version: v, Sum: "sha256:" + hex.EncodeToString(sum[:]), Fixture: file})
	}
	c := &Corpus{Dir: filepath.Join("..", "corpus", "python"), Manifest: Manifest{Subjects: []Subject{s}}}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	repos, err := materialize(context.Background(), c, filepath.Join(t.TempDir(), "repos"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reaches := map[string][][2]string{
		"1": {{"tests/test_cli.py::test_limit", "shelf/cli.py#main"}, {"tests/test_core.py::test_parse_isbn", "shelf/core.py#parse_isbn"}, {"tests/test_core.py::test_home", "shelf/core.py#home"}},
		"2": {{"tests/test_cli.py::test_reverse", "shelf/core.py#Shelf.sorted_by"}, {"tests/test_core.py::test_parse_isbn", "shelf/isbn.py#parse_isbn"}},
	}
	for _, v := range []string{"1", "2"} {
		cov, err := coverPython(context.Background(), opts, python, "shelf", v, repos["shelf"].trees[v])
		if err != nil {
			t.Fatal(err)
		}
		r := newReach(cov)
		tests := 0
		for _, p := range cov.Packages {
			for _, ct := range p.Tests {
				tests++
				if ct.Outcome != "pass" {
					t.Errorf("shelf %s: %s::%s %s", v, p.Dir, ct.Name, ct.Outcome)
				}
			}
		}
		if tests < 12 {
			t.Errorf("shelf %s: %d tests ran", v, tests)
		}
		for _, want := range reaches[v] {
			dir, name, _ := strings.Cut(want[0], "::")
			run, ok := r.run(dir, name)
			if !ok || !r.executed(run, want[1]) {
				t.Errorf("shelf %s: %s does not reach %s", v, want[0], want[1])
			}
		}
	}
}

// mustPySandbox is Debian's Python with pytest and the pinned codex's
// sandbox, probed, for the Python corpus's runs.
func mustPySandbox(t *testing.T) (python string, opts coverageOptions) {
	t.Helper()
	codex := testenv.Codex(t)
	python = testenv.PythonWithPytest(t)
	scratch := t.TempDir()
	sb := &sandbox{codex: codex, home: filepath.Join(scratch, "home")}
	if err := os.MkdirAll(sb.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sb.probe(context.Background(), scratch); err != nil {
		t.Fatal(err)
	}
	return python, coverageOptions{sandbox: sb, scratch: scratch}
}
