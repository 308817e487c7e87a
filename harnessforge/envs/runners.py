"""Test runners: the shell command that runs chosen tests in a sandbox, and the parser of its report.

Statuses come from each runner's structured report written into `out_dir`, never from the console,
because the code under test can print anything there (fake `PASSED` lines included). The one exception
is cargo, whose only stable output is text; even there a line repeated for one test keeps its worst
status, so a forged `ok` cannot hide a real failure.
"""

from __future__ import annotations

import json
import re
import shlex

from ..errors import ConfigError
from ..models.env import Runner, TestRun, TestStatus

RESULTS_DIR = "/hf/out"  # where commands write structured reports inside a sandbox
PLUGIN_DIR = "/hf/plugins"  # where hf_results.py lives inside a sandbox
LOG_TAIL_CHARS = 4000

_WORST_LAST = ("skipped", "xfailed", "passed", "failed", "error")

# The repository's own addopts are kept: they often carry what its suite needs to run at all (--import-mode,
# -p plugins, --ds=...). What would hide results is undone instead: --maxfail=0 cancels an `-x`, and
# --continue-on-collection-errors runs the healthy files when one fails to import. `-p no:randomly` keeps the
# order stable and is harmless where the plugin is absent (checked on pytest 6.2, 7.0, 9.2). No cacheprovider:
# nothing is written into the checkout; an addopts `--lf`/`--sw` then ends in a usage error, seen as no session.
PYTEST_FLAGS = "-p no:cacheprovider -p no:randomly --continue-on-collection-errors --maxfail=0 --color=no --tb=short"

Parsed = tuple[dict[str, TestStatus], list[str], bool]  # statuses, collect errors, suite ran


def _q(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))


def _test_run(name: Runner, parsed: Parsed, exit_code: int, log: str) -> TestRun:
    statuses, errors, ran = parsed
    tail = log[-LOG_TAIL_CHARS:]
    return TestRun(
        runner=name,
        statuses=statuses,
        collect_errors=_unique(errors),
        suite_ran=ran,
        exit_code=exit_code,
        log_tail=tail,
    )


def _json_lines(text: str):
    """The JSON objects of a JSON-lines report; a line cut short by a killed run, or any other text, is skipped."""
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield rec


def _merge(statuses: dict[str, TestStatus], test_id: str, status: TestStatus) -> None:
    """A test reported twice keeps its worst status (duplicate names, or a forged line next to a real one)."""
    old = statuses.get(test_id)
    if old is None or _WORST_LAST.index(status) > _WORST_LAST.index(old):
        statuses[test_id] = status


class RunnerSpec:
    """One test runner: `command()` runs tests and writes `report` into out_dir, `parse()` reads it back."""

    name: Runner
    report: str

    def command(self, test_ids: list[str], out_dir: str = RESULTS_DIR, plugin_dir: str = PLUGIN_DIR) -> str:
        """A `bash -c` command, run from the repository root, running exactly `test_ids` (all when empty)."""
        out = out_dir.rstrip("/") or "/"
        return f"mkdir -p {_q(out)} && rm -f {_q(f'{out}/{self.report}')} && " + self._run(test_ids, out, plugin_dir)

    def parse(self, files: dict[str, str], exit_code: int, log: str) -> TestRun:
        """Build a TestRun from the files found in out_dir (name -> text), the exit code and the log."""
        return _test_run(self.name, self._parse(files, log), exit_code, log)

    def file_of(self, test_id: str) -> str:
        """Where a test lives, spelled like the entries of `collect_errors`."""
        return test_id.split("::", 1)[0]

    def _run(self, test_ids: list[str], out: str, plugin_dir: str) -> str:
        raise NotImplementedError

    def _parse(self, files: dict[str, str], log: str) -> Parsed:
        raise NotImplementedError


