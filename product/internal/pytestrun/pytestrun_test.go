package pytestrun

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// TestRun runs the script with Debian's Python, pytest and coverage on a
// small repository outside any sandbox: the outcome of each node id, and
// coverage that tells a test calling a function from one only naming it.
// The checkout is left as it was.
func TestRun(t *testing.T) {
	python := testenv.PythonWithPytest(t)
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lines.py", "def split_lines(text):\n    return text.split('\\n')\n\n\ndef one(): return 1\n")
	write("unused.py", "def f():\n    return 1\n")
	write("table.py", "def make():\n    return [1]\n\n\nTABLE = make()\n")
	write("cli.py", "import sys\nfrom lines import split_lines\n\nprint(split_lines(sys.argv[1]))\nsys.exit(3)\n")
	write("tests/__init__.py", "")
	write("tests/test_lines.py", "import pytest\nfrom lines import split_lines\n\n\ndef test_split():\n    assert split_lines('a\\nb') == ['a', 'b']\n\n\ndef test_named():\n    assert callable(split_lines)\n\n\ndef test_fails():\n    assert split_lines('a') == []\n\n\n@pytest.mark.parametrize('s', ['a', 'b'])\ndef test_param(s):\n    assert split_lines(s) == [s]\n\n\ndef test_one():\n    from lines import one\n    assert one() == 1\n\n\ndef test_table():\n    import table\n    assert table.TABLE == [1]\n\n\ndef test_make():\n    import table\n    assert table.make() == [1]\n")
	tree := func() string {
		out, err := exec.Command("find", root, "-printf", "%p %s %T@\n").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	before := tree()
	run := func(ids ...string) *Result {
		t.Helper()
		argv := Argv(python, ids)
		if ids[0] == "--calls" {
			argv = ArgvCalls(python, strings.Split(ids[1], ","), ids[2:])
		}
		return runIn(t, root, argv)
	}
	r := run("tests/test_lines.py::test_split")
	if r.Exit != 0 || r.Ran("tests/test_lines.py::test_split")["tests/test_lines.py::test_split"] != Passed {
		t.Errorf("test_split: exit %d, outcomes %v", r.Exit, r.Outcomes)
	}
	if n, ok := r.Executed("lines.py", 2, 2); !ok || n != 2 {
		t.Errorf("test_split did not execute split_lines' body: %v", r.Files)
	}
	if lines, ok := r.Files["tests/__init__.py"]; !ok || len(lines) != 0 {
		t.Errorf("the empty tests/__init__.py the run imported: %v, %v", lines, ok)
	}
	if _, ok := r.Files["unused.py"]; ok {
		t.Errorf("a file no test imported is among the run's files: %v", r.Files)
	}
	if r.Entry("lines.py", 5) || r.Entry("lines.py", 1) {
		t.Errorf("test_split entered one() (line 5), or line 1 counts as a function's entry: %v", r.Entered)
	}
	// A one-line def: its call shows only as the entry of its code.
	if r = run("tests/test_lines.py::test_one"); !r.Entry("lines.py", 5) || r.Exit != 0 {
		t.Errorf("test_one did not enter one() (exit %d): %v", r.Exit, r.Entered)
	}
	r = run("tests/test_lines.py::test_named")
	if _, ok := r.Executed("lines.py", 2, 2); ok || r.Exit != 0 {
		t.Errorf("test_named executed split_lines' body (exit %d): %v", r.Exit, r.Files)
	}
	if !slices.Contains(r.Files["lines.py"], 1) {
		t.Errorf("importing lines.py ran no line of it: %v", r.Files)
	}
	if _, ok := r.Executed("lines.py", 1, 1); ok {
		t.Errorf("the test ran what importing lines.py ran: %v", r.TestLines)
	}
	// What a module's import runs, even during a test and in a function
	// it calls, is not the test's; a call of that function by the test is.
	if r = run("tests/test_lines.py::test_table"); !slices.Contains(r.Files["table.py"], 2) || r.Exit != 0 {
		t.Errorf("importing table.py did not run make() (exit %d): %v", r.Exit, r.Files)
	}
	if _, ok := r.Executed("table.py", 2, 2); ok {
		t.Errorf("test_table executed make()'s body itself: %v", r.TestLines)
	}
	if r = run("tests/test_lines.py::test_make"); r.Exit != 0 {
		t.Errorf("test_make: exit %d", r.Exit)
	} else if _, ok := r.Executed("table.py", 2, 2); !ok {
		t.Errorf("test_make did not execute make()'s body: %v", r.TestLines)
	}
	if r = run("tests/test_lines.py::test_fails"); r.Exit != 1 || r.Outcomes["tests/test_lines.py::test_fails"] != Failed {
		t.Errorf("test_fails: exit %d, outcomes %v", r.Exit, r.Outcomes)
	}
	if r = run("tests/test_lines.py::test_param"); len(r.Ran("tests/test_lines.py::test_param")) != 2 {
		t.Errorf("test_param: outcomes %v", r.Outcomes)
	}
	if r = run("tests/test_lines.py::test_none"); r.Exit != 4 && r.Exit != 5 || len(r.Outcomes) != 0 {
		t.Errorf("a test that is not there: exit %d, outcomes %v", r.Exit, r.Outcomes)
	}
	// The calls into lines.py, from a test and from a command.
	r = run("--calls", "lines.py", "tests/test_lines.py::test_split")
	want := Call{CallerFile: "tests/test_lines.py", CallerLine: 6, CalleeFile: "lines.py", CalleeLine: 1, Callee: "split_lines"}
	if !slices.Contains(r.Calls, want) || r.Exit != 0 {
		t.Errorf("the test's calls (exit %d): %+v", r.Exit, r.Calls)
	}
	r = run("--calls", "lines.py", "--path", "cli.py", "a")
	want = Call{CallerFile: "cli.py", CallerLine: 4, CalleeFile: "lines.py", CalleeLine: 1, Callee: "split_lines"}
	if !slices.Contains(r.Calls, want) || r.Exit != 3 {
		t.Errorf("the command's calls (exit %d): %+v", r.Exit, r.Calls)
	}
	if after := tree(); after != before {
		t.Errorf("the runs changed the checkout:\n%s\nwas\n%s", after, before)
	}
	if Command([]string{"tests/a b.py::t[it's]"}) != `python -m pytest 'tests/a b.py::t[it'\''s]'` {
		t.Errorf("Command = %s", Command([]string{"tests/a b.py::t[it's]"}))
	}
}

// TestRun_Parsed: the argparse and optparse options of the checkout that
// a run parsed, and whether code other than the parser read each value
// (an attribute, getattr, vars); a namespace of the caller's own class is
// untraced. The namespaces behave as without Needle (their repr, their
// equality).
func TestRun_Parsed(t *testing.T) {
	python := testenv.PythonWithPytest(t)
	root := t.TempDir()
	for name, content := range map[string]string{
		"cli.py": `import argparse
import optparse


def build():
    p = argparse.ArgumentParser(prog="cli")
    p.add_argument("--crlf", action="store_true")
    p.add_argument(
        "--tabs", type=int, default=8)
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("show")
    s.add_argument("--deep", "-d", action="store_true")
    return p


def main(argv):
    a = build().parse_args(argv)
    return (a.crlf, getattr(a, "deep", None))


def old(argv):
    p = optparse.OptionParser()
    p.add_option("-q", "--quiet", action="store_true", dest="quiet")
    p.add_option("--level", dest="level")
    o, rest = p.parse_args(argv)
    return o.quiet


class NS:  # a namespace of its own: argparse sets attributes on anything
    pass


def own(argv):
    return build().parse_args(argv, namespace=NS()).tabs


class Checked(optparse.OptionParser):
    def check_values(self, values, args):  # docutils' returns values alone
        return values


def checked(argv):
    p = Checked()
    p.add_option("--x", dest="x")
    return p.parse_args(argv).x


def write(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=argparse.FileType("w"))
    p.add_argument("--alpha"); p.add_argument("--beta")
    args = p.parse_args(argv)
    args.out.write(args.alpha)  # never closed: the namespace's death flushes it
`,
		"settings.py": `import argparse
import warnings

p = argparse.ArgumentParser()
p.add_argument("--debug", action="store_true")
DEBUG = p.parse_args([]).debug
warnings.warn("settings are read at import", stacklevel=1)
`,
		"tests/test_cli.py": `import argparse
import pickle
import warnings

import cli


def test_main():
    assert cli.main(["--crlf", "show", "-d"]) == (True, True)
    ns = cli.build().parse_args([])
    assert repr(ns) == "Namespace(crlf=False, tabs=8, cmd=None)"
    assert ns == argparse.Namespace(crlf=False, tabs=8, cmd=None)


def test_old():
    assert cli.old(["-q"]) is True


def test_own():
    assert cli.own([]) == 8


def test_checked():
    assert cli.checked(["--x", "1"]) == "1"


def test_write(tmp_path):
    out = tmp_path / "o.txt"
    cli.write(["--out", str(out), "--alpha", "a"])
    assert out.read_text() == "a"


def test_as_ever():
    ns = cli.build().parse_args(["--tabs", "2"])
    assert type(ns) is argparse.Namespace
    assert pickle.loads(pickle.dumps(ns)) == ns


def test_import_reads():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import settings
    assert settings.DEBUG is False
    assert caught[0].filename.endswith("settings.py"), caught[0].filename


def test_version(capsys):
    p = argparse.ArgumentParser(prog="cli")
    p.add_argument("--version", action="version", version="1")
    try:
        p.parse_args(["--version"])
    except SystemExit:
        pass
    assert capsys.readouterr().out == "1\n"


def test_vars():
    assert vars(cli.build().parse_args(["--tabs", "3"]))["tabs"] == 3
`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type opt struct {
		line       int
		read, none bool
	}
	for test, want := range map[string]map[string]opt{
		// --tabs: parsed, never read; --deep: read through getattr.
		"test_main": {"--crlf": {line: 7, read: true}, "--tabs": {line: 8}, "--deep": {line: 12, read: true}},
		"test_old":  {"--quiet": {line: 23, read: true}, "--level": {line: 24}},
		"test_own":  {"--crlf": {line: 7, none: true}, "--tabs": {line: 8, none: true}},
		"test_vars": {"--crlf": {line: 7, read: true}, "--tabs": {line: 8, read: true}},
		// An OptionParser whose check_values returns the values alone.
		"test_checked": {"--x": {line: 44, read: true}},
		// Two options on one line are two; the file is flushed as without Needle.
		"test_write":   {"--out": {line: 50, read: true}, "--alpha": {line: 51, read: true}, "--beta": {line: 51}},
		"test_as_ever": {"--crlf": {line: 7}, "--tabs": {line: 8}},
		// Parsed and read while importing: not the test's read.
		"test_import_reads": {"--debug": {line: 5}},
		// A version option acts when given; the parser's own --help is not given.
		"test_version": {"--version": {line: 49, read: true}},
	} {
		r := runIn(t, root, Argv(python, []string{"tests/test_cli.py::" + test}))
		if r.Outcomes["tests/test_cli.py::"+test] != Passed {
			t.Errorf("%s did not pass: %v", test, r.Outcomes)
		}
		got := map[string]opt{}
		for _, p := range r.Parsed {
			if _, ok := want[p.Names[0]]; !ok && p.Names[0] == "--help" {
				if p.Read {
					t.Errorf("%s: --help read, never given", test)
				}
				continue // the parsers' own
			}
			if p.File != map[string]string{"test_import_reads": "settings.py", "test_version": "tests/test_cli.py"}[test] && p.File != "cli.py" {
				t.Errorf("%s: an option of %s: %+v", test, p.File, p)
			}
			got[p.Names[0]] = opt{line: p.Line, read: p.Read, none: p.Untraced}
		}
		if len(got) != len(want) {
			t.Errorf("%s: parsed %+v, want %+v", test, r.Parsed, want)
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %s: %+v, want %+v (%+v)", test, name, got[name], w, r.Parsed)
			}
		}
		if p, ok := r.ParsedAt("cli.py", 8, 9, []string{"--tabs"}); test == "test_main" && (!ok || p.Names[0] != "--tabs") {
			t.Errorf("ParsedAt(8, 9) = %+v, %v", p, ok)
		}
	}
}

// runIn runs the script's argv in the checkout root and parses its record.
func runIn(t *testing.T, root string, argv []string) *Result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv[len(argv)-1], err, stderr.String())
	}
	r, err := Parse(out)
	if err != nil {
		t.Fatalf("%v: %v\n%s\n%s", argv[len(argv)-1], err, out, stderr.String())
	}
	return r
}

