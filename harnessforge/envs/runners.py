"""Test runners: the shell command that runs chosen tests in a sandbox, the parser of its report, and
`run_tests`, which does both in a sandbox.

Statuses come from each runner's structured report written into `out_dir`, never from the console,
because the code under test can print anything there (fake `PASSED` lines included). The one exception
is cargo, whose only stable output is text; even there a line repeated for one test keeps its worst
status, so a forged `ok` cannot hide a real failure. This module holds pytest, go, cargo, jest and
vitest and the registry of every runner; the shared interface is in `runner_spec.py`, the TAP family
(ava, node, tape, mocha) in `tap_runners.py`.
"""

from __future__ import annotations

import json
import re
import shlex

from ..errors import ConfigError
from ..models.env import Recipe, Runner, TestRun, TestStatus
from .runner_spec import (
    PLUGIN_DIR,
    RESULTS_DIR,
    Parsed,
    RunnerSpec,
    in_process,
    json_lines,
    merge_status,
    quoted,
    to_test_run,
    unique,
)
from .sandbox import Sandbox
from .tap_runners import TAP_RUNNERS

# The repository's own addopts are kept: they often carry what its suite needs to run at all (--import-mode,
# -p plugins, --ds=...). What would hide results is undone instead: --maxfail=0 cancels an `-x`, and
# --continue-on-collection-errors runs the healthy files when one fails to import. `-p no:randomly` keeps the
# order stable and is harmless where the plugin is absent (checked on pytest 6.2, 7.0, 9.2). No cacheprovider:
# nothing is written into the checkout; an addopts `--lf`/`--sw` then ends in a usage error, seen as no session.
PYTEST_FLAGS = "-p no:cacheprovider -p no:randomly --continue-on-collection-errors --maxfail=0 --color=no --tb=short"
# Runners that abort every selected id when one selected file fails to load (pytest: "found no
# collectors"); they are given whole files instead, and the statuses of the ids are read back.
FILE_RUNNERS = ("pytest", "jest", "vitest")


class PytestRunner(RunnerSpec):
    """Our zero-install plugin writes JSON lines; ids are pytest nodeids relative to the repository root."""

    name = "pytest"
    report = "pytest.jsonl"

    def _run(self, test_ids, out, plugin_dir):
        env = (
            f"HF_RESULTS={quoted(f'{out}/{self.report}')} PYTHONPATH={quoted(plugin_dir)}${{PYTHONPATH:+:$PYTHONPATH}}"
        )
        return f"{env} PYTHONHASHSEED=0 python -m pytest -p hf_results {PYTEST_FLAGS} {quoted(*test_ids)}".rstrip()

    def parse(self, files, exit_code, log):
        run = super().parse(files, exit_code, log)
        if self.report not in files:
            return run
        messages = {
            record.get("nodeid", ""): record["message"]
            for record in json_lines(files[self.report])
            if record.get("event") == "test" and record.get("message")
        }
        messages.update(
            {
                record.get("nodeid", ""): record.get("longrepr", "")
                for record in json_lines(files[self.report])
                if record.get("event") == "collect_error"
            }
        )
        return run.model_copy(update={"messages": messages})

    def _parse(self, files, log):
        if self.report in files:
            return _parse_pytest_jsonl(files[self.report])
        xml = next((text for name, text in sorted(files.items()) if name.endswith(".xml")), None)
        # A recipe's own `--junitxml` report: lossy ids, but better than nothing.
        return _parse_junit(xml, "pytest") if xml is not None else ({}, [], False)


def _parse_pytest_jsonl(text: str) -> Parsed:
    statuses: dict[str, TestStatus] = {}
    errors: list[str] = []
    started = finished = False
    for record in json_lines(text):
        event = record.get("event")
        if event == "session_start":
            started = True
        elif event == "session_finish":
            finished = True
        elif event == "collect_error":
            errors.append(record.get("nodeid", "").split("::", 1)[0] or ".")
        elif event == "test":
            nodeid, when, outcome = record.get("nodeid", ""), record.get("when"), record.get("outcome")
            _pytest_phase(statuses, nodeid, when, outcome, record.get("wasxfail", False))
    return statuses, errors, started and finished