class PytestRunner(RunnerSpec):
    """Our zero-install plugin writes JSON lines; ids are pytest nodeids relative to the repository root."""

    name = "pytest"
    report = "pytest.jsonl"

    def _run(self, test_ids, out, plugin_dir):
        env = f"HF_RESULTS={_q(f'{out}/{self.report}')} PYTHONPATH={_q(plugin_dir)}${{PYTHONPATH:+:$PYTHONPATH}}"
        return f"{env} PYTHONHASHSEED=0 python -m pytest -p hf_results {PYTEST_FLAGS} {_q(*test_ids)}".rstrip()

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
    for rec in _json_lines(text):
        event = rec.get("event")
        if event == "session_start":
            started = True
        elif event == "session_finish":
            finished = True
        elif event == "collect_error":
            errors.append(rec.get("nodeid", "").split("::", 1)[0] or ".")
        elif event == "test":
            nodeid, when, outcome = rec.get("nodeid", ""), rec.get("when"), rec.get("outcome")
            _pytest_phase(statuses, nodeid, when, outcome, rec.get("wasxfail", False))
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


class GoRunner(RunnerSpec):
    """`go test -json`; ids are `<import path>::<Test>` (subtests `Test/sub`)."""

    name = "go"
    report = "go.jsonl"

    def _run(self, test_ids, out, plugin_dir):
        if not test_ids:
            return f"go test -json -count=1 ./... > {_q(f'{out}/{self.report}')}"
        packages = _unique(tid.split("::", 1)[0] for tid in test_ids)
        # -run matches top-level names; running a whole parent for one subtest only adds results.
        tops = _unique(re.escape(tid.split("::", 1)[-1].split("/", 1)[0]) for tid in test_ids)
        pattern = f"^({'|'.join(tops)})$"
        return f"go test -json -count=1 -run {_q(pattern)} {_q(*packages)} > {_q(f'{out}/{self.report}')}"

    def _parse(self, files, log):
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        with_tests: set[str] = set()
        text = files.get(self.report, "")
        errors += _GO_BUILD_FAILED.findall(text)  # before Go 1.24 a plain text line, not JSON
        # A package whose tests do not compile (new tests of an API the base lacks) is a collection error of a
        # suite that ran, as pytest's import errors are; `[setup failed]` (go.mod, imports) is not.
        ran = _GO_TESTS_FAILED_TO_BUILD.search(text) is not None
        for rec in _json_lines(text):
            action, package, test = rec.get("Action"), rec.get("Package", ""), rec.get("Test")
            if test and action in _GO_STATUS:
                with_tests.add(package)
                _merge(statuses, f"{package}::{test}", _GO_STATUS[action])
            elif not test and action in ("pass", "fail") and package:
                ran = True
                # FailedBuild: Go >= 1.24; a failed package without any test result did not get to run them.
                if action == "fail" and (rec.get("FailedBuild") or package not in with_tests):
                    errors.append(package)
        return statuses, errors, ran


_GO_STATUS: dict[str, TestStatus] = {"pass": "passed", "fail": "failed", "skip": "skipped"}
_GO_BUILD_FAILED = re.compile(r"^FAIL\t(\S+) \[(?:build|setup) failed\]", re.MULTILINE)
_GO_TESTS_FAILED_TO_BUILD = re.compile(r"^FAIL\t\S+ \[build failed\]", re.MULTILINE)


