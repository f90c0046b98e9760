package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The intervention truth of Python symbol locations. On a copy of the
// package, every declaration of the files a subject may live in gets a
// marker of its own: a function's body (after its docstring) or a class's
// body starts by binding __needle__ to "needle-unit-N". The copy is then
// imported and each subject resolved as Python resolves it (the longest
// importable module, then attributes; decorators unwrapped, a property's
// getter, a static or class method's function): the declaration whose
// marker the resolved object carries (a function's code constants, a
// class's own namespace) is the subject's, every other one of its file is
// not. The product's parser plays no part: the declarations are listed by
// this script's own ast walk, and which one a name means is what the
// running interpreter says.

// pyMarkScript marks, imports and resolves. argv: the output file, the
// files to mark (relative to the working directory, the copy's root), "--",
// the subjects.
const pyMarkScript = `
import ast, importlib, inspect, json, os, sys
args = sys.argv[1:]
out_path, files, subjects = args[0], args[1:args.index("--")], args[args.index("--") + 1:]
root = os.getcwd()
units = []

def marker(i):
    return ast.Assign(targets=[ast.Name(id="__needle__", ctx=ast.Store())], value=ast.Constant("needle-unit-%d" % i), lineno=0)

def walk(body, prefix, path, in_class):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            i = len(units)
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            kind = "type" if isinstance(node, ast.ClassDef) else ("method" if in_class else "func")
            units.append({"path": path, "name": prefix + node.name, "kind": kind, "doc": first, "head": node.lineno, "end": node.end_lineno})
            walk(node.body, prefix + node.name + ".", path, isinstance(node, ast.ClassDef))
            at = 1 if node.body and isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str) else 0
            node.body.insert(at, marker(i))
        else:
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(node, field, None)
                if isinstance(sub, list) and not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                    walk(sub, prefix, path, in_class)
            for h in getattr(node, "handlers", None) or []:
                walk(h.body, prefix, path, in_class)

for path in files:
    tree = ast.parse(open(path, "rb").read(), filename=path)
    walk(tree.body, "", path, False)
    with open(path, "w") as f:
        f.write(ast.unparse(ast.fix_missing_locations(tree)))

sys.path.insert(0, root)

def resolve(name):
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        owner = None
        for p in parts[k:]:
            owner, obj = obj, inspect.getattr_static(obj, p) if inspect.isclass(obj) else getattr(obj, p)
        return obj
    raise ImportError(name)

def unit_of(obj):
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    if inspect.isclass(obj):
        v = vars(obj).get("__needle__")
    else:
        obj = inspect.unwrap(obj)
        code = getattr(obj, "__code__", None)
        v = next((c for c in code.co_consts if isinstance(c, str) and c.startswith("needle-unit-")), None) if code else None
    return int(v[len("needle-unit-"):]) if isinstance(v, str) and v.startswith("needle-unit-") else -1

resolved = {}
for s in subjects:
    try:
        resolved[s] = {"unit": unit_of(resolve(s))}
    except Exception as e:
        resolved[s] = {"unit": -1, "why": "%s: %s" % (type(e).__name__, e)}
with open(out_path, "w") as f:
    json.dump({"units": units, "resolved": resolved}, f)
`

