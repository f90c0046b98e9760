package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inspectScript is Python's runtime view of a package's modules, independent of
// the script: each module is imported and every class, function and
// method defined in it (a property's getter and setter, a static or class
// method's function, a decorated function unwrapped) is located by
// inspect.getsourcelines, which finds a function by its code object's
// first line and a block by tokenizing, not by the ast walk decls.py does.
const inspectScript = `
import importlib, inspect, json, sys
out = []
for name in sys.argv[1:]:
    try:
        m = importlib.import_module(name)
    except Exception:
        continue
    seen = set()
    def visit(obj):
        fn = inspect.unwrap(obj) if callable(obj) else obj
        if not (inspect.isclass(fn) or inspect.isfunction(fn)) or id(fn) in seen:
            return
        seen.add(id(fn))
        if getattr(fn, "__module__", None) != m.__name__ or "<locals>" in fn.__qualname__ or "<lambda>" in fn.__qualname__:
            return
        if inspect.isfunction(fn) and fn.__code__.co_filename != m.__file__:
            return
        try:
            lines, start = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            return
        out.append({"file": m.__file__, "name": fn.__qualname__, "start": start, "end": start + len(lines) - 1})
        if inspect.isclass(fn):
            for v in vars(fn).values():
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, property):
                    for f in (v.fget, v.fset, v.fdel):
                        if f is not None:
                            visit(f)
                    continue
                visit(v)
    for v in list(vars(m).values()):
        visit(v)
json.dump(out, sys.stdout)
`

// Located is where Python's runtime locates a declaration: its file, its
// __qualname__ and its lines (from the first decorator to the end of the
// block).
type Located struct {
	File, Name string
	Start, End int
}

// InspectDecls imports the modules of files (Python files under site, a
// directory on sys.path) with python and returns what inspect locates in
// them: the tests' oracle for where Python declarations lie, independent
// of the parser the product uses. A module that does not import on this
// machine is left out.
func InspectDecls(tb testing.TB, python, site string, files []string) []Located {
	tb.Helper()
	var modules []string
	for _, f := range files {
		rel, err := filepath.Rel(site, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			tb.Fatalf("testenv: %s is not under %s", f, site)
		}
		m := strings.ReplaceAll(strings.TrimSuffix(rel, ".py"), string(filepath.Separator), ".")
		modules = append(modules, strings.TrimSuffix(m, ".__init__"))
	}
	cmd := exec.Command(python, append([]string{"-c", inspectScript}, modules...)...) // not -I: PYTHONPATH finds the package
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("testenv: inspect: %v", err)
	}
	var located []Located
	if err := json.Unmarshal(out, &located); err != nil {
		tb.Fatal(err)
	}
	return located
}

// PythonWithPytest returns Debian's Python (/usr/bin/python3) when it
// imports pytest and coverage, which .ci/run installs from Debian's
// python3-pytest and python3-coverage; the test fails without them.
func PythonWithPytest(tb testing.TB) string {
	tb.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import pytest, coverage").CombinedOutput(); err != nil {
		tb.Fatalf("testenv: %s cannot import pytest and coverage (apt-get install python3-pytest python3-coverage): %v\n%s", python, err, out)
	}
	return python
}

// callsScript runs a test file's tests with pytest and records, for each
// test, the functions of the target file it called from its setup to its
// teardown: the tests' oracle for which tests reach a function. A call
// made while a module's top-level code is on the stack (an import, at
// collection or during the test) is not the test's. Python's profile hook
// sees the calls; nothing here measures coverage or reads the product's
// records.
const callsScript = `
import json, os, sys, threading
import pytest
root, test_file, target, out_path = sys.argv[1:5]
target = os.path.realpath(target)
calls, current = {}, [None]
base = sys._getframe()  # this script's own top level
def importing(frame):
    while frame is not None and frame is not base:
        if frame.f_code.co_name == "<module>":
            return True
        frame = frame.f_back
    return False
def prof(frame, event, arg):
    if event != "call" or current[0] is None or os.path.realpath(frame.f_code.co_filename) != target:
        return
    if not importing(frame.f_back):
        calls.setdefault(current[0], set()).add(frame.f_code.co_qualname)
class Track:
    def pytest_runtest_logstart(self, nodeid, location):
        current[0] = nodeid
    def pytest_runtest_logfinish(self, nodeid, location):
        current[0] = None
    def pytest_runtest_logreport(self, report):
        if report.outcome != "passed":
            calls.setdefault(report.nodeid, set()).add("<failed>")
sys.path.insert(0, root)
os.chdir(root)
threading.setprofile(prof)
sys.setprofile(prof)
pytest.main(["-q", "-p", "no:cacheprovider", test_file], plugins=[Track()])
sys.setprofile(None)
with open(out_path, "w") as f:
    json.dump({k: sorted(v) for k, v in calls.items()}, f)
`

// PythonCalls runs the tests of testFile (relative to repo) with python
// and returns, by pytest node id, the __qualname__ of each function of
// target (relative to repo) that the test called itself, outside any
// import, and "<failed>" for a test that did not pass; a test that called
// none of them and passed is absent.
func PythonCalls(tb testing.TB, python, repo, testFile, target string) map[string][]string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "calls.json")
	cmd := exec.Command(python, "-c", callsScript, repo, testFile, filepath.Join(repo, target), out)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("testenv: the calls of %s: %v\n%s", testFile, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	var calls map[string][]string
	if err := json.Unmarshal(data, &calls); err != nil {
		tb.Fatal(err)
	}
	return calls
}