// TestParse_Refuses output no run of the script prints.
func TestParse_Refuses(t *testing.T) {
	for name, out := range map[string]string{
		"not json":         `{`,
		"two values":       `{"python":"3.11.2","exit":0} {}`,
		"unknown field":    `{"python":"3.11.2","exit":0,"x":1}`,
		"bad version":      `{"python":"3","exit":0}`,
		"missing what":     `{"python":"3.11.2","missing":"numpy","exit":0}`,
		"missing and ran":  `{"python":"3.11.2","missing":"pytest","exit":0,"outcomes":{"t.py::t":"passed"}}`,
		"exit status":      `{"python":"3.11.2","exit":300}`,
		"a short call":     `{"python":"3.11.2","exit":0,"calls":[["a.py",1,"b.py",2]]}`,
		"a call outside":   `{"python":"3.11.2","exit":0,"calls":[["a.py",1,"/b.py",2,"f"]]}`,
		"a call at line 0": `{"python":"3.11.2","exit":0,"calls":[["a.py",0,"b.py",2,"f"]]}`,
		"outcome":          `{"python":"3.11.2","exit":0,"outcomes":{"t.py::t":"xpassed-ish"}}`,
		"absolute file":    `{"python":"3.11.2","exit":0,"files":{"/etc/passwd":[1]}}`,
		"file outside":     `{"python":"3.11.2","exit":0,"files":{"../x.py":[1]}}`,
		"unclean file":     `{"python":"3.11.2","exit":0,"files":{"a/../b.py":[1]}}`,
		"line zero":        `{"python":"3.11.2","exit":0,"files":{"a.py":[0,1]}}`,
		"lines unsorted":   `{"python":"3.11.2","exit":0,"files":{"a.py":[3,2]}}`,
		"lines repeated":   `{"python":"3.11.2","exit":0,"files":{"a.py":[2,2]}}`,
		"control in an id": "{\"python\":\"3.11.2\",\"exit\":0,\"outcomes\":{\"t.py::t\\u0000\":\"passed\"}}",
	} {
		if _, err := Parse([]byte(out)); !errors.Is(err, ErrOutput) {
			t.Errorf("%s: err = %v, want ErrOutput", name, err)
		}
	}
}

