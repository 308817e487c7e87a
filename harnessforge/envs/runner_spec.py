"""What every test runner shares: where reports go in a sandbox, the `RunnerSpec` interface, and the
rules for reading a report (JSON lines, a test reported twice keeps its worst status).

The runners themselves live in `runners.py` (pytest, go, cargo, jest, vitest) and `tap_runners.py`
(ava, node, tape, mocha).
"""

from __future__ import annotations

import json
import re
import shlex

from ..models.env import Runner, TestRun, TestStatus

RESULTS_DIR = "/hf/out"  # where commands write structured reports inside a sandbox
PLUGIN_DIR = "/hf/plugins"  # where hf_results.py lives inside a sandbox
LOG_TAIL_CHARS = 4000

_WORST_LAST = ("skipped", "xfailed", "passed", "failed", "error")

Parsed = tuple[dict[str, TestStatus], list[str], bool]  # statuses, collect errors, suite ran


def quoted(*words: str) -> str:
    """The words quoted for bash and joined by spaces."""
    return " ".join(shlex.quote(word) for word in words)


def unique(items) -> list[str]:
    """The items in their first order, each once."""
    return list(dict.fromkeys(items))


# a memory address in a test's name (testify's `Contains([]*assert.A{(*assert.A)(0xc0003a70e0)})` subtests): never
# the same in two runs, so a test named by one would be new in every run and graded as FAIL_TO_PASS
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")


def to_test_run(name: Runner, parsed: Parsed, exit_code: int, log: str) -> TestRun:
    parsed_statuses, errors, ran = parsed
    statuses: dict[str, TestStatus] = {}
    for test_id, status in parsed_statuses.items():
        merge_status(statuses, _ADDRESS.sub("0x…", test_id), status)
    return TestRun(
        runner=name,
        statuses=statuses,
        collect_errors=unique(errors),
        suite_ran=ran,
        exit_code=exit_code,
        log_tail=log[-LOG_TAIL_CHARS:],
    )


def json_lines(text: str):
    """The JSON objects of a JSON-lines report; a line cut short by a killed run, or any other text, is skipped."""
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def merge_status(statuses: dict[str, TestStatus], test_id: str, status: TestStatus) -> None:
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
        clear = f"mkdir -p {quoted(out)} && rm -f {quoted(f'{out}/{self.report}')} && "
        return clear + self._run(test_ids, out, plugin_dir)

    def parse(self, files: dict[str, str], exit_code: int, log: str) -> TestRun:
        """Build a TestRun from the files found in out_dir (name -> text), the exit code and the log."""
        return to_test_run(self.name, self._parse(files, log), exit_code, log)

    def file_of(self, test_id: str) -> str:
        """Where a test lives, spelled like the entries of `collect_errors`."""
        return test_id.split("::", 1)[0]

    def _run(self, test_ids: list[str], out: str, plugin_dir: str) -> str:
        raise NotImplementedError

    def _parse(self, files: dict[str, str], log: str) -> Parsed:
        raise NotImplementedError


def in_process(package: str, module: str, call: str, out: str, env: str = "", test_frame: str = "") -> str:
    """A shell command that runs a JavaScript test runner in this process with the arguments that follow it, the
    process's own `process.argv` reset to `[node, <runner>]` first: a runner's options (`--ci`, `--reporter`) must
    never reach the program under test, whose tests may parse `process.argv` (a CLI library's do). The script is
    a file (written into `out`), not `node -e`: a program that sees `--eval` among node's own options reads every
    argument as its user's. `module` is the runner's entry module (resolved from the workspace), `call` the
    function taking the arguments; a runner too old to have one runs as its own command instead (`npx <package>`).
    `env`: variables for the runner (`CI=true`). `test_frame`: a regular expression of the runner's file that calls
    a test: `process.exit` called with it on the stack throws in the test instead of ending the whole run (a CLI
    library's code exits on an error; at base the feature is missing, so it does)."""
    guard = (
        "const realExit = process.exit;\n"
        "process.exit = function exit(code) {\n"
        f'  if ({test_frame}.test(new Error().stack || "")) throw new Error(`process.exit(${{code}}) was called`);\n'
        "  return realExit.call(process, code);\n};\n"
        if test_frame
        else ""
    )
    script = guard + (
        "const args = process.argv.slice(2), from = {paths: [process.cwd()]}; let run = null;\n"
        f"try {{ run = require(require.resolve({json.dumps(module)}, from)).{call}; }} catch (error) {{}}\n"
        f'if (typeof run === "function") {{ process.argv = [process.argv[0], {json.dumps(package)}]; run(args); }}\n'
        'else { const done = require("child_process").spawnSync("npx", ["--no-install", '
        f'{json.dumps(package)}, ...args], {{stdio: "inherit"}});\n'
        "process.exit(done.status === null ? 1 : done.status); }\n"
    )
    path = f"{out.rstrip('/')}/hf-{package}.cjs"
    return f"printf '%s' {quoted(script)} > {quoted(path)} && {env + ' ' if env else ''}node {quoted(path)}"
