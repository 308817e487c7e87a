"""Test runs read from a runner's console output: plain `go test` text, jest and vitest.

Used for the test runs the Dev starts from the shell (`shell_tests.py`), where the console is all there is.
The code under test can print anything there, so these counts are a signal for the Mentor and the analytics,
never a grade (grading reads `runners.py`' structured reports). Ids are spelled as `runners.py` spells them:
`<package>::<Test>` for go, `<file> > <describe>... > <title>` for jest and vitest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models.env import TestStatus
from .runner_spec import merge_status


@dataclass(frozen=True)
class ShellTestRun:
    """A test run the Dev started from the shell, as the Mentor and analytics count it.

    Counted as `run_tests` counts: `failed` is failed and errored tests plus collection/build errors,
    `total` the tests reported (skipped ones included, collection errors not), so `failed` can exceed it.
    """

    runner: str  # "pytest" | "go" | "cargo" | "jest" | "vitest"
    passed: int
    failed: int
    total: int
    failing: tuple[str, ...]  # sorted failing test ids, then sorted collection errors: what makes two runs "the same"
    last_error: str  # the last pytest `E   ...` line; other runners: the first assertion/panic/compile message


def counted(runner: str, statuses: dict[str, TestStatus], errors: list[str], last_error: str) -> ShellTestRun:
    """A ShellTestRun from per-test statuses and collection errors, counted as `run_tests` counts."""
    failing = sorted(test for test, status in statuses.items() if status in ("failed", "error"))
    collection = sorted(set(errors))
    passed = sum(status == "passed" for status in statuses.values())
    failed = len(failing) + len(collection)
    return ShellTestRun(runner, passed, failed, len(statuses), tuple(failing + collection), last_error)


def _summarised(runner: str, summary: dict[str, int], failing: set[str], errors: set[str], last: str) -> ShellTestRun:
    """A run whose counts come from the runner's own summary line (passing tests are not listed one by one)."""
    ids = tuple(sorted(failing) + sorted(errors))
    failed = max(summary.get("failed", 0), len(failing)) + len(errors)
    return ShellTestRun(runner, summary.get("passed", 0), failed, summary.get("total", 0), ids, last)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def plain(output: str) -> str:
    """The output without colours (vitest colours even a pipe), each carriage-return-redrawn line as last drawn."""
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in _ANSI.sub("", output).split("\n"))


def _first_text(lines: list[str], start: int) -> str:
    """The first non-blank line from `start` on, stripped."""
    return next((line.strip() for line in lines[start:] if line.strip()), "")


# ------------------------------------------------------------------------------------------------------------ go

_GO_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(")
_GO_RUN = re.compile(r"^\s*=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)")
_GO_PACKAGE = re.compile(r"^(ok|FAIL|\?)\s*\t(\S+)(.*)$")  # "ok  \tpkg\t0.01s", "FAIL\tpkg [build failed]"
_GO_BUILD_HEADER = re.compile(r"^# \S+")  # "# example.com/m/broken [example.com/m/broken.test]": compiler errors follow
_GO_MESSAGE = re.compile(r"^\s*(?:\S+\.go:\d+: \S|panic: |Error:\s+\S)")  # t.Error/t.Fatal, a panic, testify
_GO_STATUS: dict[str, TestStatus] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}


def go_text(output: str) -> ShellTestRun | None:
    """Plain `go test` / `go test -v` output; None without a package result line (`ok  \tpkg`, `FAIL\tpkg`).

    Without -v go lists only failing tests: passing packages show as `ok` lines, and their tests are not
    counted (passed is what is shown). A failed package with no failing test listed (a build or setup
    failure, a panic in TestMain, a timeout) is a collection error named by its import path.
    """
    statuses: dict[str, TestStatus] = {}
    errors: list[str] = []
    pending: dict[str, TestStatus] = {}  # tests seen since the last package line (go prints the package after them)
    messages: list[tuple[str | None, str]] = []  # (test, line) since the last package line
    current: str | None = None
    first_error = ""
    in_build = False
    seen_package = False
    for line in plain(output).splitlines():
        if match := _GO_PACKAGE.match(line):
            in_build, current = False, None
            verdict, package, _ = match.groups()
            seen_package = seen_package or verdict != "?"  # only `[no test files]` packages: nothing ran
            failed_here = {name for name, status in pending.items() if status == "failed"}
            if verdict == "FAIL" and not failed_here:
                errors.append(package)  # only the package failed: it did not build, or died outside any test
            for name, status in pending.items():
                merge_status(statuses, f"{package}::{name}", status)
            blamed = [text for test, text in messages if test in failed_here or (verdict == "FAIL" and not failed_here)]
            first_error = first_error or next(iter(blamed), "")
            pending, messages = {}, []
        elif match := _GO_RESULT.match(line):
            merge_status(pending, match[2], _GO_STATUS[match[1]])
            current, in_build = match[2], False
        elif match := _GO_RUN.match(line):
            current, in_build = match[1], False
        elif _GO_BUILD_HEADER.match(line):
            in_build, current = True, None
        elif in_build and line.strip() and not first_error:
            first_error = line.strip()  # the compiler's first complaint
        elif _GO_MESSAGE.match(line):
            messages.append((current, line.strip()))
    if not seen_package:
        return None
    return counted("go", statuses, errors, first_error)