def _pytest_phase(statuses: dict[str, TestStatus], nodeid: str, when: str, outcome: str, wasxfail: bool) -> None:
    """The call phase decides; a failing setup or teardown is an error; a skip or xfail can come at setup."""
    if outcome not in ("passed", "failed", "skipped"):
        return  # e.g. pytest-rerunfailures' "rerun": the final attempt reports again
    if when == "call" or (when == "setup" and outcome != "passed"):
        if when == "setup" and outcome == "failed":
            statuses[nodeid] = "error"
        elif outcome == "skipped" and wasxfail:
            statuses[nodeid] = "xfailed"
        else:
            statuses[nodeid] = outcome  # a non-strict XPASS is a pass; a strict one comes as "failed"
    elif when == "teardown" and outcome == "failed" and statuses.get(nodeid) != "failed":
        statuses[nodeid] = "error"


_GO_FRAME = re.compile(r"^\s*(?:=== (?:RUN|PAUSE|CONT|NAME)|--- (?:PASS|FAIL|SKIP):|(?:PASS|FAIL|ok)\s*$)")


class GoRunner(RunnerSpec):
    """`go test -json`; ids are `<import path>::<Test>` (subtests `Test/sub`)."""

    name = "go"
    report = "go.jsonl"

    def _run(self, test_ids, out, plugin_dir):
        if not test_ids:
            return f"go test -json -count=1 ./... > {quoted(f'{out}/{self.report}')}"
        packages = unique(test_id.split("::", 1)[0] for test_id in test_ids)
        # -run matches top-level names; running a whole parent for one subtest only adds results.
        tops = unique(re.escape(test_id.split("::", 1)[-1].split("/", 1)[0]) for test_id in test_ids)
        pattern = f"^({'|'.join(tops)})$"
        return f"go test -json -count=1 -run {quoted(pattern)} {quoted(*packages)} > {quoted(f'{out}/{self.report}')}"

    def parse(self, files, exit_code, log):
        """The run, with what each failing test printed (its `t.Errorf` lines, testify's report). test2json cuts
        a long line into several events, only the last ending in a newline: the pieces join as printed."""
        run = super().parse(files, exit_code, log)
        said: dict[str, list[str]] = {}
        for record in json_lines(files.get(self.report, "")):
            test, output = record.get("Test"), str(record.get("Output", ""))
            if record.get("Action") == "output" and test and not _GO_FRAME.match(output):
                said.setdefault(f"{record.get('Package', '')}::{test}", []).append(output)
        failed = {test for test, status in run.statuses.items() if status == "failed"}
        printed = {test: "".join(pieces) for test, pieces in said.items() if test in failed}
        messages = {
            test: "\n".join(line.rstrip() for line in text.splitlines()).strip() for test, text in printed.items()
        }
        for record in json_lines(files.get(self.report, "")):  # a package whose binary a panicking test ended
            output, package = str(record.get("Output", "")), record.get("Package", "")
            if record.get("Action") == "output" and output.startswith("panic: ") and package in run.collect_errors:
                messages.setdefault(package, f"{GO_PANICKED} {output.strip()[:200]}")
        return run.model_copy(update={"messages": {test: text for test, text in messages.items() if text}})

    def _parse(self, files, log):
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        with_tests: set[str] = set()
        text = files.get(self.report, "")
        errors += _GO_BUILD_FAILED.findall(text)  # before Go 1.24 a plain text line, not JSON
        # A package whose tests do not compile (new tests of an API the base lacks) is a collection error of a
        # suite that ran, as pytest's import errors are; `[setup failed]` (go.mod, imports) is not. So is one whose
        # binary a panicking test ended: the tests it did not reach are missing, not failing (lo's `count <= 0`).
        ran = _GO_TESTS_FAILED_TO_BUILD.search(text) is not None or _own_package_missing(f"{text}\n{log}")
        panicked: set[str] = set()  # a test that panics ends its package's binary: the tests after it never run
        for record in json_lines(text):
            action, package, test = record.get("Action"), record.get("Package", ""), record.get("Test")
            if action == "output" and test and str(record.get("Output", "")).startswith("panic: "):
                panicked.add(package)
            if test and action in _GO_STATUS:
                with_tests.add(package)
                merge_status(statuses, f"{package}::{test}", _GO_STATUS[action])
            elif not test and action in ("pass", "fail") and package:
                ran = True
                # FailedBuild: Go >= 1.24; a failed package without any test result did not get to run them.
                if action == "fail" and (record.get("FailedBuild") or package not in with_tests or package in panicked):
                    errors.append(package)
        return statuses, errors, ran


