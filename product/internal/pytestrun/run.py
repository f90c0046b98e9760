# needle: run pytest node ids, or a Python command, under coverage.py and
# print what ran as JSON. Run by Needle with the repository's interpreter,
# in the sandbox, in a disposable checkout of the snapshot (read-only;
# TMPDIR and HOME are the run's own box), as
#   python -B -c <this> [--calls FILES] NODE_ID...
#   python -B -c <this> [--calls FILES] --module MODULE|--path FILE [ARG...]
# As `python -m pytest` would, the checkout's root comes first on sys.path.
# With --calls (a comma-separated list of the checkout's files), every call
# into or out of a function of those files is recorded, in order, once per
# call site and callee. Everything the run prints goes to stderr; the
# record alone to stdout.
import json
import os
import runpy
import sys
import threading
import weakref

out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
res = {"python": "%d.%d.%d" % tuple(sys.version_info[:3])}
root = os.getcwd()
sys.path.insert(0, root)
args = sys.argv[1:]
watched = None
if args[:1] == ["--calls"]:
    watched = {os.path.join(root, f) for f in args[1].split(",") if f}
    args = args[2:]
command = args[:1] in (["--module"], ["--path"])
for name in ("coverage",) if command else ("coverage", "pytest"):
    try:
        __import__(name)
    except ImportError:
        res["missing"] = name
        break
    if name == "coverage" and not hasattr(sys.modules["coverage"].Coverage, "switch_context"):
        res["missing"] = name  # before 5.0: no dynamic contexts, which the record needs
        break

MAX_CALLS = 20000
calls, seen = [], set()

# Coverage's dynamic context of what runs now: "test" from a test's setup
# to its teardown (a command's whole run), "import" while a module body
# executes, "collect" otherwise. contexts[-1] is the current one.
contexts = ["collect"]

# argparse and optparse: where the options a run parsed were defined, and
# which of their values code other than the parser read during a test.
# Namespace's and Values' __getattribute__ record the reads of the
# namespaces parses filled in, tracked by id while they live (a weakref's
# callback forgets one that dies); nothing keeps a namespace alive or
# changes its class, so a test sees what it would see without Needle.
MAX_READS = 5000
sites = {}  # id(action) -> (weakref to the action, file, line): actions defined in root
tracked = {}  # id(namespace) -> its record, while it lives
records = []  # every record: {"actions": {id: (file, line, names, dest)}, "reads": set(), "traced": bool}
active = []  # the namespace of the parse under way (subparsers parse into their own)
invoked = set()  # ids of help and version actions a test's parse ran


def record_site(action):
    # The call in root that led here: the add_argument itself, or, for a
    # parser's own -h/--help, the call that built the parser.
    f = sys._getframe(2)
    while f is not None and not f.f_code.co_filename.startswith(root + os.sep):
        f = f.f_back
    if f is not None and len(sites) < MAX_READS:
        try:
            sites[id(action)] = (weakref.ref(action), rel(f.f_code.co_filename), f.f_lineno)
        except TypeError:
            pass
    return action


def option_names(a):
    if hasattr(a, "_long_opts"):
        return sorted(a._long_opts + a._short_opts)
    return sorted(a.option_strings) or ([a.dest] if a.dest else [])


def record_of(namespace, traced):
    rec = tracked.get(id(namespace))
    if rec is None:
        rec = {"actions": {}, "reads": set(), "traced": traced}
        if len(records) >= MAX_READS:
            return rec
        try:
            weakref.finalize(namespace, tracked.pop, id(namespace), None)
        except TypeError:
            rec["traced"] = False  # its death would go unseen, and its id reused
        else:
            tracked[id(namespace)] = rec
        records.append(rec)
    return rec


def add_actions(rec, parser):
    actions = parser._actions if hasattr(parser, "_actions") else parser._get_all_options()
    for a in actions:
        site = sites.get(id(a))
        if site and site[0]() is a and (a.dest or option_names(a)):
            # help, version: no value to read; they act when given.
            valueless = getattr(a, "action", None) in ("help", "version") or type(a).__name__ in ("_HelpAction", "_VersionAction")
            rec["actions"][id(a)] = (site[1], site[2], option_names(a), None if valueless else a.dest)


