"""The Dev's tools: one schema for every backend, every call run inside the milestone's sandbox.

A tool returns the observation the Dev sees plus the facts the Recorder and the Mentor need
(files touched, test counts, a normalised failure signature, content hashes for thrash detection).
Those facts do not depend on the tool the Dev chose: the files any call changed come from the
workspace (`WorkspaceWatch`), and a test run started from `bash` (pytest through our results plugin,
go, cargo, jest, vitest) is parsed into the same counts and signature as `run_tests`.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..envs.runners import FILE_RUNNERS, run_tests, test_files_of
from ..envs.sandbox import Sandbox
from ..envs.shell_tests import SHELL_REPORTS, shell_test_env, shell_test_run
from ..errors import EnvError, SandboxLost
from ..files import FileClassifier
from ..models.env import Recipe, TestRun
from ..models.trajectory import TestCounts, ToolCall
from ..rules import TestFileEdits
from .workspace_watch import WorkspaceWatch, files_read


def _fn(name: str, description: str, properties: dict, required: list[str]) -> dict:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


_PATH = {"type": "string", "description": "Path relative to the repository root"}
_TEXT = {"type": "string"}
TOOLS = [
    _fn("read_file", "Read a text file of the repository.", {"path": _PATH}, ["path"]),
    _fn("write_file", "Create or overwrite a file.", {"path": _PATH, "content": _TEXT}, ["path", "content"]),
    _fn(
        "edit_file",
        "Replace one exact occurrence of `old` by `new` in a file (fails if `old` is absent or ambiguous).",
        {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}},
        ["path", "old", "new"],
    ),
    _fn("list_dir", "List a directory (directories end with /).", {"path": _PATH}, []),
    _fn(
        "search",
        "Search file contents for a regular expression (ripgrep when installed, else grep).",
        {"pattern": {"type": "string"}, "path": _PATH},
        ["pattern"],
    ),
    _fn("bash", "Run a shell command in the repository (no network).", {"command": {"type": "string"}}, ["command"]),
    _fn(
        "run_tests",
        "Run the given test ids / files, else the milestone's acceptance tests (the whole suite when they are "
        "hidden), and report the results.",
        {"tests": {"type": "array", "items": {"type": "string"}}},
        [],
    ),
    _fn("request_hint", "Ask the mentor for a hint when you are stuck.", {"reason": {"type": "string"}}, []),
    _fn("submit", "Declare the milestone done; a verifier grades your work.", {"message": {"type": "string"}}, []),
]
TOOL_NAMES = {tool["function"]["name"] for tool in TOOLS}
EDIT_TOOLS = {"write_file", "edit_file"}


def is_edit(files_touched: list[str], classifier: FileClassifier) -> bool:
    """The one notion of an edit, whatever the tool or scaffold: the call changed a file that is not a test (an
    edit tool, `sed -i` or a heredoc alike). Edits and edit -> test iterations, so difficulty, count these."""
    return any(not classifier.is_test(path) for path in files_touched)


MUTATING_TOOLS = EDIT_TOOLS | {"bash"}  # calls after which the workspace is compared and its snapshot refreshed


def dev_view(text: str, limit: int) -> str:
    """The Dev's view of a long output: its head and tail, with the number of characters cut, in `limit`."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} chars cut ...]\n"
    keep = max(limit - len(marker), 2)
    return text[: keep // 2] + marker + text[len(text) - keep // 2 :]


@dataclass
class ToolResult:
    observation: str
    ok: bool = True
    files_touched: list[str] = field(default_factory=list)
    test_status: TestCounts | None = None
    error_signature: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. content_sha of the changed files, test_file: True


def failure_signature(failing: list[str], last_error: str = "") -> str | None:
    """What makes two failing runs "the same failure": which tests fail and the last error line,
    with numbers and addresses blanked so a changed line number or object id does not count."""
    if not failing:
        return None
    last = re.sub(r"0x[0-9a-f]+|\d+", "N", last_error)
    return hashlib.sha1(("\n".join(failing) + "\n" + last).encode()).hexdigest()[:12]


def error_signature(run: TestRun) -> str | None:
    """A runner's parsed run as a `failure_signature` (the last error line is pytest's `E ...`)."""
    failing = sorted(test for test, status in run.statuses.items() if status in ("failed", "error"))
    errors = re.findall(r"^E\s+(.+)$", run.log_tail, re.M)
    return failure_signature(failing + sorted(run.collect_errors), errors[-1] if errors else "")


def test_counts(run: TestRun) -> TestCounts:
    failed = sum(status in ("failed", "error") for status in run.statuses.values()) + len(run.collect_errors)
    passed = sum(status == "passed" for status in run.statuses.values())
    return TestCounts(passed=passed, failed=failed, total=len(run.statuses))


class ToolBox:
    """Runs tool calls in one sandbox for one milestone."""

    def __init__(
        self,
        sandbox: Sandbox,
        recipe: Recipe,
        tests: list[str],
        classifier: FileClassifier,
        timeout_s: int,
        test_file_edits: TestFileEdits = "warn",
    ):
        self.sandbox, self.recipe, self.tests = sandbox, recipe, tests
        self.classifier, self.test_timeout_s, self.test_file_edits = classifier, timeout_s, test_file_edits
        self.watch = WorkspaceWatch(sandbox)
        self.shell_reports = f"{sandbox.results_dir}/{SHELL_REPORTS}"

    def call(self, call: ToolCall) -> ToolResult:
        if call.error:
            return ToolResult(
                f"error: the arguments of {call.name} are not a valid JSON object: {call.error}", ok=False
            )
        if call.name not in TOOL_NAMES:
            return ToolResult(
                f"error: unknown tool {call.name!r}; available: {', '.join(sorted(TOOL_NAMES))}", ok=False
            )
        if call.name in MUTATING_TOOLS:
            self.watch.before()
        try:
            result = getattr(self, f"_{call.name}")(**call.args)
        except TypeError as e:
            result = ToolResult(f"error: bad arguments for {call.name}: {e}", ok=False)
        except SandboxLost:  # not the call's outcome: the Navigator retries the milestone in a fresh sandbox
            raise
        except EnvError as e:
            result = ToolResult(f"error: {e}", ok=False)
        if call.name in MUTATING_TOOLS:
            self._changed(result, self.watch.after())
        return result

    def watched(self, call: ToolCall, run: Callable[[], tuple[str, bool]]) -> ToolResult:
        """A call a scaffold ran itself (`call` in our vocabulary, `run` lets it go and returns what the
        scaffold saw): the same facts as for our own tools, from the workspace and, for a shell call, from
        the test run it contains."""
        self.watch.before()
        observation, ok = run()
        result = ToolResult(observation, ok=ok)
        command = call.args.get("command")
        if call.name == "bash" and isinstance(command, str):
            self._shell_facts(result, command, 0 if ok else 1, observation)
        self._changed(result, self.watch.after())
        return result

    def _changed(self, result: ToolResult, changed: dict[str, str]) -> None:
        """Add what the call changed in the workspace to its result; test files are noted (`warn`) or put
        back as they were (`block`)."""
        tests = [path for path in changed if self.classifier.is_test(path)]
        if tests and self.test_file_edits == "block":
            self._restore(tests)
            changed = {path: sha for path, sha in changed.items() if path not in tests}
            result.observation += f"\n(test files are read-only here; restored: {', '.join(tests)})"
            result.extra["blocked_test_files"] = tests
        elif tests:
            result.extra["test_file"] = True
            result.observation += " (note: test files are restored before grading; this edit will not count)"
        result.files_touched = list(dict.fromkeys([*result.files_touched, *changed]))
        if changed:
            result.extra["content_sha"] = changed

    def _restore(self, paths: list[str]) -> None:
        """Put files back as the watch last saw them (their content is in git's objects: `git add` wrote it)."""
        for path in paths:
            before = self.watch.content_before(path)
            target = shlex.quote(self.sandbox.path(path))
            if before is None:
                self.sandbox.exec(f"rm -f -- {target}")
            else:
                self.sandbox.exec(f"git cat-file blob {before} > {target}")
        self.watch.refresh()

    # ---- tools ----------------------------------------------------------------------------------
    def _read_file(self, path: str) -> ToolResult:
        return ToolResult(self.sandbox.read_file(path).decode(errors="replace"))

    def _write_file(self, path: str, content: str) -> ToolResult:
        if self._blocked(path):
            return ToolResult(f"error: {path} is a test file; test files are read-only here", ok=False)
        self.sandbox.write_file(path, content)
        return ToolResult(f"wrote {path} ({len(content)} chars)", files_touched=[path])

    def _edit_file(self, path: str, old: str, new: str) -> ToolResult:
        if self._blocked(path):
            return ToolResult(f"error: {path} is a test file; test files are read-only here", ok=False)
        text = self.sandbox.read_file(path).decode(errors="replace")
        count = text.count(old) if old else 0
        if count != 1:
            return ToolResult(f"error: `old` occurs {count} times in {path}; it must occur exactly once", ok=False)
        self.sandbox.write_file(path, text.replace(old, new))
        return ToolResult(f"edited {path}", files_touched=[path])

    def _blocked(self, path: str) -> bool:
        return self.test_file_edits == "block" and self.classifier.is_test(path)

    def _list_dir(self, path: str = ".") -> ToolResult:
        return ToolResult("\n".join(self.sandbox.list_dir(path)))

    def _search(self, pattern: str, path: str = ".") -> ToolResult:
        quoted, where = shlex.quote(pattern), shlex.quote(self.sandbox.path(path))
        result = self.sandbox.exec(
            f"if command -v rg >/dev/null; then rg -n --no-heading -e {quoted} {where}; "
            f"else grep -rnIE --exclude-dir=.git -e {quoted} {where}; fi | head -200"
        )
        return ToolResult(result.stdout.replace(self.sandbox.workdir + "/", "") or "no matches")

    def _bash(self, command: str) -> ToolResult:
        """The command, with our results plugin active for any pytest it starts; a test run it contains
        (pytest, go, cargo, jest, vitest) is counted as `run_tests` counts its own."""
        result = self.sandbox.exec(command, env=shell_test_env(self.shell_reports))
        out = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        status = " (timed out)" if result.timed_out else ""
        tool_result = ToolResult(f"{out}\n[exit code {result.exit_code}{status}]", ok=result.exit_code == 0)
        self._shell_facts(tool_result, command, result.exit_code, out)
        return tool_result

    def _shell_facts(self, tool_result: ToolResult, command: str, exit_code: int, out: str) -> None:
        """What a shell command read, and the test run it contains (pytest, go, cargo, jest, vitest)."""
        read = files_read(command)
        if read:
            tool_result.extra["files_read"] = read
        shell_run = shell_test_run(command, exit_code, out, self._shell_reports())
        if shell_run is not None:
            counts = {"passed": shell_run.passed, "failed": shell_run.failed, "total": shell_run.total}
            tool_result.test_status = TestCounts(**counts)
            tool_result.error_signature = failure_signature(list(shell_run.failing), shell_run.last_error)
            tool_result.extra["test_runner"] = shell_run.runner

    def _shell_reports(self) -> dict[str, str]:
        """The report our plugin wrote for a pytest the command started (read and removed in one call)."""
        report = f"{self.shell_reports}/pytest.jsonl"
        text = self.sandbox.exec(f"cat {report} 2>/dev/null; rm -f {report}", env={}).stdout
        return {"pytest.jsonl": text} if text else {}

    def _run_tests(self, tests: list[str] | None = None) -> ToolResult:
        selected = tests or self._default_selection()
        run = run_tests(self.sandbox, self.recipe, selected, self.test_timeout_s)
        counts = test_counts(run)
        failed = sorted(test for test, status in run.statuses.items() if status in ("failed", "error"))
        lines = [f"{counts.passed} passed, {len(failed)} failed, {counts.total} total"]
        lines += [f"FAILED {test}" for test in failed[:30]] + [
            f"ERROR collecting {file}" for file in run.collect_errors
        ]
        if run.timed_out:
            lines.append("the test run timed out")
        if failed or run.collect_errors or not run.suite_ran:
            lines.append(run.log_tail[-3000:])
        return ToolResult(
            "\n".join(lines),
            ok=not failed and run.suite_ran,
            test_status=counts,
            error_signature=error_signature(run),
        )

    def _default_selection(self) -> list[str]:
        return self._selection(self.tests)

    def _selection(self, tests: list[str]) -> list[str]:
        """Whole files where the runner aborts every id when one file fails to load (pytest, jest, vitest),
        the ids themselves otherwise (go, cargo select by name)."""
        if self.recipe.runner in FILE_RUNNERS:
            return sorted(set(test_files_of(self.recipe.runner, tests)))
        return list(tests)

    def run_acceptance(self, tests: list[str]) -> ToolResult:
        """Some of the milestone's tests, run by the harness itself (V3's checkpoints)."""
        return self._run_tests(self._selection(tests))

    def _request_hint(self, reason: str = "") -> ToolResult:
        return ToolResult("hint requested; the mentor decides whether to release one")

    def _submit(self, message: str = "") -> ToolResult:
        return ToolResult("submitted for verification")
