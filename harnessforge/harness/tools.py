"""The Dev's tools: one schema for every backend, every call run inside the milestone's sandbox.

A tool returns the observation the Dev sees plus the facts the Recorder and the Mentor need
(files touched, test counts, a normalised failure signature, content hashes for thrash detection).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..envs.runners import FILE_RUNNERS, run_tests, test_files_of
from ..envs.sandbox import Sandbox
from ..errors import EnvError, SandboxLost
from ..files import FileClassifier
from ..models.env import Recipe, TestRun
from ..models.trajectory import TestCounts, ToolCall


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
        "Run the milestone's acceptance tests (or the given test ids / files) and report the results.",
        {"tests": {"type": "array", "items": {"type": "string"}}},
        [],
    ),
    _fn("request_hint", "Ask the mentor for a hint when you are stuck.", {"reason": {"type": "string"}}, []),
    _fn("submit", "Declare the milestone done; a verifier grades your work.", {"message": {"type": "string"}}, []),
]
TOOL_NAMES = {tool["function"]["name"] for tool in TOOLS}
EDIT_TOOLS = {"write_file", "edit_file"}


@dataclass
class ToolResult:
    observation: str
    ok: bool = True
    files_touched: list[str] = field(default_factory=list)
    test_status: TestCounts | None = None
    error_signature: str | None = None
    run: TestRun | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. content_sha of an edited file, test_file: True


def error_signature(run: TestRun) -> str | None:
    """What makes two failing runs "the same failure": which tests fail and the last error line,
    with numbers and addresses blanked so a changed line number or object id does not count."""
    failing = sorted(test for test, status in run.statuses.items() if status in ("failed", "error")) + sorted(
        run.collect_errors
    )
    if not failing:
        return None
    errors = re.findall(r"^E\s+(.+)$", run.log_tail, re.M)
    last = re.sub(r"0x[0-9a-f]+|\d+", "N", errors[-1]) if errors else ""
    return hashlib.sha1(("\n".join(failing) + "\n" + last).encode()).hexdigest()[:12]


class ToolBox:
    """Runs tool calls in one sandbox for one milestone."""

    def __init__(self, sandbox: Sandbox, recipe: Recipe, tests: list[str], classifier: FileClassifier, timeout_s: int):
        self.sandbox, self.recipe, self.tests = sandbox, recipe, tests
        self.classifier, self.test_timeout_s = classifier, timeout_s

    def call(self, call: ToolCall) -> ToolResult:
        if call.error:
            return ToolResult(
                f"error: the arguments of {call.name} are not a valid JSON object: {call.error}", ok=False
            )
        if call.name not in TOOL_NAMES:
            return ToolResult(
                f"error: unknown tool {call.name!r}; available: {', '.join(sorted(TOOL_NAMES))}", ok=False
            )
        try:
            return getattr(self, f"_{call.name}")(**call.args)
        except TypeError as e:
            return ToolResult(f"error: bad arguments for {call.name}: {e}", ok=False)
        except SandboxLost:  # not the call's outcome: the Navigator retries the milestone in a fresh sandbox
            raise
        except EnvError as e:
            return ToolResult(f"error: {e}", ok=False)

    # ---- tools ----------------------------------------------------------------------------------
    def _read_file(self, path: str) -> ToolResult:
        return ToolResult(self.sandbox.read_file(path).decode(errors="replace"))

    def _write_file(self, path: str, content: str) -> ToolResult:
        self.sandbox.write_file(path, content)
        return self._edited(path, content.encode(), f"wrote {path} ({len(content)} chars)")

    def _edit_file(self, path: str, old: str, new: str) -> ToolResult:
        text = self.sandbox.read_file(path).decode(errors="replace")
        count = text.count(old) if old else 0
        if count != 1:
            return ToolResult(f"error: `old` occurs {count} times in {path}; it must occur exactly once", ok=False)
        text = text.replace(old, new)
        self.sandbox.write_file(path, text)
        return self._edited(path, text.encode(), f"edited {path}")

    def _edited(self, path: str, data: bytes, message: str) -> ToolResult:
        extra = {"content_sha": hashlib.sha1(data).hexdigest()[:12]}
        if self.classifier.is_test(path):
            extra["test_file"] = True
            message += " (note: test files are restored before grading; this edit will not count)"
        return ToolResult(message, files_touched=[path], extra=extra)

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
        result = self.sandbox.exec(command)
        out = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        status = " (timed out)" if result.timed_out else ""
        return ToolResult(f"{out}\n[exit code {result.exit_code}{status}]", ok=result.exit_code == 0)

    def _run_tests(self, tests: list[str] | None = None) -> ToolResult:
        selected = tests or self._default_selection()
        run = run_tests(self.sandbox, self.recipe, selected, self.test_timeout_s)
        passed = sum(status == "passed" for status in run.statuses.values())
        failed = sorted(test for test, status in run.statuses.items() if status in ("failed", "error"))
        counts = TestCounts(passed=passed, failed=len(failed) + len(run.collect_errors), total=len(run.statuses))
        lines = [f"{passed} passed, {len(failed)} failed, {len(run.statuses)} total"]
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
            run=run,
        )

    def _default_selection(self) -> list[str]:
        """The milestone's tests: whole files where the runner aborts every id when one file fails to load
        (pytest, jest, vitest), the ids themselves otherwise (go, cargo select by name)."""
        if self.recipe.runner in FILE_RUNNERS:
            return sorted(set(test_files_of(self.recipe.runner, self.tests)))
        return list(self.tests)

    def _request_hint(self, reason: str = "") -> ToolResult:
        return ToolResult("hint requested; the mentor decides whether to release one")

    def _submit(self, message: str = "") -> ToolResult:
        return ToolResult("submitted for verification")
