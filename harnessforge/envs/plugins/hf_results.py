"""HarnessForge's pytest plugin: writes every test and collection report to $HF_RESULTS as JSON lines.

Loaded with `PYTHONPATH=<this dir> python -m pytest -p hf_results`, or for every pytest the Dev starts from
the shell with `PYTEST_PLUGINS=hf_results` (both at once register it once), so nothing is installed into
the repository's environment. Statuses come from pytest's own report objects, never from the console,
which the code under test can print anything to. A `session_start` and a `session_finish` line prove
the session really ran to its end. Only the outermost session of the process writes, and $HF_RESULTS is
taken out of the environment: a suite that runs pytest itself (pytester, inline or in a subprocess) must
not add its inner tests to the report. Standard library only, and hooks that exist since pytest 3, because
old repositories pin old pytests and old Pythons (hence no f-strings and no annotations here).

With $HF_TEST_TIMEOUT (seconds) set, a test whose body runs longer fails with a
timeout message: one hanging test (a pager waiting for input) marks that test, not the whole run. It is an
alarm signal, so a test blocked inside C code that ignores signals still waits for the run's own timeout.
"""

import json
import os
import signal
import threading

# path: where to write (None writes nothing, so loading the plugin by accident is harmless);
# owner: the config of the session that writes (the first one configured in this process).
_STATE = {"path": os.environ.pop("HF_RESULTS", None) or None, "owner": None}


_TIMER = {"owner": None}  # the config whose tests the alarm times (one per process: the alarm is process-wide)


def pytest_configure(config):
    _time_tests(config)
    if hasattr(config, "workerinput") or _STATE["owner"] is not None or not _STATE["path"]:
        return  # an xdist worker (the controller writes its reports), a nested session, or nowhere to write
    _STATE["owner"] = config
    params = getattr(config, "invocation_params", None)
    start_dir = str(params.dir) if params is not None else os.getcwd()
    config.pluginmanager.register(_Recorder(_STATE["path"], config.rootdir, start_dir), "hf_results_recorder")


class _Recorder(object):
    """The hooks that write, registered on the outermost session's plugin manager only."""

    def __init__(self, path, rootdir, start_dir):
        self.path = path
        # pytest's nodeids are relative to its rootdir, ours to the directory pytest was started in.
        prefix = os.path.relpath(str(rootdir), start_dir).replace(os.sep, "/")
        self.prefix = prefix + "/" if prefix != "." and not prefix.startswith("..") else ""

    def _write(self, record):
        # One open per line: each line is on disk as soon as it happens, so a killed run keeps what it reported.
        # The directory is made if missing: the Dev's own pytest runs report into one it may have removed.
        directory = os.path.dirname(self.path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory)
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def _nodeid(self, nodeid):
        return self.prefix + nodeid if nodeid else nodeid

    def pytest_sessionstart(self, session):
        import pytest

        self._write({"event": "session_start", "pytest": pytest.__version__, "rootdir": str(session.config.rootdir)})

    def pytest_collectreport(self, report):
        if report.failed:
            text = getattr(report, "longreprtext", None) or str(report.longrepr)
            self._write({"event": "collect_error", "nodeid": self._nodeid(report.nodeid), "longrepr": text[-2000:]})

    def pytest_runtest_logreport(self, report):
        record = {"event": "test", "nodeid": self._nodeid(report.nodeid), "when": report.when}
        record.update(outcome=report.outcome, wasxfail=hasattr(report, "wasxfail"))
        if report.failed:
            record["message"] = _message(report)
        if report.when == "setup":
            record["location"] = self._location(report)
        self._write(record)

    def _location(self, report):
        """[file, 1-based line] where the test function is defined: for a test inherited from a mixin,
        the mixin's file, which is how a changed mixin is traced to the classes that run it."""
        location = getattr(report, "location", None)
        if not location or not location[0]:
            return None
        line = location[1] + 1 if isinstance(location[1], int) else None
        return [self.prefix + str(location[0]).replace(os.sep, "/"), line]

    def pytest_sessionfinish(self, session, exitstatus):
        self._write({"event": "session_finish", "exitstatus": int(exitstatus)})


def _message(report):
    """What a failure says: pytest's crash line (`AssertionError: assert 1 == 2`, with its diff), else the
    end of the whole report."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    text = getattr(crash, "message", None) or getattr(report, "longreprtext", None) or str(report.longrepr)
    return text[-1500:]


def _time_tests(config):
    try:
        seconds = int(os.environ.get("HF_TEST_TIMEOUT") or 0)
    except ValueError:
        seconds = 0
    if seconds > 0 and _TIMER["owner"] is None and hasattr(signal, "SIGALRM"):
        _TIMER["owner"] = config
        config.pluginmanager.register(_timer(seconds), "hf_results_timer")


class TestTimeout(Exception):
    """Raised in a test that ran longer than $HF_TEST_TIMEOUT seconds."""

    __test__ = False


def _timer(seconds):
    """A plugin whose alarm is armed around each test's call (the test body: a hook wrapper, so the timeout is
    the call's failure, reported like any other)."""
    import pytest

    class Timer(object):
        def _expired(self, signum, frame):
            raise TestTimeout("hf_results: the test ran longer than %d s (per-test timeout)" % seconds)

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item):
            if threading.current_thread() is not threading.main_thread():
                # a test run in a thread (pytest-xdist's workers, bidict's `--numprocesses=auto`): no signal can be
                # set there, and trying failed every test; the run's own timeout still holds
                yield
                return
            previous = signal.signal(signal.SIGALRM, self._expired)
            signal.alarm(seconds)
            try:
                yield
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)

    return Timer()


def pytest_unconfigure(config):
    if config is _TIMER["owner"]:
        signal.alarm(0)
        _TIMER["owner"] = None
    if config is _STATE["owner"]:
        _STATE["owner"] = None
