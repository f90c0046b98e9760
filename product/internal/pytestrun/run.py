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

MAX_CALLS = 20000
calls, seen = [], set()


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

    class Recorder:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                prev = outcomes.get(report.nodeid)
                if prev is None or prev == "passed":
                    outcomes[report.nodeid] = report.outcome

    cov = coverage.Coverage(data_file=None, source=[root], config_file=False)
    code = 0
    cov.start()
    if watched is not None:
        threading.setprofile(profile)
        sys.setprofile(profile)
    try:
        if command:
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
    res.update({"exit": code, "outcomes": outcomes, "files": files})
    if watched is not None:
        res["calls"] = calls
out.write(json.dumps(res))
out.flush()
