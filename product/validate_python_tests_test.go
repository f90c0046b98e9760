package product

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// pyCLI is a small Python command line with its pytest suite, as a new
// user's repository holds one: an argparse option, an environment
// variable read in a function and one read at import, a click command
// (click itself copied into the repository from Debian's package), and
// tests that call the code, only name it, build the parser, or fail.
var pyCLI = map[string]string{
	"lines.py": `import argparse
import os
import sys

PAGER = os.environ.get("LINES_PAGER", "less")


def split_lines(text, crlf=False):
    """Split text at line ends."""
    return text.split("\r\n" if crlf else "\n")


def width():
    return int(os.environ.get("LINES_WIDTH", "80"))


def one_liner(): return 1


class Counter:
    limit = 10

    def count(self, text):
        return len(split_lines(text))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="lines")
    parser.add_argument("--crlf", action="store_true", help="split at CRLF")
    parser.add_argument("--tabs", type=int, default=8, help="tab width (never read)")
    args = parser.parse_args(argv)
    print(len(split_lines(sys.stdin.read(), args.crlf)))


if __name__ == "__main__":
    main()
`,
	"shout.py": `import click


@click.command()
@click.option("--loud/--quiet", default=False)
def shout(loud):
    click.echo("HI" if loud else "hi")
`,
	"other.py": "def unrelated():\n    return 2\n",
	"table.py": "def make():\n    return [1]\n\n\nTABLE = make()\n",
	"tests/test_extra.py": `import yaml_that_is_not_installed


def test_extra():
    assert yaml_that_is_not_installed
`,
	"tests/test_lines.py": `import argparse
import io

import pytest
from click.testing import CliRunner

import lines
from lines import Counter, main, split_lines
from shout import shout


def test_split():
    assert split_lines("a\nb") == ["a", "b"]


def test_callable():
    assert callable(split_lines)


def test_crlf(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("a\r\nb"))
    main(["--crlf"])
    assert capsys.readouterr().out == "2\n"


def test_width(monkeypatch):
    monkeypatch.setenv("LINES_WIDTH", "100")
    assert lines.width() == 100


def test_pager():
    assert lines.PAGER


def test_one_liner():
    assert lines.one_liner() == 1


def test_broken():
    assert split_lines("a") == []


class TestCounter:
    def test_count(self):
        assert Counter().count("a\nb\nc") == 3

    @pytest.mark.parametrize("text,n", [("a", 1), ("a\nb", 2)])
    def test_counts(self, text, n):
        assert Counter().count(text) == n


def test_own_namespace(capsys, monkeypatch):
    class Mine:
        pass
    monkeypatch.setattr("sys.stdin", io.StringIO("a"))
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", lambda self, argv: argparse.ArgumentParser.parse_known_args(self, argv, Mine())[0])
    main(["--crlf"])
    assert capsys.readouterr().out == "1\n"


def test_help(capsys):
    with pytest.raises(SystemExit):
        main(["-h"])
    assert "usage" in capsys.readouterr().out


def test_table():
    import table
    assert table.TABLE == [1]


def test_make():
    import table
    assert table.make() == [1]


def test_loud():
    assert CliRunner().invoke(shout, ["--loud"]).output == "HI\n"


def test_shout_built():
    assert shout.name == "shout"
`,
}