def _own_package_missing(text: str) -> bool:
    """A `[setup failed]` package whose tests import a package of their own module that does not exist yet (the
    milestone adds it): like a test file that does not compile at base, a suite that ran, not a broken environment."""
    failed = _GO_SETUP_FAILED.findall(text)
    missing = _GO_MISSING_PACKAGE.findall(text)
    root = lambda path: path.split("/")[:3]  # noqa: E731
    return bool(failed and missing) and all(any(root(path) == root(package) for package in failed) for path in missing)


_GO_STATUS: dict[str, TestStatus] = {"pass": "passed", "fail": "failed", "skip": "skipped"}
GO_PANICKED = "a test panicked and ended the package's run:"  # a package's message: the tests after it never ran
_GO_SETUP_FAILED = re.compile(r"^FAIL\t(\S+) \[setup failed\]", re.MULTILINE)
_GO_MISSING_PACKAGE = re.compile(r"cannot find module providing package (\S+?):")
_GO_BUILD_FAILED = re.compile(r"^FAIL\t(\S+) \[(?:build|setup) failed\]", re.MULTILINE)
_GO_TESTS_FAILED_TO_BUILD = re.compile(r"^FAIL\t\S+ \[build failed\]", re.MULTILINE)


class CargoRunner(RunnerSpec):
    """libtest's text lines; ids are `<binary>::<name>`, `doctest:<crate>::<name>` for doctests."""

    name = "cargo"
    report = "cargo.txt"

    def _run(self, test_ids, out, plugin_dir):
        names = [test_id.split("::", 1)[-1] for test_id in test_ids if not test_id.startswith("doctest:")]
        # rustdoc splits filters on whitespace, so doctests are selected by their file (a superset, not --exact).
        doc_files = [
            test_id.split("::", 1)[-1].split(" - ", 1)[0] for test_id in test_ids if test_id.startswith("doctest:")
        ]
        filters = unique(names + doc_files)
        if filters:
            filters = filters if doc_files else ["--exact", *filters]
        test_args = f" -- {quoted(*filters)}" if filters else ""
        report = quoted(f"{out}/{self.report}")
        command = f"set -o pipefail && cargo test --no-fail-fast{test_args} 2>&1 | tee {report}"
        if filters:
            return command
        # One test target that does not compile (a new test of an API the base lacks) stops cargo before any
        # test runs: then each target runs on its own, so the others still report.
        return (
            f"{command}; rc=$?; if [ $rc -ne 0 ] && ! grep -q '^test result: ' {report}; then rc=0; "
            f"{{ {_CARGO_EACH_TARGET}; }} 2>&1 | tee -a {report} || rc=1; fi; exit $rc"
        )

    def _parse(self, files, log):
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        binary, in_failures, ran = None, False, False
        for line in files.get(self.report, log).splitlines():
            if match := _CARGO_RUNNING.match(line):
                binary, in_failures = match[1], False
            elif match := _CARGO_DOCTESTS.match(line):
                binary, in_failures = f"doctest:{match[1]}", False
            elif line.startswith("test result: "):
                ran, in_failures = True, False
            elif line == "failures:":
                in_failures = True  # captured output of failed tests follows: it may contain anything
            elif (match := _CARGO_TEST.match(line)) and binary and not in_failures:
                name = _CARGO_MODE.sub("", match[1])
                merge_status(statuses, f"{binary}::{name}", _CARGO_STATUS[match[2]])
            elif match := _CARGO_COMPILE.match(line):
                target = re.search(r'"([^"]+)"', match[2] or "")
                errors.append((target[1] if target else match[1]).replace("-", "_"))
        return statuses, errors, ran

    def file_of(self, test_id: str) -> str:
        return test_id.split("::", 1)[0].removeprefix("doctest:")


