package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Test reach of a Python package version, the harness's way: by execution,
// and by a method of its own (not the product's coverage.py records). At
// corpus generation the package's tests run once under pytest, in the
// sandbox, with Python's profile hook on: a test reached a function when,
// between the start of its setup and the end of its teardown, the function
// was called and no module's top-level code was on the stack (a call an
// import makes is the import's, whenever it happens). The result has the
// Coverage format: a "package" per test file, a test per pytest node id
// (its name after the file's "::"), the functions by "path#qualname"
// (Python's __qualname__ without its "<locals>." parts) of the package's
// files that are not tests (test_*.py, *_test.py, conftest.py).

// pyCoverScript runs the tests and prints the record. argv: the output
// file, then the test files (relative to the working directory, the
// package's root).
const pyCoverScript = `
import json, os, sys, threading
import pytest
out_path, files = sys.argv[1], sys.argv[2:]
root = os.getcwd()
sys.path.insert(0, root)
base = sys._getframe()
tests, current, codes = {}, [None], {}

def importing(frame):
    while frame is not None and frame is not base:
        if frame.f_code.co_name == "<module>":
            return True
        frame = frame.f_back
    return False

def called(frame, event, arg):
    if event != "call" or current[0] is None:
        return
    code = frame.f_code
    key = codes.get(code)
    if key is None:
        f = code.co_filename
        key = ""
        b = os.path.basename(f)
        test = b.startswith("test_") or b.endswith("_test.py") or b == "conftest.py"
        if f.startswith(root + os.sep) and code.co_name != "<module>" and not test:
            name = getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")
            key = os.path.relpath(f, root).replace(os.sep, "/") + "#" + name
        codes[code] = key
    if key and key not in current[0]["called"] and not importing(frame.f_back):
        current[0]["called"].add(key)

class Track:
    def pytest_runtest_logstart(self, nodeid, location):
        current[0] = tests.setdefault(nodeid, {"called": set(), "outcome": "pass"})
    def pytest_runtest_logfinish(self, nodeid, location):
        current[0] = None
    def pytest_runtest_logreport(self, report):
        t = tests.setdefault(report.nodeid, {"called": set(), "outcome": "pass"})
        if report.outcome == "failed":
            t["outcome"] = "fail"
        elif report.outcome == "skipped" and t["outcome"] == "pass":
            t["outcome"] = "skip"

threading.setprofile(called)
sys.setprofile(called)
pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", root] + files, plugins=[Track()])
sys.setprofile(None)
threading.setprofile(None)
with open(out_path, "w") as f:
    json.dump({"python": "%d.%d.%d" % tuple(sys.version_info[:3]),
               "tests": {k: {"called": sorted(v["called"]), "outcome": v["outcome"]} for k, v in tests.items()}}, f)
`

// pyTestFile reports whether a path is a test file pytest collects by
// default (test_*.py or *_test.py).
func pyTestFile(p string) bool {
	b := path.Base(p)
	return strings.HasSuffix(b, ".py") && (strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py"))
}

// coverPython runs every test of the Python package version whose source
// is t with python, in the sandbox, and returns what each test reached.
func coverPython(ctx context.Context, opts coverageOptions, python, module, version string, t tree) (*Coverage, error) {
	var files []string
	for f := range t {
		if pyTestFile(f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	if opts.progress != nil {
		opts.progress(fmt.Sprintf("coverage %s@%s: %d test files", module, version, len(files)))
	}
	data, err := runPyScript(ctx, opts, python, t, false, pyCoverScript, files...)
	if err != nil {
		return nil, fmt.Errorf("coverage of %s@%s: %w", module, version, err)
	}
	var rec struct {
		Python string `json:"python"`
		Tests  map[string]struct {
			Called  []string `json:"called"`
			Outcome string   `json:"outcome"`
		} `json:"tests"`
	}
	if err := decodeStrict(data, &rec); err != nil {
		return nil, fmt.Errorf("coverage of %s@%s: %w", module, version, err)
	}
	c := &Coverage{Format: CoverageFormat, Module: module, Version: version, GoVersion: "python" + rec.Python, Sandbox: opts.sandbox.String()}
	index := map[string]int{}
	pkgs := map[string]*CoveredPackage{}
	for _, id := range slices.Sorted(mapKeys(rec.Tests)) {
		file, name, ok := strings.Cut(id, "::")
		if !ok || t[file] == nil {
			return nil, fmt.Errorf("coverage of %s@%s: pytest ran %q, not a test of the package", module, version, id)
		}
		p := pkgs[file]
		if p == nil {
			p = &CoveredPackage{Dir: file}
			pkgs[file] = p
		}
		r := rec.Tests[id]
		ct := CoveredTest{Name: name, Outcome: r.Outcome, Executed: []int{}}
		for _, key := range r.Called {
			if _, ok := index[key]; !ok {
				index[key] = len(c.Functions)
				c.Functions = append(c.Functions, key)
			}
			ct.Executed = append(ct.Executed, index[key])
		}
		p.Tests = append(p.Tests, ct)
	}
	for _, f := range files {
		if p := pkgs[f]; p != nil {
			c.Packages = append(c.Packages, *p)
		}
	}
	return c, nil
}

// runPyScript runs script with python on a copy of t, in the sandbox, as
// `python -B -c script OUT args...`, and returns what the script wrote to
// OUT. The copy is the working directory; the script may write the copy
// (writable: a truth's interventions) and a scratch directory (TMPDIR,
// HOME), nothing else.
func runPyScript(ctx context.Context, opts coverageOptions, python string, t tree, writable bool, script string, args ...string) ([]byte, error) {
	work, err := os.MkdirTemp(opts.scratch, "py-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	src, tmp := filepath.Join(work, "src"), filepath.Join(work, "tmp")
	if err := syncTree(src, t); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	out := filepath.Join(tmp, "out.json")
	roots := []string{tmp}
	if writable {
		roots = append(roots, src)
	}
	argv := opts.sandbox.wrap(src, roots, append([]string{python, "-B", "-c", script, out}, args...))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), append(opts.sandbox.env(), "TMPDIR="+tmp, "HOME="+tmp, "PYTHONDONTWRITEBYTECODE=1")...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, tailString(stderr.String(), 2000))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("no record (%v): %s", err, tailString(stderr.String(), 2000))
	}
	return data, nil
}

// tailString is the end of s, at most n bytes.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "… " + s[len(s)-n:]
}