class CargoRunner(RunnerSpec):
    """libtest's text lines; ids are `<binary>::<name>`, `doctest:<crate>::<name>` for doctests."""

    name = "cargo"
    report = "cargo.txt"

    def _run(self, test_ids, out, plugin_dir):
        names = [tid.split("::", 1)[-1] for tid in test_ids if not tid.startswith("doctest:")]
        # rustdoc splits filters on whitespace, so doctests are selected by their file (a superset, not --exact).
        doc_files = [tid.split("::", 1)[-1].split(" - ", 1)[0] for tid in test_ids if tid.startswith("doctest:")]
        filters = _unique(names + doc_files)
        if filters:
            filters = filters if doc_files else ["--exact", *filters]
        test_args = f" -- {_q(*filters)}" if filters else ""
        report = _q(f"{out}/{self.report}")
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
            if m := _CARGO_RUNNING.match(line):
                binary, in_failures = m[1], False
            elif m := _CARGO_DOCTESTS.match(line):
                binary, in_failures = f"doctest:{m[1]}", False
            elif line.startswith("test result: "):
                ran, in_failures = True, False
            elif line == "failures:":
                in_failures = True  # captured output of failed tests follows: it may contain anything
            elif (m := _CARGO_TEST.match(line)) and binary and not in_failures:
                name = _CARGO_MODE.sub("", m[1])
                _merge(statuses, f"{binary}::{name}", _CARGO_STATUS[m[2]])
            elif m := _CARGO_COMPILE.match(line):
                target = re.search(r'"([^"]+)"', m[2] or "")
                errors.append((target[1] if target else m[1]).replace("-", "_"))
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


class JestRunner(RunnerSpec):
    """Jest's JSON report; ids are `<file> > <describe>... > <title>`, the file relative to the repo root."""

    name = "jest"
    report = "jest.json"
    cli = "CI=true npx jest --ci --forceExit --json --outputFile={out}"  # --ci: never write missing snapshots
    files_flag = "--runTestsByPath "  # exact paths, not regexes: `[id].test.ts` is a real file name

    def _run(self, test_ids, out, plugin_dir):
        command = f"pwd > {_q(f'{out}/cwd.txt')} && " + self.cli.format(out=_q(f"{out}/{self.report}"))
        if not test_ids:
            return command
        names = [tid.split(" > ", 1)[1] for tid in test_ids if " > " in tid]
        if names:
            # -t matches the titles joined by spaces; a title holding " > " itself is matched either way.
            alternatives = ["(?: > | )".join(map(_js_escape, name.split(" > "))) for name in names]
            command += f" -t {_q('^(?:' + '|'.join(alternatives) + ')$')}"
        return f"{command} {self.files_flag}{_q(*_unique(self.file_of(tid) for tid in test_ids))}"

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
            for a in results:
                test_id = " > ".join([path, *a.get("ancestorTitles", []), a.get("title", "")])
                _merge(statuses, test_id, _JS_STATUS.get(a.get("status"), "skipped"))
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
    return _test_run(runner, _parse_junit(xml_text, runner), exit_code, log)


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
            if not case.classname and any(isinstance(r, Error) for r in case.result):
                # pytest's collection error: `<testcase classname="" name="pkg.test_mod">`
                errors.append(case.name.replace(".", "/") + ".py" if runner == "pytest" else case.name)
                continue
            status: TestStatus = "passed"
            for r in case.result:
                if isinstance(r, Error):
                    status = "error"
                elif isinstance(r, Failure) and status != "error":
                    status = "failed"
                elif isinstance(r, Skipped) and status == "passed":
                    status = "xfailed" if r.type == "pytest.xfail" else "skipped"
            _merge(statuses, f"{case.classname}::{case.name}" if case.classname else case.name, status)
    return statuses, errors, bool(suites)