// TestValidate_PythonFocusedTests runs Python tests with pytest under
// coverage.py in the sandbox (Debian's Python, pytest and coverage): a
// test reaches its subject only when its run executes what importing
// never runs — a function's body, a method's, the command that receives
// a click option, a read of a variable inside a function. A test that
// only names the subject, builds a command without running it, or fails
// is rejected; what cannot be told is undecided; the command Needle
// serves is its own; the proof depends on the files the run executed.
func TestValidate_PythonFocusedTests(t *testing.T) {
	repo, te := mustPyCLI(t)
	tests := func(kind, name string, ids ...string) string {
		var list []string
		for _, id := range ids {
			path, _, found := strings.Cut(id, "::")
			if !found {
				path = "tests/test_lines.py"
			}
			list = append(list, fmt.Sprintf(`{"path":%q,"name":%q,"command":"pytest -x"}`, path, id))
		}
		return fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":%q,"name":%q},"tests":[%s]}`, kind, name, strings.Join(list, ","))
	}
	const file = "tests/test_lines.py::"
	for _, c := range []struct{ kind, subject, test, want, why string }{
		{"symbol", "split_lines", file + "test_split", "certified", "calls it"},
		{"symbol", "lines.split_lines", "test_split", "certified", "a qualified name, the test by its name"},
		{"symbol", "split_lines", file + "test_callable", "rejected", "executed no statement of the body of split_lines beyond what importing the modules runs"},
		{"symbol", "split_lines", file + "test_broken", "rejected", "did not pass when Needle ran it"},
		{"symbol", "Counter", file + "TestCounter::test_count", "certified", "a class, by a method's body"},
		{"symbol", "Counter.count", "TestCounter.test_counts", "certified", "every parameter set"},
		{"symbol", "Counter.count", file + "TestCounter::test_counts[a-1]", "certified", "one parameter set"},
		{"symbol", "Counter.count", file + "TestCounter::test_counts[zz]", "rejected", "pytest ran no test"},
		{"symbol", "one_liner", file + "test_one_liner", "certified", "a call of one_liner, the one-line def on line 35 of lines.py"},
		{"symbol", "one_liner", file + "test_split", "rejected", "executed no statement of the body of one_liner"},
		{"symbol", "make", file + "test_table", "rejected", "executed no statement of the body of make beyond what importing the modules runs"},
		{"symbol", "table.make", file + "test_make", "certified", "a call by the test, of a function importing also calls"},
		{"file", "lines.py", file + "test_split", "certified", "a file, by a function's body"},
		{"file", "other.py", file + "test_split", "rejected", "executed no statement of a function of other.py"},
		{"configuration_key", "LINES_WIDTH", file + "test_width", "certified", "a read inside a function"},
		{"configuration_key", "LINES_WIDTH", file + "test_split", "rejected", "executed no read of LINES_WIDTH"},
		{"configuration_key", "LINES_PAGER", file + "test_pager", "undecided", "where importing the module reads it"},
		{"cli_option", "--loud", file + "test_loud", "certified", "the command that receives it ran"},
		{"cli_option", "--loud / --quiet", file + "test_loud", "certified", "both names of the flag"},
		{"cli_option", "--loud", file + "test_shout_built", "rejected", "executed no statement of the command that receives --loud"},
		{"cli_option", "--crlf", file + "test_crlf", "certified", "a parse filled in --crlf (defined on line 47 of lines.py) and the code read its value"},
		{"cli_option", "--tabs", file + "test_crlf", "rejected", "executed no statement of the command that receives --tabs, nor read of its parsed value"},
		{"cli_option", "--crlf", file + "test_split", "rejected", "executed no statement of the command that receives --crlf"},
		{"cli_option", "--crlf", file + "test_own_namespace", "undecided", "a namespace of the code's own class"},
		{"cli_option", "--help", file + "test_help", "certified", "a parse ran the parser's own help"},
		{"cli_option", "-h", file + "test_crlf", "rejected", "executed no statement of the command that receives -h, nor read of its parsed value"},
		{"symbol", "split_lines", file + "test_nothing", "rejected", "is not a test function"},
		{"symbol", "split_lines", "tests/test_extra.py::test_extra", "undecided", "could not import yaml_that_is_not_installed"},
	} {
		res := te.checkVerdict(t, tests(c.kind, c.subject, c.test), c.want, c.why)
		if c.want == "undecided" && !strings.Contains(strings.Join(res.Undecided, "\n"), c.why) {
			t.Errorf("%s: undecided %q", c.why, res.Undecided)
		}
		if c.want != "certified" || res.Status != "certified" {
			continue
		}
		body := te.certificateBody(t, res.CertificateID)
		if !strings.Contains(body, `"reach":"executed"`) || !strings.Contains(body, `"command":"python -m pytest 'tests/test_lines.py::`) || strings.Contains(body, "pytest -x") {
			t.Errorf("%s: %s", c.why, body)
		}
	}

	// The context serves Needle's command, and the proof depends on what
	// the run executed: lines.py and the test, not other.py.
	r := te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"split_lines"}}`)
	if !strings.Contains(r.Context, "run: python -m pytest 'tests/test_lines.py::test_split'") || !strings.Contains(r.Context, "executed by Needle in its sandbox") {
		t.Errorf("the context:\n%s", r.Context)
	}
	res := te.checkVerdict(t, tests("symbol", "split_lines", file+"test_split"), "certified", "again")
	deps := te.count(t, fmt.Sprintf(`SELECT count(*) FROM dependencies WHERE certificate_id = '%s' AND path IN ('lines.py', 'tests/test_lines.py', 'shout.py', 'click/core.py')`, res.CertificateID))
	if other := te.count(t, fmt.Sprintf(`SELECT count(*) FROM dependencies WHERE certificate_id = '%s' AND path = 'other.py'`, res.CertificateID)); deps != 4 || other != 0 {
		t.Errorf("dependencies: %d of the files the run imported, %d of other.py", deps, other)
	}
	if out := MustRun(t, repo, "git", "status", "--porcelain", "--untracked-files=all", "--ignored"); out != "" {
		t.Errorf("the runs changed the repository:\n%s", out)
	}

	// An edit the run did not import leaves the proof fresh; an edit of a
	// module it imported replays it (the test runs again).
	certificates := func() int { return te.count(t, `SELECT count(*) FROM certificates`) }
	before := certificates()
	MustWriteFile(t, filepath.Join(repo, "other.py"), "def unrelated():\n    return 3\n")
	if r := te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"split_lines"}}`); r.Status != "hit" || certificates() != before {
		t.Errorf("after an edit of other.py: %s, %d certificates (were %d)", r.Status, certificates(), before)
	}
	MustWriteFile(t, filepath.Join(repo, "lines.py"), pyCLI["lines.py"]+"\n# a note\n")
	if r := te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"split_lines"}}`); r.Status != "hit" || certificates() <= before {
		t.Errorf("after an edit of lines.py: %s, %d certificates (were %d): the proof was not replayed", r.Status, certificates(), before)
	}
}

// mustPyCLI is a repository holding pyCLI and click, and an engine whose
// Python is Debian's, with pytest and coverage.
func mustPyCLI(t *testing.T) (string, *testEngine) {
	t.Helper()
	repo := mustPythonRepo(t, testenv.PythonClick)
	for name, content := range pyCLI {
		MustWriteFile(t, filepath.Join(repo, name), content)
	}
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "cli")
	python := testenv.PythonWithPytest(t)
	return repo, MustEngine(t, repo, func(c *Config) { c.Tests.Python = python })
}

// TestValidate_PythonFocusedTestsWithout: an interpreter without pytest
// leaves the proof undecided and names the package (Needle installs
// nothing); without a sandbox the lexical rule stands in, labelled.
func TestValidate_PythonFocusedTestsWithout(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "lines")
	MustWriteFile(t, filepath.Join(repo, "lines.py"), pyCLI["lines.py"])
	MustWriteFile(t, filepath.Join(repo, "tests", "test_lines.py"), "from lines import split_lines\n\n\ndef test_split():\n    assert split_lines('a') == ['a']\n")
	MustRun(t, repo, "git", "init", "-q")
	bare := filepath.Join(t.TempDir(), "python3")
	MustWriteFile(t, bare, "#!/bin/sh\nexec "+testenv.PythonWithPytest(t)+" -S \"$@\"\n")
	if err := os.Chmod(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	p := `{"kind":"focused_tests","subject":{"kind":"symbol","name":"split_lines"},"tests":[{"path":"tests/test_lines.py","name":"test_split"}]}`
	te := MustEngine(t, repo, func(c *Config) { c.Tests.Python = bare })
	te.checkVerdict(t, p, "undecided", "cannot import coverage, which running tests/test_lines.py::test_split needs: Needle never installs packages")
	te = MustEngine(t, repo, withoutSandbox)
	res := te.checkVerdict(t, p, "certified", "no sandbox")
	if res.Level != "lexical" {
		t.Errorf("without a sandbox: level %s", res.Level)
	}
}

// TestValidate_PythonFocusedTestsNetworkx judges the focused tests of
// networkx's cycles module, a real package's own suite, against an oracle
// that runs it under Python's profile hook (testenv.PythonCalls: which
// functions each test itself called, outside imports): a fixed sample of
// pairs, named in the forms models write. No false pair is certified, and
// at least 95% of the true ones are.
func TestValidate_PythonFocusedTestsNetworkx(t *testing.T) {
	repo := mustPythonRepo(t, pythonNetworkx)
	python := testenv.PythonWithPytest(t)
	const target, testFile = "networkx/algorithms/cycles.py", "networkx/algorithms/tests/test_cycles.py"
	calls := testenv.PythonCalls(t, python, repo, testFile, target)
	te := MustEngine(t, repo, func(c *Config) { c.Tests.Python = python })
	var funcs []string // the module's functions, as Python's runtime lists them
	for _, l := range testenv.InspectDecls(t, python, repo, []string{filepath.Join(repo, target)}) {
		if !strings.Contains(l.Name, ".") {
			funcs = append(funcs, l.Name)
		}
	}
	type pair struct {
		test, fn string
		truth    bool
	}
	var pos, neg []pair
	for _, test := range slices.Sorted(maps.Keys(calls)) {
		if slices.Contains(calls[test], "<failed>") {
			continue
		}
		for _, fn := range funcs {
			p := pair{test, fn, slices.Contains(calls[test], fn)}
			if p.truth {
				pos = append(pos, p)
			} else {
				neg = append(neg, p)
			}
		}
	}
	if len(pos) < 20 || len(neg) < 20 {
		t.Fatalf("the oracle found %d true and %d false pairs", len(pos), len(neg))
	}
	rng := rand.New(rand.NewPCG(27, 27))
	rng.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
	rng.Shuffle(len(neg), func(i, j int) { neg[i], neg[j] = neg[j], neg[i] })
	certified := 0
	for i, p := range append(pos[:20], neg[:20]...) {
		// The forms models write: a node id or a dotted test name, and a
		// bare, module-qualified or package-qualified function.
		name := p.test
		if i%2 == 1 {
			_, qual, _ := strings.Cut(p.test, "::")
			name = strings.ReplaceAll(qual, "::", ".")
		}
		subject := []string{p.fn, "cycles." + p.fn, "networkx.algorithms.cycles." + p.fn}[i%3]
		res := te.propose(fmt.Sprintf(`{"kind":"focused_tests","subject":{"kind":"symbol","name":%q},"tests":[{"path":%q,"name":%q}]}`, subject, testFile, name))
		switch {
		case res.Status == "certified" && !p.truth:
			t.Errorf("false pair certified: %s reaches %s? the oracle says no", name, subject)
		case res.Status == "certified":
			certified++
		case p.truth:
			t.Logf("true pair not certified: %s reaches %s: %s %v %v", name, subject, res.Status, res.Reasons, res.Undecided)
		}
	}
	if certified < 19 {
		t.Errorf("%d of 20 true pairs certified, want at least 19 (95%%)", certified)
	}
}