_CARGO_STATUS: dict[str, TestStatus] = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}
_CARGO_EACH_TARGET = (
    'fail=0; for t in --lib --bins $(for f in tests/*.rs tests/*/main.rs; do [ -f "$f" ] && '
    "basename \"${f%/main.rs}\" .rs | sed 's/^/--test=/'; done) --doc; do "
    "cargo test --no-fail-fast $t || fail=1; done; exit $fail"
)
_CARGO_RUNNING = re.compile(r"^\s*Running\b.*?([^/\\\s()]+)-[0-9a-f]{8,}(?:\.exe)?\)?\s*$")
_CARGO_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)\s*$")
_CARGO_TEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored)(?:,.*)?$")
_CARGO_MODE = re.compile(r" - (?:should panic|compile fail|compile)$")  # display suffixes, not part of the name
_CARGO_COMPILE = re.compile(r"^error: could not compile `([^`]+)`(?: \(([^)]*)\))?")


JEST_TEST_FRAME = r"/[\\/]jest-runner[\\/]build[\\/]runTest/"  # the sandbox's `process.exit` jest wraps
# jest's own command sets NODE_ENV to `test` when unset; run in this process, jest does not, and a Babel config's
# `env.test` presets (dayjs's `import` in every test) never applied
JEST_ENVIRONMENT = "CI=true NODE_ENV=${NODE_ENV:-test}"


def _jest_title(title) -> str:
    """A suite's or test's title as jest shows it: dayjs' jest 22 reported a `describe` over an array as that array
    (a crash here), which JavaScript writes joined by commas."""
    if isinstance(title, list):
        return ",".join(map(_jest_title, title))
    return title if isinstance(title, str) else json.dumps(title)


class JestRunner(RunnerSpec):
    """Jest's JSON report; ids are `<file> > <describe>... > <title>`, the file relative to the repo root."""

    name = "jest"
    report = "jest.json"
    # --ci: never write missing snapshots; {runner}: in this process with a clean process.argv (`in_process`)
    # --runInBand: the tests run in the process whose `process.exit` the wrapper guards (no worker a test can end)
    cli = "{runner} --ci --runInBand --forceExit --json --outputFile={out}"
    files_flag = "--runTestsByPath "  # exact paths, not regexes: `[id].test.ts` is a real file name

    def _run(self, test_ids, out, plugin_dir):
        cli = self.cli.replace("{out}", quoted(f"{out}/{self.report}")).replace(
            "{runner}", in_process("jest", "jest", "run", out, JEST_ENVIRONMENT, JEST_TEST_FRAME)
        )
        command = f"pwd > {quoted(f'{out}/cwd.txt')} && {cli}"
        if not test_ids:
            return command
        names = [test_id.split(" > ", 1)[1] for test_id in test_ids if " > " in test_id]
        if names:
            # -t matches the titles joined by spaces; a title holding " > " itself is matched either way.
            alternatives = ["(?: > | )".join(map(_js_escape, name.split(" > "))) for name in names]
            command += f" -t {quoted('^(?:' + '|'.join(alternatives) + ')$')}"
        return f"{command} {self.files_flag}{quoted(*unique(self.file_of(test_id) for test_id in test_ids))}"

    def _parse(self, files, log):
        try:
            data = json.loads(files.get(self.report, ""))
        except ValueError:
            data = None  # not written, or cut short by a killed run
        if not isinstance(data, dict):
            return {}, [], False
        root = files.get("cwd.txt", "").strip().rstrip("/") + "/"
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        for suite in data.get("testResults") or []:
            path = suite.get("name", "")
            path = path[len(root) :] if root != "/" and path.startswith(root) else path
            results = suite.get("assertionResults") or []
            if suite.get("status") == "failed" and not results:
                errors.append(path)  # the file failed to load: its tests are absent, not failed
            for assertion in results:
                titles = [*(assertion.get("ancestorTitles") or []), assertion.get("title", "")]
                test_id = " > ".join([path, *map(_jest_title, titles)])
                merge_status(statuses, test_id, _JS_STATUS.get(assertion.get("status"), "skipped"))
        ran = (data.get("numTotalTestSuites") or 0) > 0 or bool(data.get("testResults"))
        return statuses, errors, ran

    def file_of(self, test_id: str) -> str:
        return test_id.split(" > ", 1)[0]


class VitestRunner(JestRunner):
    """Vitest's Jest-compatible JSON report, same ids as jest."""

    name = "vitest"
    report = "vitest.json"
    cli = "CI=true npx vitest run --reporter=default --reporter=json --outputFile={out}"  # CI: no new snapshots
    files_flag = ""  # vitest's positional arguments are file-name filters already