# ---------------------------------------------------------------------------------------------------------- jest

_JEST_FILE = re.compile(r"^(PASS|FAIL) +(.+?)(?: \([\d.]+ m?s\))?\s*$")
_JEST_FAILURE = re.compile(r"^  ● (.+?)\s*$")
_JEST_SUMMARY = re.compile(r"^Tests: +(.*\d+ total)\s*$")
_COUNT = re.compile(r"(\d+) (failed|passed|skipped|todo|pending|total)")
_JEST_NOT_A_TEST = {"Test suite failed to run", "Console"}


def jest_text(output: str, summary_required: bool = False) -> ShellTestRun | None:
    """Jest's default reporter: `PASS|FAIL <file>` headers, `● Describe › title` failure headers and the
    `Tests: 1 failed, 3 passed, 4 total` summary. A run cut short before its summary counts its failures only;
    `summary_required` (the command only wrapped jest, as `npm test` does) makes it None instead."""
    lines = plain(output).splitlines()
    failing: set[str] = set()
    errors: set[str] = set()
    summary: dict[str, int] | None = None
    file: str | None = None
    first_error = ""
    for index, line in enumerate(lines):
        if match := _JEST_FILE.match(line):
            file = match[2].strip() if match[1] == "FAIL" else None
        elif (match := _JEST_FAILURE.match(line)) and file:
            title = match[1]
            if title == "Test suite failed to run":
                errors.add(file)
            elif title in _JEST_NOT_A_TEST:
                continue
            else:
                failing.add(" > ".join([file, *title.split(" › ")]))
            first_error = first_error or _first_text(lines, index + 1)
        elif match := _JEST_SUMMARY.match(line):
            summary = {word: int(number) for number, word in _COUNT.findall(match[1])}
    if summary is None and (summary_required or not (failing or errors or _has_jest_header(lines))):
        return None
    if summary is None:
        summary = {"failed": len(failing), "total": len(failing)}
    return _summarised("jest", summary, failing, errors, first_error)


def _has_jest_header(lines: list[str]) -> bool:
    return any(_JEST_FILE.match(line) for line in lines)


# -------------------------------------------------------------------------------------------------------- vitest

# "FAIL  file > describe > title" (a test), "FAIL  file [ file ]" (a file that did not load)
_VITEST_FAIL = re.compile(r"^\s*FAIL\s+(.+?)(?:\s+\[ .+ \])?\s*$")
_VITEST_SUMMARY = re.compile(r"^\s*Tests\s+(no tests|\d+ (?:failed|passed|skipped|todo).*)$")
_VITEST_TOTAL = re.compile(r"\((\d+)\)\s*$")


def vitest_text(output: str, summary_required: bool = False) -> ShellTestRun | None:
    """Vitest's default reporter: `FAIL  file > describe > title` (a test) and `FAIL  file [ file ]` (a file
    that failed to load) headers, and the `Tests  1 failed | 3 passed (4)` summary."""
    lines = plain(output).splitlines()
    failing: set[str] = set()
    errors: set[str] = set()
    summary: dict[str, int] | None = None
    first_error = ""
    for index, line in enumerate(lines):
        if match := _VITEST_SUMMARY.match(line):
            summary = {word: int(number) for number, word in _COUNT.findall(match[1])}
            total = _VITEST_TOTAL.search(match[1])
            summary["total"] = int(total[1]) if total else 0
        elif (match := _VITEST_FAIL.match(line)) and (" > " in match[1] or "[ " in line):
            (failing if " > " in match[1] else errors).add(match[1])
            first_error = first_error or _first_text(lines, index + 1)
    if summary is None and (summary_required or not (failing or errors)):
        return None
    if summary is None:
        summary = {"failed": len(failing), "total": len(failing)}
    return _summarised("vitest", summary, failing, errors, first_error)
