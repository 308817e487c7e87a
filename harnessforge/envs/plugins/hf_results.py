"""HarnessForge's pytest plugin: writes every test and collection report to $HF_RESULTS as JSON lines.

Loaded with `PYTHONPATH=<this dir> python -m pytest -p hf_results`, so nothing is installed into the
repository's environment. Statuses come from pytest's own report objects, never from the console,
which the code under test can print anything to. A `session_start` and a `session_finish` line prove
the session really ran to its end. Standard library only, and hooks that exist since pytest 3, because
old repositories pin old pytests and old Pythons (hence no f-strings and no annotations here).
"""

import json
import os

# path: where to write (None writes nothing, so loading the plugin by accident is harmless);
# prefix: pytest's nodeids are relative to its rootdir, ours to the directory pytest was started in.
_STATE = {"path": os.environ.get("HF_RESULTS") or None, "prefix": ""}


def _write(record):
    if not _STATE["path"]:
        return
    # One open per line: each line is on disk as soon as it happens, so a killed run keeps what it reported.
    # The directory is made if missing: the Dev's own pytest runs report into one it may have removed.
    directory = os.path.dirname(_STATE["path"])
    if directory and not os.path.isdir(directory):
        os.makedirs(directory)
    with open(_STATE["path"], "a") as f:
        f.write(json.dumps(record) + "\n")


def _nodeid(nodeid):
    return _STATE["prefix"] + nodeid if nodeid else nodeid


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        _STATE["path"] = None  # an xdist worker: the controller's hooks see (and write) its reports
        return
    params = getattr(config, "invocation_params", None)
    start_dir = str(params.dir) if params is not None else os.getcwd()
    prefix = os.path.relpath(str(config.rootdir), start_dir).replace(os.sep, "/")
    if prefix != "." and not prefix.startswith(".."):
        _STATE["prefix"] = prefix + "/"


def pytest_sessionstart(session):
    import pytest

    _write({"event": "session_start", "pytest": pytest.__version__, "rootdir": str(session.config.rootdir)})


def pytest_collectreport(report):
    if report.failed:
        text = getattr(report, "longreprtext", None) or str(report.longrepr)
        _write({"event": "collect_error", "nodeid": _nodeid(report.nodeid), "longrepr": text[-2000:]})


def pytest_runtest_logreport(report):
    record = {"event": "test", "nodeid": _nodeid(report.nodeid), "when": report.when, "outcome": report.outcome}
    record["wasxfail"] = hasattr(report, "wasxfail")
    if report.when == "setup":
        record["location"] = _location(report)
    _write(record)


def _location(report):
    """[file, 1-based line] where the test function is defined: for a test inherited from a mixin,
    the mixin's file, which is how a changed mixin is traced to the classes that run it."""
    location = getattr(report, "location", None)
    if not location or not location[0]:
        return None
    line = location[1] + 1 if isinstance(location[1], int) else None
    return [_STATE["prefix"] + str(location[0]).replace(os.sep, "/"), line]


def pytest_sessionfinish(session, exitstatus):
    _write({"event": "session_finish", "exitstatus": int(exitstatus)})