# ---------------------------------------------------------------------------------------------------- TAP runners
# ava, node's own runner, tape and mocha all speak TAP (the Test Anything Protocol); each file runs on its own,
# into its own report, so every id knows its file without trusting a title prefix. Ids are `<file>::<title>`,
# nested tests `<file>::<parent> > <child>`, as the planner names JS tests.
TAP_FILES = "tap-files.tsv"  # `<n>\t<file>` per test file run; its report is tap-<n>.txt
TAP_DONE = "tap-done"  # written after the last file: the suite ran to its end
# Test files when neither the ids nor $HF_TEST_FILES (the test script's own globs) name them: each runner's defaults.
_JS_TEST = r"\.(c|m)?(j|t)sx?$"
_TAP_DEFAULT_FILES = {
    "ava": r"(^|/)(test|tests|__tests__)/.*{ext}|(^|/)test-[^/]*{ext}|\.(spec|test){ext}|^((src|source)/)?test{ext}",
    "node": r"(^|/)test/.*{ext}|(^|/)test{ext}|[._-]test{ext}|(^|/)test-[^/]*{ext}",
    "tape": r"^test/[^/]*{ext}",
    "mocha": r"^test/[^/]*\.(c|m)?js$",
}
_TAP_SKIP_FILES = r"(^|/)(node_modules|fixtures|helpers|_[^/]*)(/|$)|\.d\.ts$"
_TAP_RUN = {
    "ava": 'npx --no-install ava --tap "$f"',
    "node": 'node "${req[@]}" --test --test-reporter=tap "$f"',
    "tape": 'npx --no-install tape "${req[@]}" "$f"',
    "mocha": 'npx --no-install mocha "${req[@]}" --reporter tap "$f"',
}
_TAP_POINT = re.compile(r"^(\s*)(not ok|ok)\b\s*(?:\d+)?\s*(?:-\s+)?(.*?)(?:\s+#\s*(SKIP|TODO)\b.*)?$", re.I)
_TAP_SUBTEST = re.compile(r"^(\s*)# Subtest: (.*)$")
_TAP_PLAN = re.compile(r"^\s*1\.\.(\d+)")
# ava's own points for a file that failed outside any test (an import error, an uncaught exception).
_AVA_UNCAUGHT = re.compile(
    r"exited with a non-zero exit code|^file://|^Uncaught exception|^Unhandled rejection|timed out"
)


class TapRunner(RunnerSpec):
    """One TAP report per test file (tap-<n>.txt, listed in tap-files.tsv); `groups`: tape's assertions are
    grouped under the `# name` comment of their test, the others report one point per test."""

    report = TAP_FILES
    groups = False

    def command(self, test_ids: list[str], out_dir: str = RESULTS_DIR, plugin_dir: str = PLUGIN_DIR) -> str:
        out = out_dir.rstrip("/") or "/"
        if test_ids:
            listing = "printf '%s\\n' " + _q(*_unique(self.file_of(tid) for tid in test_ids))
        else:
            pattern = _TAP_DEFAULT_FILES[self.name].format(ext=_JS_TEST)
            listing = (
                'if [ -n "${HF_TEST_FILES:-}" ]; then for g in $HF_TEST_FILES; do for f in $g; do '
                '[ -d "$f" ] && git ls-files -co --exclude-standard -- "$f" || echo "$f"; done; done; '
                f"else git ls-files -co --exclude-standard | grep -E {_q(pattern)}; fi "
                f"| grep -E {_q(_JS_TEST)} | grep -vE {_q(_TAP_SKIP_FILES)} | sort -u"
            )
        return (
            f"mkdir -p {_q(out)} && rm -f {_q(out)}/tap-* && shopt -s globstar nullglob && "
            'req=(); for m in ${HF_TEST_REQUIRE:-}; do req+=(-r "$m"); done; '
            # The listing comes in on fd 3: a test reading stdin must not eat the file names.
            "n=0; rc=0; while IFS= read -r f <&3; do n=$((n+1)); "
            f'printf \'%s\\t%s\\n\' "$n" "$f" >> {_q(out)}/{TAP_FILES}; '
            f"{_TAP_RUN[self.name]} > {_q(out)}/tap-$n.txt < /dev/null || rc=1; done 3< <({listing}); "
            f"touch {_q(out)}/{TAP_DONE}; exit $rc"
        )

    def _parse(self, files, log):
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        for line in files.get(TAP_FILES, "").splitlines():
            number, _, path = line.partition("\t")
            report = files.get(f"tap-{number}.txt", "")
            found, failed_outside = _parse_tap(report, path, grouped=self.groups, uncaught=self.name == "ava")
            for name, status in found.items():
                _merge(statuses, f"{path}::{name}", status)
            if failed_outside or not found:
                errors.append(path)  # the file did not load, or failed outside its tests
        return statuses, errors, TAP_DONE in files