def watch_parsers():
    import argparse
    import optparse

    parser_files = {argparse.__file__, optparse.__file__}

    def getattribute(self, name):
        if contexts[-1] == "test" and (name == "__dict__" or not name.startswith("__")):
            rec = tracked.get(id(self))
            if rec is not None and len(rec["reads"]) < MAX_READS and sys._getframe(1).f_code.co_filename not in parser_files:
                rec["reads"].add(name)
        return object.__getattribute__(self, name)

    for cls in (argparse.Namespace, optparse.Values):
        cls.__getattribute__ = getattribute

    def traced(namespace):
        return type(namespace).__getattribute__ is getattribute

    add_argument = argparse._ActionsContainer.add_argument
    argparse._ActionsContainer.add_argument = lambda self, *a, **k: record_site(add_argument(self, *a, **k))
    add_option = optparse.OptionContainer.add_option
    optparse.OptionContainer.add_option = lambda self, *a, **k: record_site(add_option(self, *a, **k))
    parse_known_args = argparse.ArgumentParser.parse_known_args

    def parse_known(self, args=None, namespace=None):
        if namespace is None:
            namespace = argparse.Namespace()
        outer = not active
        if outer:
            active.append(namespace)
        try:
            add_actions(record_of(active[0], traced(active[0])), self)
            return parse_known_args(self, args, namespace)
        finally:
            if outer:
                active.pop()

    argparse.ArgumentParser.parse_known_args = parse_known
    parse_args = optparse.OptionParser.parse_args

    def parse(self, args=None, values=None):
        # As optparse would, but with the values object in hand: what
        # parse_args returns is left alone (a subclass may return anything).
        if values is None:
            values = self.get_default_values()
        add_actions(record_of(values, traced(values)), self)
        return parse_args(self, args, values)

    optparse.OptionParser.parse_args = parse

    # A help or version option has no value to read: it acts when given.
    def invoking(orig):
        def __call__(self, *a, **k):
            if contexts[-1] == "test":
                invoked.add(id(self))
            return orig(self, *a, **k)
        return __call__

    for cls in (argparse._HelpAction, argparse._VersionAction):
        cls.__call__ = invoking(cls.__call__)
    take_action = optparse.Option.take_action

    def take(self, action, *a, **k):
        if action in ("help", "version") and contexts[-1] == "test":
            invoked.add(id(self))
        return take_action(self, action, *a, **k)

    optparse.Option.take_action = take


def parsed_reads():
    """The options defined in root that a parse filled in, one entry per
    option: read when code other than the parser read its value during a
    test (a help or version option: when the parse ran it), untraced when a namespace of its was of a class that reads its
    attributes its own way (not argparse's Namespace or optparse's Values,
    or a subclass overriding __getattribute__)."""
    out = {}
    for rec in records:
        for aid, (file, line, names, dest) in rec["actions"].items():
            # The options one call made (a parser built twice) are one.
            entry = out.setdefault((file, line, tuple(names)), {"file": file, "line": line, "names": names})
            if aid in invoked or dest is not None and rec["traced"] and (dest in rec["reads"] or "__dict__" in rec["reads"]):
                entry["read"] = True  # one read decides
                entry.pop("untraced", None)
            elif not rec["traced"] and not entry.get("read"):
                entry["untraced"] = True
    return [out[k] for k in sorted(out)]


def rel(f):
    return os.path.relpath(f, root).replace(os.sep, "/")


