"""Test runs the Dev started from the shell, recognised and counted as `run_tests` counts them.

Real models mostly test through `bash` (`python -m pytest tests/...`, fifteen times over), so the Mentor's
and the analytics' test signals must see those runs too. Pytest is read from our results plugin, which the
harness makes active for every pytest started in the sandbox (`shell_test_env`): a `pytest.jsonl` holding a
session is a pytest run whatever the command looked like (`python -m pytest`, `py.test`, a Makefile target).
The other runners are recognised from the command and read from its console output: `go test -json` and
cargo by the parsers of `runners.py`, plain `go test`, jest and vitest by `shell_test_output.py`. A command
that merely mentions a runner (`grep -rn pytest .`) is no test run: a runner's own summary must be there too.
Without our report (tox filters the environment) pytest's console summary is read instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex

from .runner_spec import json_lines
from .runners import runner
from .shell_test_output import ShellTestRun, counted, go_text, jest_text, plain, vitest_text

SHELL_REPORTS = "shell"  # the subdirectory of the sandbox's results dir where the Dev's own test runs report
PYTEST_REPORT = runner("pytest").report  # what HF_RESULTS names inside the shell-results directory
RUNNER_ORDER = ("pytest", "go", "cargo", "jest", "vitest")  # tried in this order behind a wrapper (`make test`)
JS_RUNNERS = ("jest", "vitest")

__all__ = ["PYTEST_REPORT", "ShellTestRun", "shell_test_env", "shell_test_run"]


def shell_test_env(results_dir: str) -> dict[str, str]:
    """The environment under which every pytest the Dev starts from the shell reports to us.

    The plugin is an installed pytest plugin (a `pytest11` entry point) wherever the Dev's Python runs:
    in every Python image's venv (`envs/recipes.py`) and in HarnessForge's own environment, which the
    local sandbox's interpreter is; it writes only when $HF_RESULTS names a file. Not `PYTEST_PLUGINS` plus
    `PYTHONPATH`: a command that sets its own (`PYTHONPATH=src pytest`, seen on pallets/click) made pytest
    fail with "Error importing plugin". Our own `run_tests` also passes `-p hf_results`: registered once.
    """
    return {"HF_RESULTS": f"{results_dir.rstrip('/') or ''}/{PYTEST_REPORT}"}


def shell_test_run(command: str, exit_code: int, output: str, reports: dict[str, str]) -> ShellTestRun | None:
    """The test run one shell command made, or None when nothing test-like ran.

    `reports` are the files of the shell-results directory after the command (name -> text); `output` is
    its stdout and stderr. A command running several suites counts the first one found: our pytest report
    first, then the runners in the order the command names them. A pytest session that reported no test and
    no collection error (`--collect-only`, a `-k` matching nothing) is no test run.
    """
    report = reports.get(PYTEST_REPORT, "")
    pytest_ran = any(record.get("event") == "session_start" for record in json_lines(report))
    if pytest_ran:
        run = runner("pytest").parse({PYTEST_REPORT: report}, exit_code, output)
        if run.statuses or run.collect_errors:
            return counted("pytest", run.statuses, run.collect_errors, _pytest_last_error(output, report))
    for name, wrapped in runners_started(command):
        if name == "pytest" and pytest_ran:
            continue  # our report said it all: no console summary of that session may be read instead
        found = _READERS[name](output, wrapped)
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------------------------------- the command

_SEPARATORS = re.compile(r"^[;&|()]+$")
# Words that run the command after them: `timeout 60 go test`, `uv run pytest`, `npx jest`, `env A=1 cargo test`.
_PREFIXES = {"env", "time", "nohup", "command", "exec", "nice", "sudo", "stdbuf", "xvfb-run", "npx", "bunx", "pnpx"}
_TWO_WORD_PREFIXES = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
    ("npm", "exec"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "exec"),
    ("yarn", "dlx"),
    ("bun", "x"),
}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = {"bash", "sh", "zsh", "dash"}


def runners_started(command: str) -> list[tuple[str, bool]]:
    """(runner, wrapped) for each runner the command may start, in order; `wrapped`: only through a test
    script (`npm test`, `make test`, `./run_tests.sh`), so the output must hold that runner's summary."""
    found: list[tuple[str, bool]] = []
    for words in _simple_commands(command):
        for started in _runners_of(_unwrapped(words)):
            if started not in found:
                found.append(started)
    return found


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command, split on ; && || | & and newlines (a bad quote: split on blanks)."""
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if _SEPARATORS.match(token):
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def _unwrapped(words: list[str]) -> list[str]:
    """The words without leading assignments and wrapper commands (and the wrappers' options)."""
    while words:
        head = os.path.basename(words[0])
        if _ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif head in _PREFIXES or head == "timeout":
            words = _without_options(words[1:])
            if head == "timeout" and words:
                words = words[1:]  # the duration
        elif tuple(words[:2]) in _TWO_WORD_PREFIXES:
            words = _without_options(words[2:])
        else:
            return words
    return words


def _without_options(words: list[str]) -> list[str]:
    while words and words[0].startswith("-"):
        words = words[1:]
    return words


def _runners_of(words: list[str]) -> list[tuple[str, bool]]:
    if not words:
        return []
    name, rest = os.path.basename(words[0]), words[1:]
    if name in _SHELLS:
        for index, word in enumerate(rest[:-1]):
            if re.match(r"^-[a-z]*c[a-z]*$", word):
                return runners_started(rest[index + 1])  # bash -c "python -m pytest -q"
        return _wrapped_all() if rest and "test" in os.path.basename(rest[0]) else []  # bash run_tests.sh
    if name in ("pytest", "py.test") or (name.startswith("python") and _runs_module(rest, ("pytest", "py.test"))):
        return [("pytest", False)]
    if name == "go" and rest[:1] == ["test"]:
        return [("go", False)]
    if name == "cargo" and [word for word in rest if not word.startswith("+")][:1] in (["test"], ["t"]):
        return [("cargo", False)]
    script = _js_bin(name) or (_js_bin(os.path.basename(rest[0])) if name == "node" and rest else None)
    if script:
        return [(script, False)]  # `jest`, `node_modules/.bin/vitest`, `node node_modules/jest/bin/jest.js`
    if name in ("npm", "yarn", "pnpm", "bun"):
        script = rest[1] if rest[:1] in (["run"], ["run-script"]) and len(rest) > 1 else (rest or [""])[0]
        if name in ("yarn", "pnpm") and script in JS_RUNNERS:
            return [(script, False)]  # `yarn jest` runs the package's jest
        if name == "bun" and rest[:1] == ["test"]:
            return []  # bun's own test runner, whose output none of ours reads
        if script in ("t", "tst") or script.startswith("test") or (rest[:1] == ["run"] and "test" in script):
            return _wrapped_all()
        return []
    if name in ("make", "gmake") and any(("test" in word or "check" in word) for word in rest if word[:1] != "-"):
        return _wrapped_all()
    if name in ("tox", "nox"):
        return [("pytest", True)]
    if "test" in name and (name.endswith(".sh") or words[0].startswith(("./", "/"))):
        return _wrapped_all()
    return []


def _js_bin(name: str) -> str | None:
    """ "jest" or "vitest" when `name` is that runner's executable (`jest`, `jest.js`, `vitest.mjs`)."""
    bare = re.sub(r"\.[cm]?js$", "", name)
    return bare if bare in JS_RUNNERS else None


def _runs_module(words: list[str], modules: tuple[str, ...]) -> bool:
    """`python [options] -m <module>`: options of the interpreter may come before -m."""
    words = iter(words)
    for word in words:
        if word == "-m":
            return next(words, "") in modules
        if word in ("-X", "-W"):
            next(words, "")  # the option's value: `-X dev`, `-W error`
        elif not word.startswith("-"):
            return False  # a script: `python run.py -m pytest` is not pytest
    return False


def _wrapped_all() -> list[tuple[str, bool]]:
    return [(name, True) for name in RUNNER_ORDER]


# --------------------------------------------------------------------------------------------- reading the output

_PYTEST_E_LINE = re.compile(r"^E\s+(.+?)\s*$", re.MULTILINE)
_PYTEST_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+ ?s(?:econds)?\b", re.MULTILINE)
_PYTEST_SHORT = re.compile(r"^(FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)
_PYTEST_CONFTEST = re.compile(r"^ImportError while loading conftest '(.+)'\.", re.MULTILINE)
_PYTEST_COUNT = re.compile(r"(\d+) ([a-z]+)")


def _pytest_last_error(output: str, report: str) -> str:
    """The last `E   ...` line of the console (as `run_tests`' error signature reads it), else of the report's
    collection errors (the console may be `--tb=no`)."""
    errors = _PYTEST_E_LINE.findall(plain(output))
    if not errors:
        records = [record for record in json_lines(report) if record.get("event") == "collect_error"]
        errors = _PYTEST_E_LINE.findall("\n".join(record.get("longrepr") or "" for record in records))
    return errors[-1] if errors else ""


def _pytest_console(output: str, wrapped: bool) -> ShellTestRun | None:
    """Pytest without our report: its `N failed, N passed in 0.1s` line and the `FAILED`/`ERROR` short summary."""
    text = plain(output)
    summaries = _PYTEST_SUMMARY.findall(text)
    conftest = _PYTEST_CONFTEST.findall(text)
    if not summaries and not conftest:
        return None
    counts: dict[str, int] = {}
    for number, word in _PYTEST_COUNT.findall(summaries[-1] if summaries else ""):
        counts[word.rstrip("s") if word in ("errors", "warnings") else word] = int(number)
    short = _PYTEST_SHORT.findall(text)
    failing = sorted({test for _, test in short if "::" in test})
    collection = sorted({test for verdict, test in short if verdict == "ERROR" and "::" not in test} | set(conftest))
    passed = counts.get("passed", 0) + counts.get("xpassed", 0)
    failed = max(counts.get("failed", 0) + counts.get("error", 0), len(failing) + len(collection))
    total = passed + counts.get("failed", 0) + counts.get("skipped", 0) + counts.get("xfailed", 0)
    total += max(counts.get("error", 0) - len(collection), 0)
    if not total and not failed:
        return None  # only deselected tests, as a report session without tests
    errors = _PYTEST_E_LINE.findall(text)
    return ShellTestRun("pytest", passed, failed, total, tuple(failing + collection), errors[-1] if errors else "")


def _go(output: str, wrapped: bool) -> ShellTestRun | None:
    """`go test -json` (GoRunner's parser; non-JSON build lines included) or plain `go test [-v]` text."""
    records = [record for record in json_lines(output) if "Action" in record]
    if not records:
        return go_text(output)
    run = runner("go").parse({runner("go").report: output}, 0, output)
    if not (run.suite_ran or run.statuses or run.collect_errors):
        return None
    as_text = go_text(_go_json_as_text(output))
    # a package a panicking test ended is a collect error for validation (the tests it cut off never ran); to the
    # person reading the console its failing test is the failure, counted once
    errors = [
        package for package in run.collect_errors if not any(test.startswith(f"{package}::") for test in run.statuses)
    ]
    return counted("go", run.statuses, errors, as_text.last_error if as_text else "")


def _go_json_as_text(output: str) -> str:
    """The console `go test -v` would have printed: each event's Output, other lines as they are."""
    parts = []
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and "Action" in record:
            parts.append(record.get("Output") or "")
        else:
            parts.append(line + "\n")
    return "".join(parts)


_CARGO_PANIC = re.compile(r"^thread '.*' (?:\(\d+\) )?panicked at (.*)$")
_CARGO_ERROR = re.compile(r"^error(?:\[E\d+\])?: (.+)$")
_CARGO_NOT_A_CAUSE = re.compile(r"^(?:could not compile|test failed|\d+ targets? failed|aborting due to)")


def _cargo(output: str, wrapped: bool) -> ShellTestRun | None:
    """libtest's lines through CargoRunner's parser; a wrapped cargo must show a test result or a test target
    that failed to compile."""
    text = plain(output)
    run = runner("cargo").parse({runner("cargo").report: text}, 0, text)
    if not run.suite_ran and (not run.collect_errors or wrapped and not re.search(r"could not compile .*test", text)):
        return None
    return counted("cargo", run.statuses, run.collect_errors, _cargo_first_error(text))


def _cargo_first_error(text: str) -> str:
    """The first panic message (Rust >= 1.73 puts it on the line after `panicked at <where>:`) or compile error."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if match := _CARGO_PANIC.match(line):
            where = match[1]
            if where.startswith("'"):  # Rust < 1.73: `panicked at 'message', src/lib.rs:3:5`
                return where[1:].rsplit("', ", 1)[0].strip()
            return next((following.strip() for following in lines[index + 1 :] if following.strip()), where)
        if (match := _CARGO_ERROR.match(line)) and not _CARGO_NOT_A_CAUSE.match(match[1]):
            return match[1].strip()
    return ""


def _jest(output: str, wrapped: bool) -> ShellTestRun | None:
    return jest_text(output, summary_required=wrapped)


def _vitest(output: str, wrapped: bool) -> ShellTestRun | None:
    return vitest_text(output, summary_required=wrapped)


_READERS = {"pytest": _pytest_console, "go": _go, "cargo": _cargo, "jest": _jest, "vitest": _vitest}