_JS_STATUS: dict[str, TestStatus] = {"passed": "passed", "failed": "failed"}  # pending, todo, skipped...


def _js_escape(text: str) -> str:
    """Escape for a JavaScript RegExp (also valid with the `u` flag, unlike Python's re.escape)."""
    return re.sub(r"[.*+?^${}()|[\]\\]", r"\\\g<0>", text)


def parse_junit(xml_text: str, runner: Runner, exit_code: int = 0, log: str = "") -> TestRun:
    """Fallback parser for JUnit XML; ids are `classname::name`, best effort (pytest's nodeids cannot be rebuilt)."""
    return to_test_run(runner, _parse_junit(xml_text, runner), exit_code, log)


def _parse_junit(xml_text: str, runner: Runner) -> Parsed:
    from xml.etree.ElementTree import ParseError

    from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped

    statuses: dict[str, TestStatus] = {}
    errors: list[str] = []
    try:
        suites = list(JUnitXml.fromstring(xml_text))
    except (ParseError, SyntaxError, JUnitXmlError):
        suites = []
    for suite in suites:
        for case in suite:
            if not case.classname and any(isinstance(result, Error) for result in case.result):
                # pytest's collection error: `<testcase classname="" name="pkg.test_mod">`
                errors.append(case.name.replace(".", "/") + ".py" if runner == "pytest" else case.name)
                continue
            status: TestStatus = "passed"
            for result in case.result:
                if isinstance(result, Error):
                    status = "error"
                elif isinstance(result, Failure) and status != "error":
                    status = "failed"
                elif isinstance(result, Skipped) and status == "passed":
                    status = "xfailed" if result.type == "pytest.xfail" else "skipped"
            merge_status(statuses, f"{case.classname}::{case.name}" if case.classname else case.name, status)
    return statuses, errors, bool(suites)


RUNNERS: dict[str, RunnerSpec] = {
    spec.name: spec for spec in (PytestRunner(), GoRunner(), CargoRunner(), JestRunner(), VitestRunner(), *TAP_RUNNERS)
}


def runner(name: str) -> RunnerSpec:
    if name not in RUNNERS:
        raise ConfigError(f"unknown test runner {name!r}: use one of {', '.join(RUNNERS)}")
    return RUNNERS[name]


def test_files_of(runner_name: str, test_ids: list[str]) -> list[str]:
    """The file (pytest, jest, vitest), package (go) or test binary (cargo) of each id, in order."""
    spec = runner(runner_name)
    return [spec.file_of(test_id) for test_id in test_ids]


test_files_of.__test__ = False  # not a pytest test, though test modules import it by this name


def run_tests(sandbox: Sandbox, recipe: Recipe, tests: list[str], timeout: int) -> TestRun:
    """Run `tests` (all when empty) and read the runner's structured report; stdout is not trusted."""
    return run_with_reports(sandbox, recipe, tests, timeout)[0]


def run_with_reports(
    sandbox: Sandbox, recipe: Recipe, tests: list[str], timeout: int
) -> tuple[TestRun, dict[str, str]]:
    """`run_tests`, plus the report files themselves (validation reads where each test is defined)."""
    spec = runner(recipe.runner)
    if recipe.test_cmd:
        test_words = " ".join(shlex.quote(test) for test in tests)
        command = recipe.test_cmd.format(tests=test_words, out=sandbox.results_dir, plugins=sandbox.plugin_dir)
    else:
        command = spec.command(tests, out_dir=sandbox.results_dir, plugin_dir=sandbox.plugin_dir)
    sandbox.clear_results()
    result = sandbox.exec(command, timeout=timeout)
    files = sandbox.read_results()
    run = spec.parse(files, result.exit_code, result.stdout + result.stderr)
    update = {"timed_out": result.timed_out, "oom_killed": result.oom_killed, "duration_s": result.duration_s}
    return run.model_copy(update=update), files


__all__ = [
    "FILE_RUNNERS",
    "PLUGIN_DIR",
    "RESULTS_DIR",
    "RUNNERS",
    "parse_junit",
    "run_tests",
    "runner",
    "test_files_of",
]