def profile(frame, event, arg):
    if event != "call" or len(calls) >= MAX_CALLS:
        return
    callee = frame.f_code.co_filename
    caller = frame.f_back
    if caller is None or (callee not in watched and caller.f_code.co_filename not in watched):
        return
    key = (caller.f_code.co_filename, caller.f_lineno, callee, frame.f_code.co_firstlineno)
    if key in seen:
        return
    seen.add(key)
    if callee.startswith(root + os.sep) and caller.f_code.co_filename.startswith(root + os.sep):
        calls.append([rel(key[0]), key[1], rel(callee), key[3], frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") else frame.f_code.co_name])


if "missing" not in res:
    import coverage

    outcomes = {}

    # Coverage's dynamic contexts tell what a test ran ("test": from its
    # setup to its teardown, or the whole command) from what importing a
    # module ran ("import": a module body executing, and what it calls,
    # whenever the import happens) and from pytest's collection.
    def switch(name):
        contexts[-1] = name
        cov.switch_context(name)

    class Recorder:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                prev = outcomes.get(report.nodeid)
                if prev is None or prev == "passed":
                    outcomes[report.nodeid] = report.outcome

        def pytest_runtest_logstart(self, nodeid, location):
            switch("test")

        def pytest_runtest_logfinish(self, nodeid, location):
            switch("collect")

    import importlib._bootstrap_external as bootstrap

    exec_module = bootstrap._LoaderBasics.exec_module
    # Compiled under importlib's own name: the warnings machinery and import
    # tracebacks leave its frame out as they leave out importlib's, so a
    # module-level warning still points at the module.
    scope = {"exec_module": exec_module, "contexts": contexts}
    exec(compile(
        "def importing(self, module):\n"
        "    contexts.append('import')\n"
        "    cov.switch_context('import')\n"
        "    try:\n"
        "        return exec_module(self, module)\n"
        "    finally:\n"
        "        contexts.pop()\n"
        "        cov.switch_context(contexts[-1])\n",
        "<frozen importlib._bootstrap_external>", "exec"), scope)
    importing = scope["importing"]

    watch_parsers()
    # Branch measurement records, besides lines, the entry of each code
    # object (an arc from minus its first line): a call of a function
    # whose body shares the def's line shows only there.
    cov = coverage.Coverage(data_file=None, source=[root], config_file=False, branch=True)
    code = 0
    cov.start()
    scope["cov"] = cov
    bootstrap._LoaderBasics.exec_module = importing
    if watched is not None:
        threading.setprofile(profile)
        sys.setprofile(profile)
    try:
        if command:
            switch("test")
            sys.argv = [args[1]] + args[2:]
            try:
                if args[0] == "--module":
                    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(os.path.join(root, args[1]), run_name="__main__")
            except SystemExit as e:
                code = (e.code if isinstance(e.code, int) else (0 if e.code is None else 1)) % 256
        else:
            import pytest

            code = int(pytest.main(["-p", "no:cacheprovider", "-q", "--rootdir", root, "--"] + args, plugins=[Recorder()]))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        bootstrap._LoaderBasics.exec_module = exec_module
        cov.stop()
    # The files the run imported or executed: coverage also lists, with no
    # lines, the files of root no one imported.
    data = cov.get_data()
    imported = {os.path.realpath(m.__file__) for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)}
    files = {}
    for f in data.measured_files():
        lines = sorted(n for n in data.lines(f) or [] if n > 0)  # an empty module's line 0
        r = os.path.relpath(f, root)
        if (lines or os.path.realpath(f) in imported) and not r.startswith(".." + os.sep) and r != ".." and not os.path.isabs(r):
            files[r.replace(os.sep, "/")] = lines
    # What the tests (or the command) themselves ran, imports left out.
    data.set_query_contexts(["^test$"])
    ran, entered = {}, {}
    for f in data.measured_files():
        r = os.path.relpath(f, root).replace(os.sep, "/")
        if r in files:
            lines = sorted(n for n in data.lines(f) or [] if n > 0)
            if lines:
                ran[r] = lines
            # Line 1 is the module's own entry, never told from a def there.
            firsts = sorted({-a for a, _ in data.arcs(f) or [] if a < -1})
            if firsts:
                entered[r] = firsts
    data.set_query_contexts(None)
    res.update({"exit": code, "outcomes": outcomes, "files": files, "ran": ran, "entered": entered})
    read = parsed_reads()
    if read:
        res["reads"] = read
    if watched is not None:
        res["calls"] = calls
out.write(json.dumps(res))
out.flush()