// pyLocationTruth marks the declarations of files (paths of t) on a copy,
// imports it with python in the sandbox, and returns the declarations and,
// per symbol subject, a record for each declaration of the file holding
// the one the subject resolved to (true for it, false for the others); a
// subject that resolves to none of them has one unjudged record.
func pyLocationTruth(ctx context.Context, opts coverageOptions, python string, t tree, files, subjects []string) ([]unit, []LocationCase, error) {
	data, err := runPyScript(ctx, opts, python, t, true, pyMarkScript, append(append(slices.Clone(files), "--"), subjects...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("location truth: %w", err)
	}
	var rec struct {
		Units    []unit `json:"units"`
		Resolved map[string]struct {
			Unit int    `json:"unit"`
			Why  string `json:"why,omitempty"`
		} `json:"resolved"`
	}
	if err := decodeStrict(data, &rec); err != nil {
		return nil, nil, fmt.Errorf("location truth: %w", err)
	}
	var cases []LocationCase
	for _, s := range subjects {
		r, ok := rec.Resolved[s]
		if !ok || r.Unit < 0 || r.Unit >= len(rec.Units) {
			why := "Python did not resolve it to a marked declaration"
			if r.Why != "" {
				why += " (" + r.Why + ")"
			}
			cases = append(cases, LocationCase{Subject: "symbol:" + s, Unit: -1, Verdict: verdictUnjudged, Why: why})
			continue
		}
		own := rec.Units[r.Unit]
		for i, u := range rec.Units {
			if u.Path != own.Path {
				continue
			}
			v, why := verdictFalse, "Python resolves "+s+" to "+own.Name+" ("+own.Path+":"+strconv.Itoa(own.Head)+"), not to "+u.Name
			if i == r.Unit {
				v, why = verdictTrue, "the object Python resolves "+s+" to carries the marker of "+u.Name
			}
			cases = append(cases, LocationCase{Subject: "symbol:" + s, Unit: i, Verdict: v, Why: why})
		}
	}
	slices.SortStableFunc(cases, func(a, b LocationCase) int { return strings.Compare(a.Subject, b.Subject) })
	return rec.Units, cases, nil
}

// The intervention truth of Python focused tests. On a copy, the
// subject's declaration (a function or method, found by this script's own
// ast walk) gets a first statement that breaks it: while a test runs (its
// setup to its teardown) and no module's top-level code is on the stack,
// entering the body raises a BaseException of the harness's own, which
// `except Exception` does not catch. A test reached the subject when the
// break fired during it; the test's outcome is recorded beside.

// pyBreakScript breaks and runs. argv: the output file, the file, the
// declaration's qualified name, "--", the node ids.
const pyBreakScript = `
import ast, builtins, json, os, sys
import pytest
args = sys.argv[1:]
out_path, path, qualname, ids = args[0], args[1], args[2], args[args.index("--") + 1:]
root = os.getcwd()
sys.path.insert(0, root)
base = sys._getframe()
current, fired, outcomes = [None], set(), {}

class NeedleBreak(BaseException):
    pass

def needle_break():
    if current[0] is None:
        return
    f = sys._getframe(2)
    while f is not None and f is not base:
        if f.f_code.co_name == "<module>":
            return
        f = f.f_back
    fired.add(current[0])
    raise NeedleBreak(qualname)

builtins.__needle_break__ = needle_break
tree = ast.parse(open(path, "rb").read(), filename=path)
found = []
def walk(body, prefix):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if name == qualname and not isinstance(node, ast.ClassDef):
                at = 1 if node.body and isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str) else 0
                node.body.insert(at, ast.parse("__needle_break__()").body[0])
                found.append(name)
            walk(node.body, name + ".")
        else:
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(node, field, None)
                if isinstance(sub, list) and not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                    walk(sub, prefix)
            for h in getattr(node, "handlers", None) or []:
                walk(h.body, prefix)
walk(tree.body, "")
with open(path, "w") as f:
    f.write(ast.unparse(ast.fix_missing_locations(tree)))

class Track:
    def pytest_runtest_logstart(self, nodeid, location):
        current[0] = nodeid
        outcomes.setdefault(nodeid, "pass")
    def pytest_runtest_logfinish(self, nodeid, location):
        current[0] = None
    def pytest_runtest_logreport(self, report):
        if report.outcome == "failed":
            outcomes[report.nodeid] = "fail"

if found:
    for i in ids:  # one at a time: a node id pytest does not find fails its whole run
        pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", root, i], plugins=[Track()])
with open(out_path, "w") as f:
    json.dump({"found": bool(found), "fired": sorted(fired), "outcomes": outcomes}, f)
`

// pyReachTruth breaks the declaration qualname of file on a copy of t and
// runs the tests (pytest node ids) with python in the sandbox: one record
// per test, true when the break fired during it, false when it ran
// without, unjudged when it did not run or the declaration is not there.
func pyReachTruth(ctx context.Context, opts coverageOptions, python string, t tree, subject, file, qualname string, ids []string) ([]ReachCase, error) {
	data, err := runPyScript(ctx, opts, python, t, true, pyBreakScript, append([]string{file, qualname, "--"}, ids...)...)
	if err != nil {
		return nil, fmt.Errorf("reach truth of %s: %w", subject, err)
	}
	var rec struct {
		Found    bool              `json:"found"`
		Fired    []string          `json:"fired"`
		Outcomes map[string]string `json:"outcomes"`
	}
	if err := decodeStrict(data, &rec); err != nil {
		return nil, fmt.Errorf("reach truth of %s: %w", subject, err)
	}
	var cases []ReachCase
	for _, id := range ids {
		dir, name, _ := strings.Cut(id, "::")
		c := ReachCase{Subject: "symbol:" + subject, Dir: dir, Test: name}
		_, ran := rec.Outcomes[id]
		switch {
		case !rec.Found:
			c.Verdict, c.Why = verdictUnjudged, qualname+" is not a function or method of "+file
		case slices.Contains(rec.Fired, id):
			c.Verdict, c.Why = verdictTrue, "breaking "+qualname+" broke the test itself"
		case ran:
			c.Verdict, c.Why = verdictFalse, "the test ran ("+rec.Outcomes[id]+") without entering "+qualname+" outside an import"
		default:
			c.Verdict, c.Why = verdictUnjudged, "pytest ran no test "+id
		}
		cases = append(cases, c)
	}
	return cases, nil
}