// TestParse_RefusesRecords: the records of what the tests ran, entered and
// parsed must name the run's files, in order, by valid names.
func TestParse_RefusesRecords(t *testing.T) {
	cases := map[string]string{
		"ran, not run":      `{"python":"3.11.2","exit":0,"files":{"a.py":[1]},"ran":{"b.py":[2]}}`,
		"entered, not run":  `{"python":"3.11.2","exit":0,"files":{"a.py":[1]},"entered":{"b.py":[2]}}`,
		"entered unsorted":  `{"python":"3.11.2","exit":0,"files":{"a.py":[1]},"entered":{"a.py":[3,2]}}`,
		"parsed outside":    `{"python":"3.11.2","exit":0,"reads":[{"file":"../a.py","line":1,"names":["--x"]}]}`,
		"parsed no names":   `{"python":"3.11.2","exit":0,"reads":[{"file":"a.py","line":1,"names":[]}]}`,
		"parsed line 0":     `{"python":"3.11.2","exit":0,"reads":[{"file":"a.py","line":0,"names":["--x"]}]}`,
		"parsed both":       `{"python":"3.11.2","exit":0,"reads":[{"file":"a.py","line":1,"names":["--x"],"read":true,"untraced":true}]}`,
		"parsed empty name": `{"python":"3.11.2","exit":0,"reads":[{"file":"a.py","line":1,"names":[""]}]}`,
	}
	for name, out := range cases {
		if _, err := Parse([]byte(out)); !errors.Is(err, ErrOutput) {
			t.Errorf("%s: err = %v, want ErrOutput", name, err)
		}
	}
}

