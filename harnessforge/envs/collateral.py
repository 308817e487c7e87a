"""Collateral FAIL_TO_PASS tests: tests that go FAIL -> PASS for a reason no task states, so they prove nothing of the
milestone's work. A test whose file does not load at base (a collection or build error), one failing on a private
name the milestone adds, one whose file fails on test infrastructure outside the project, and one failing as a crowd
of others do on a dependency the milestone moves. Pure rules over `TestRun`s, like `classification`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from ..models.env import TestRun
from .classification import Classification
from .runners import GO_PANICKED

# A failure on a name the milestone adds that no user calls: `cannot import name '_flag'`, `module 'x' has no
# attribute '_y'`, `_parse() takes 2 positional arguments` (dunder names such as `__init__` are public API).
_PRIVATE_NAME = re.compile(r"\b(?:ImportError|AttributeError|NameError|TypeError)\b.*?(?:'_(?!_)\w*'|\b_(?!_)\w*\(\))")


def _last_line(message: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _load_failure(test: str, base_runs: list[TestRun], file_of: Callable[[str], str]) -> str | None:
    """Why a test fails at base without running its own check (None when it ran and failed)."""
    reasons = set()
    for run in base_runs:
        where = file_of(test)
        if run.status(test) == "missing" and where in run.collect_errors:
            said = _last_line(run.messages.get(where, ""))
            reasons.add(f"{where} does not load at base" + (f" ({said})" if said else ""))
        elif _PRIVATE_NAME.search(run.messages.get(test, "")):
            reasons.add(f"fails at base on a private name ({_last_line(run.messages[test])})")
        else:
            return None
    return min(reasons) if reasons else None


def _not_reached(test: str, base_runs: list[TestRun], file_of: Callable[[str], str]) -> str | None:
    """Why a test never ran at base, changed or not: another test of its package panicked and ended the package's
    binary (go-toml's new `TestIssue850` panicked at base; 102 tests after it were graded, none of them had run)."""
    reasons = set()
    for run in base_runs:
        where = file_of(test)
        said = run.messages.get(where, "")
        if run.status(test) != "missing" or where not in run.collect_errors or not said.startswith(GO_PANICKED):
            return None
        reasons.add(f"not reached at base: {said}")
    return min(reasons) if reasons else None


# A module's load failure that no task can state: an import of a module outside the project (a test helper kept
# beside the tests' configuration), or a marker the project's test configuration registers.
_INFRASTRUCTURE = re.compile(
    r"^E\s+(?:ModuleNotFoundError: No module named '(?P<missing>[\w.]+)'"
    r"|ImportError: cannot import name '\w+' from '(?P<source>[\w.]+)'"
    r"|pytest\.PytestUnknownMarkWarning: )"
)


def _outside_packages(test: str, base_runs: list[TestRun], file_of: Callable[[str], str], packages: list[str]):
    """Why a test fails at base on test infrastructure (None when it does not): in every base run its file does
    not load on a module outside the project's `packages` or an unregistered marker, and no frame of its
    traceback is in the project (a call into the package with a new argument is the work itself)."""
    if not packages:
        return None
    reasons = set()
    for run in base_runs:
        where = file_of(test)
        lines = run.messages.get(where, "").splitlines()
        errors = [found for line in lines if (found := _INFRASTRUCTURE.match(line))]
        if run.status(test) != "missing" or where not in run.collect_errors or len(errors) != 1:
            return None
        module = errors[0]["missing"] or errors[0]["source"] or ""
        frames = [line.split(":", 1)[0] for line in lines if _FRAME.match(line)]
        inside = [
            name
            for name in packages
            if module.split(".")[0] == name or any(f"/{name}/" in f"/{frame}" for frame in frames)
        ]
        if inside:
            return None
        reasons.add(f"{where} does not load at base, on test infrastructure ({errors[0].string.strip()[:200]})")
    return min(reasons) if reasons else None


_FRAME = re.compile(r"^\S+\.py:\d+: in ")  # a traceback frame of pytest's report: `src/pkg/mod.py:12: in f`


# a Go build error in a test file: `./logger_test.go:275:4: l.Logf undefined`, `table/x_test.go:12:3: ...`
_GO_BUILD_ERROR = re.compile(r"^\s*(?:\./)?((?:[\w.-]+/)*[\w.-]+_test\.go):(\d+):\d+: ", re.M)


def needing_new_code(logs: list[str], spans: dict[str, list[tuple[str, int, int]]]) -> set[str] | None:
    """The Go tests (top-level names) holding a line the base build failed on: they use what the milestone adds. The
    other tests of a package that did not build only shared its fate (charm log's `TestRace`, touched from `Print` to
    `Printf`, failed at base because `TestCustomLevel` calls the new `Logf`). `spans`: each changed test file's
    (name, first line, last line). None when an error cannot be tied to one test: a helper's line, a file named twice,
    or a compiler that stopped at its limit."""
    errors = {(path, int(line)) for log in logs for path, line in _GO_BUILD_ERROR.findall(log)}
    if not errors or any("too many errors" in log for log in logs):
        return None
    for log in logs:  # the package's `# pkg [pkg.test]` header before its errors: the log's tail holds them all
        first = _GO_BUILD_ERROR.search(log)
        if first and not re.search(r"^# \S+", log[: first.start()], re.M):
            return None
    found: set[str] = set()
    for path, line in errors:
        files = [file for file in spans if file == path or file.endswith("/" + path)]
        if len(files) != 1:
            return None
        holding = [name for name, first, last in spans[files[0]] if first <= line <= last]
        if not holding:
            return None  # a helper or a shared table: which tests need it is not read here
        found.update(holding)
    return found


def collateral(
    fail_to_pass: list[str],
    base_runs: list[TestRun],
    file_of: Callable[[str], str],
    changed: Callable[[str], bool],
    packages: list[str] = (),
    crowd: int = 0,
) -> dict[str, str]:
    """FAIL_TO_PASS tests that prove nothing of the milestone (test -> why): the milestone left the test's
    own lines alone (`changed` is the static trace), and at base it fails only because its file does not
    load (a collection or build error) or on a private name the milestone adds; or, changed or not, its file
    does not load at base for a reason outside the project's `packages` (Python's import names). With `crowd`
    (a milestone that moves a dependency): unchanged tests failing at base, in every run, with one same last line
    that at least `crowd` of them share."""
    found = {}
    for test in fail_to_pass:
        if not changed(test) and (why := _load_failure(test, base_runs, file_of)):
            found[test] = why
        elif why := _not_reached(test, base_runs, file_of):
            found[test] = why
        elif why := _outside_packages(test, base_runs, file_of, list(packages)):
            found[test] = why
    if crowd and base_runs:
        said = {
            test: message
            for test in fail_to_pass
            if test not in found and not changed(test)
            for message in [_last_line(base_runs[0].messages.get(test, ""))]
            if message and all(_last_line(run.messages.get(test, "")) == message for run in base_runs)
        }
        shared = Counter(said.values())
        for test, message in said.items():
            if shared[message] >= crowd:
                found[test] = f"fails at base as {shared[message] - 1} others do, on a moved dependency ({message})"
    return found


def set_aside(classification: Classification, collateral_tests: dict[str, str], leave_out: bool) -> Classification:
    """The classification with its collateral tests recorded and, with `leave_out`, out of grading, each with
    its reason in `rejected`; they stay when nothing else is FAIL_TO_PASS (then they are all it has)."""
    kept = [test for test in classification.fail_to_pass if test not in collateral_tests]
    recorded = replace(classification, collateral=sorted(collateral_tests))
    if not leave_out or not kept:
        return recorded
    rejected = {**classification.rejected, **{test: f"collateral: {why}" for test, why in collateral_tests.items()}}
    return replace(recorded, fail_to_pass=kept, rejected=rejected)