def _parse_tap(text: str, path: str, grouped: bool, uncaught: bool) -> tuple[dict[str, TestStatus], bool]:
    """(title -> status, whether the file failed outside its tests) from one file's TAP stream.

    YAML diagnostics (`---` ... `...`) are skipped whatever they hold; only leaf points are tests (node
    reports each describe block as a point of its own, and node 18 the file itself)."""
    statuses: dict[str, TestStatus] = {}
    outside = False
    subtests: dict[int, str] = {}  # indent -> name of the subtest opened there
    parents: set[int] = set()  # indents whose next point closes a subtest that had points inside
    in_yaml, plan_seen, planned, group = None, False, None, None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if in_yaml is not None:
            if line.strip() == "..." and indent <= in_yaml + 2:
                in_yaml = None
            continue
        if line.strip() == "---":
            in_yaml = indent
            continue
        if line.lstrip().startswith("Bail out!"):
            outside = True
            break
        if (plan := _TAP_PLAN.match(line)) and indent == 0:
            plan_seen, planned = True, int(plan[1])
            continue
        if m := _TAP_SUBTEST.match(line):
            subtests[len(m[1])] = m[2].strip()
            continue
        if grouped and indent == 0 and line.startswith("# ") and not plan_seen:
            group = line[2:].strip()
            if group.startswith("SKIP "):
                statuses.setdefault(group[5:], "skipped")
                group = None
            continue
        m = _TAP_POINT.match(line)
        if not m:
            continue
        ok, title, directive = m[2].lower() == "ok", m[3].strip(), (m[4] or "").upper()
        status: TestStatus = "skipped" if directive == "SKIP" or (directive == "TODO" and not ok) else "passed"
        status = status if ok or status == "skipped" else "failed"
        level = len(m[1])
        if level in parents:  # a describe block or a file wrapper: its children were the tests
            parents.discard(level)
            continue
        parents.update(k for k in subtests if k < level)
        names = [subtests[k] for k in sorted(subtests) if k < level]
        names = [n for n in names if not _is_file(n, path)]
        if _is_file(title, path) and not names:
            outside = outside or status == "failed"
            continue
        if uncaught and _AVA_UNCAUGHT.search(title):
            outside = outside or status == "failed"
            continue
        if grouped:
            if group is None:
                continue
            _merge(statuses, group, status)
        else:
            _merge(statuses, " > ".join([*names, title]), status)
        for k in [k for k in subtests if k >= level]:
            del subtests[k]
    if uncaught and planned == 0:  # ava ran no test of the file: what it reported were load errors
        return {}, outside or any(s == "failed" for s in statuses.values())
    return statuses, outside


def _is_file(title: str, path: str) -> bool:
    """node 18 wraps each file's tests in a subtest named by the file's path (as given, or absolute)."""
    return title == path or title.endswith("/" + path)


class AvaRunner(TapRunner):
    name = "ava"


class NodeTestRunner(TapRunner):
    name = "node"


class TapeRunner(TapRunner):
    name = "tape"
    groups = True


class MochaRunner(TapRunner):
    name = "mocha"


RUNNERS: dict[str, RunnerSpec] = {
    r.name: r
    for r in (
        *(PytestRunner(), GoRunner(), CargoRunner(), JestRunner(), VitestRunner()),
        *(AvaRunner(), NodeTestRunner(), TapeRunner(), MochaRunner()),
    )
}


def runner(name: str) -> RunnerSpec:
    if name not in RUNNERS:
        raise ConfigError(f"unknown test runner {name!r}: use one of {', '.join(RUNNERS)}")
    return RUNNERS[name]


def test_files_of(runner_name: str, test_ids: list[str]) -> list[str]:
    """The file (pytest, jest, vitest), package (go) or test binary (cargo) of each id, in order."""
    spec = runner(runner_name)
    return [spec.file_of(tid) for tid in test_ids]


test_files_of.__test__ = False  # not a pytest test, though test modules import it by this name
