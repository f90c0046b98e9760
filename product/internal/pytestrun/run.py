# needle: run pytest node ids under coverage.py and print what ran as JSON.
# Run by Needle with the repository's interpreter, in the sandbox, in a
# disposable checkout of the snapshot (read-only; TMPDIR and HOME are the
# run's own box), as python -B -c <this> <node id>...: as
# `python -m pytest` would, the checkout's root comes first on sys.path.
# Everything pytest prints goes to stderr; the record alone to stdout.
import json
import os
import sys

out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
res = {"python": "%d.%d.%d" % tuple(sys.version_info[:3])}
root = os.getcwd()
sys.path.insert(0, root)
for name in ("coverage", "pytest"):
    try:
        __import__(name)
    except ImportError:
        res["missing"] = name
        break
if "missing" not in res:
    import coverage
    import pytest

    outcomes = {}

    class Recorder:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                prev = outcomes.get(report.nodeid)
                if prev is None or prev == "passed":
                    outcomes[report.nodeid] = report.outcome

    cov = coverage.Coverage(data_file=None, source=[root], config_file=False)
    cov.start()
    try:
        code = pytest.main(["-p", "no:cacheprovider", "-q", "--rootdir", root, "--"] + sys.argv[1:], plugins=[Recorder()])
    finally:
        cov.stop()
    # The files the run imported or executed: coverage also lists, with no
    # lines, the files of root no one imported.
    data = cov.get_data()
    imported = {os.path.realpath(m.__file__) for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)}
    files = {}
    for f in data.measured_files():
        lines = sorted(n for n in data.lines(f) or [] if n > 0)  # an empty module's line 0
        rel = os.path.relpath(f, root)
        if (lines or os.path.realpath(f) in imported) and not rel.startswith(".." + os.sep) and rel != ".." and not os.path.isabs(rel):
            files[rel.replace(os.sep, "/")] = lines
    res.update({"exit": int(code), "outcomes": outcomes, "files": files})
out.write(json.dumps(res))
out.flush()
