package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// optionsScript is the tests' oracle for where Python code defines its
// options and reads its environment, by running it: argparse's
// add_argument, optparse's add_option (which a parser calls itself for its
// --help and --version) and click's Option and Argument are wrapped to record what
// each call made (the option strings argparse or click parsed from it, and
// click's envvar), os.environ is replaced by a mapping that records every
// read the target's own code makes (a subscript, get, setdefault, pop, in,
// and os.getenv through it; not a library's read on its behalf),
// and typer's apps are turned into click commands by typer itself. A
// record's lines are those of the call in the target file that led there,
// as the interpreter's own code positions give them, and for a typer
// parameter those of its command function. The product reads the source
// with an ast walk; nothing here does.
const optionsScript = `
import argparse, importlib.abc, importlib.machinery, inspect, io, json, os, sys, types
target, name, stubs, calls = os.path.realpath(sys.argv[1]), sys.argv[2], [s for s in sys.argv[3].split(",") if s], sys.argv[4:]
rec = []
sys.stdout = io.StringIO()  # what the module prints (a help text) is not the record

def where():
    f = sys._getframe(1)
    while f is not None and os.path.realpath(f.f_code.co_filename) != target:
        f = f.f_back
    if f is None:
        return None
    pos = list(f.f_code.co_positions())[f.f_lasti // 2]
    return pos[0], pos[1]

def reader():
    """Where the target itself read the environment: the frame calling the
    mapping's method (or os.getenv calling it), when it is the target's."""
    f = sys._getframe(2)
    if f.f_code is os.getenv.__code__:
        f = f.f_back
    if os.path.realpath(f.f_code.co_filename) != target:
        return None
    pos = list(f.f_code.co_positions())[f.f_lasti // 2]
    return pos[0], pos[1]

def record(kind, names, at):
    if at is not None and names:
        rec.append({"kind": kind, "names": list(names), "start": at[0], "end": at[1]})

orig_add = argparse._ActionsContainer.add_argument
def add_argument(self, *a, **k):
    action = orig_add(self, *a, **k)
    record("flag", action.option_strings, where())
    return action
argparse._ActionsContainer.add_argument = add_argument

import optparse
orig_add_option = optparse.OptionContainer.add_option
def add_option(self, *a, **k):
    option = orig_add_option(self, *a, **k)
    record("flag", option._short_opts + option._long_opts, where())
    return option
optparse.OptionContainer.add_option = add_option

def envvars(p):
    e = p.envvar
    return [] if e is None else ([e] if isinstance(e, str) else list(e))

try:
    import click
except ImportError:
    click = None
if click is not None:
    for cls in (click.Option, click.Argument):
        def wrap(orig):
            def init(self, *a, **k):
                orig(self, *a, **k)
                at = where()
                if isinstance(self, click.Option):
                    record("flag", self.opts + self.secondary_opts, at)
                for e in envvars(self):
                    record("env", [e], at)
            return init
        cls.__init__ = wrap(cls.__init__)

class Environ(dict):
    def __getitem__(self, k):
        record("env", [k], reader())
        return dict.__getitem__(self, k)
    def get(self, k, d=None):
        record("env", [k], reader())
        return dict.get(self, k, d)
    def setdefault(self, k, d=None):
        record("env", [k], reader())
        return dict.setdefault(self, k, d)
    def pop(self, k, *d):
        record("env", [k], reader())
        return dict.pop(self, k, *d)
    def __contains__(self, k):
        record("env", [k], reader())
        return dict.__contains__(self, k)
os.environ = Environ(os.environ)

class Stub(types.ModuleType):
    """A module a stubbed package would hold: any name is a stub too."""
    __path__ = []
    def __getattr__(self, n):
        if n.startswith("__"):
            raise AttributeError(n)
        return Anything()
class Anything:
    def __call__(self, *a, **k):
        return a[0] if len(a) == 1 and callable(a[0]) and not k else Anything()
    def __getattr__(self, n):
        return Anything()
class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in stubs:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None
    def create_module(self, spec):
        return Stub(spec.name)
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, StubFinder())

m = types.ModuleType(name)
m.__file__ = target
m.__package__ = name.rpartition(".")[0]
sys.modules[name] = m
exec(compile(open(target, "rb").read(), target, "exec"), m.__dict__)

def typer_apps():
    import typer, typer.main
    for v in list(vars(m).values()):
        if not isinstance(v, typer.Typer):
            continue
        cmd = typer.main.get_command(v)
        for c in ([cmd] + list(getattr(cmd, "commands", {}).values())):
            fn = inspect.unwrap(c.callback) if c.callback else None
            if fn is None or os.path.realpath(fn.__code__.co_filename) != target:
                continue
            lines = [l for _, _, l in fn.__code__.co_lines() if l]
            at = (fn.__code__.co_firstlineno, max(lines))
            params = inspect.signature(fn).parameters
            for p in c.params:
                if p.name not in params:
                    continue
                if isinstance(p, click.Option):
                    record("flag", p.opts + p.secondary_opts, at)
                for e in envvars(p):
                    record("env", [e], at)

for call in calls:
    try:
        eval(call, {"m": m, "typer_apps": typer_apps})
    except SystemExit:
        pass
sys.stdout = sys.__stdout__
json.dump(rec, sys.stdout)
`

// PyDefined is a flag a run saw defined, or an environment variable it
// saw read: its names, and the lines of the call in the target file that
// did it (for a typer parameter, its command function's).
type PyDefined struct {
	Kind       string // "flag" or "env"
	Names      []string
	Start, End int
}

// PythonOptions runs file as the module name with python, sys.path given
// by pythonPath, the top-level packages stubs replaced by stubs that
// accept anything (the packages it imports that this machine lacks), and
// then evaluates each of calls (Python expressions with the module as m:
// "m.main(['prog', '-h'])", and "typer_apps()" for its typer apps). It
// returns what the run recorded (optionsScript): the tests' oracle for
// Python's options, by execution.
func PythonOptions(tb testing.TB, python string, pythonPath []string, file, name string, stubs []string, calls ...string) []PyDefined {
	tb.Helper()
	args := append([]string{"-c", optionsScript, file, name, strings.Join(stubs, ",")}, calls...)
	cmd := exec.Command(python, args...) // not -I: PYTHONPATH finds the packages
	cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join(pythonPath, string(os.PathListSeparator)), "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("testenv: running %s: %v\n%s", file, err, stderr.String())
	}
	var defs []PyDefined
	if err := json.Unmarshal(out, &defs); err != nil {
		tb.Fatalf("testenv: the record of %s: %v\n%s", file, err, out)
	}
	return defs
}