// FuzzParse: Parse never panics, refuses with ErrOutput, and what it
// accepts names files inside the root with ascending lines.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"python":"3.11.2","exit":0,"outcomes":{"tests/t.py::test_a[x]":"passed"},"files":{"a.py":[1,2,5]}}`))
	f.Add([]byte(`{"python":"3.11.2","missing":"coverage","exit":0}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := Parse(out)
		if err != nil {
			if !errors.Is(err, ErrOutput) {
				t.Fatalf("err %v is not ErrOutput", err)
			}
			return
		}
		for file, lines := range r.Files {
			if strings.HasPrefix(file, "/") || strings.HasPrefix(file, "../") {
				t.Fatalf("accepted the file %q", file)
			}
			for i := 1; i < len(lines); i++ {
				if lines[i] <= lines[i-1] {
					t.Fatalf("accepted the lines %v", lines)
				}
			}
		}
	})
}

// TestRun_OldCoverage: a coverage.py without dynamic contexts (before
// 5.0) cannot tell a test's lines from an import's: the run reports it
// missing, and runs nothing.
func TestRun_OldCoverage(t *testing.T) {
	python := testenv.PythonWithPytest(t)
	root, fake := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(fake, "coverage"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "coverage", "__init__.py"), []byte("class Coverage:\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := Argv(python, []string{"tests/test_x.py::test_x"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PYTHONPATH="+fake)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(out)
	if err != nil || r.Missing != "coverage" || len(r.Outcomes) != 0 {
		t.Fatalf("with coverage 4: %+v, %v", r, err)
	}
}
