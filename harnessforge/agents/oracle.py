"""The offline oracle: a deterministic Dev that knows the ground truth but behaves like an agent.

It explores (lists, searches for identifiers of the patch, reads files), makes detours (a wrong
edit first, then a revert), runs tests, reacts to hints by reading the hinted files, may ask for a
hint, and submits. It exists to exercise the whole pipeline and every distillation signal without
a model, so its runs are labelled `synthetic`.

Each milestone follows a profile:
- `direct`: explores, fixes, tests, submits (one seeded wrong edit on the way when `detours`);
- `partial`: submits after fixing half the files, then finishes once the verifier says what fails;
- `needs_hints`: re-runs the failing tests without fixing anything until hint level `solve_at_level`;
- `asks`: like `needs_hints`, but calls `request_hint` instead of waiting;
- `stuck`: never fixes anything; loops over wrong edits and test runs until the budget ends.

Every decision is a pure function of the conversation so far and the seed, so a resumed run
(conversation replayed) continues exactly where it stopped.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..diffs import split_diff
from ..models.trajectory import AgentTurn, Message, ToolCall, Usage
from .base import AgentBackend

PROFILES = ("direct", "partial", "needs_hints", "asks", "stuck")
HINT_MARK = re.compile(r"^\[hint L(\d)\]", re.M)  # how the harness prefixes a released hint
WRONG = "# wrong first attempt\n"


@dataclass
class OracleTask:
    """Privileged knowledge for one milestone: the final content of each source file it changes."""

    files: dict[str, str | None]  # path -> content at verify (None: the file is deleted)
    identifiers: list[str] = field(default_factory=list)


def task_from_patch(ground_truth: bytes, final_content: Callable[[str], bytes | None]) -> OracleTask:
    """`final_content(path) -> bytes | None` reads a file at the verify commit."""
    files, identifiers = {}, []
    for file_diff in split_diff(ground_truth):
        if file_diff.binary:
            continue
        data = final_content(file_diff.path)
        files[file_diff.path] = None if (file_diff.deleted or data is None) else data.decode(errors="replace")
        identifiers += re.findall(rb"^\+\s*(?:def|class|func|fn|function)\s+(\w+)", file_diff.raw, re.M)
    return OracleTask(files=files, identifiers=[name.decode() for name in identifiers][:5])


class OracleAgent(AgentBackend):
    name = "oracle"
    model = "oracle-v1"
    synthetic = True

    def __init__(
        self,
        seed: int = 0,
        profiles: dict[str, str] | None = None,
        default: str = "direct",
        detours: bool = True,
        solve_at_level: int = 2,
    ):
        unknown = {profile for profile in [default, *(profiles or {}).values()] if profile not in PROFILES}
        if unknown:
            raise ValueError(f"unknown oracle profile(s) {sorted(unknown)}; use {', '.join(PROFILES)}")
        self.seed, self.profiles, self.default = seed, profiles or {}, default
        self.detours, self.solve_at_level = detours, solve_at_level
        self.milestone, self.task = "", OracleTask(files={})

    def begin_milestone(
        self, milestone_id: str, ground_truth: bytes, final_content: Callable[[str], bytes | None]
    ) -> None:
        """The oracle's privileged knowledge: the final content of every file the ground truth changes."""
        self.milestone, self.task = milestone_id, task_from_patch(ground_truth, final_content)

    def policy(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "profiles": dict(sorted(self.profiles.items())),
            "default": self.default,
            "detours": self.detours,
            "solve_at_level": self.solve_at_level,
        }

    # ---- one turn ---------------------------------------------------------------------------------
    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn:
        history = [
            (call["function"]["name"], json.loads(call["function"]["arguments"] or "{}"))
            for message in messages
            if message.get("role") == "assistant"
            for call in message.get("tool_calls", [])
        ]
        said = [str(message.get("content", "")) for message in messages if message.get("role") == "user"]
        hint_level = max((int(level) for text in said for level in HINT_MARK.findall(text)), default=0)
        rejected = any("verification failed" in text for text in said)
        profile = self.profiles.get(self.milestone, self.default)
        name, args, thought = self._decide(history, profile, hint_level, rejected)
        call = ToolCall(id=f"call_{self.milestone}_{len(history)}", name=name, args=args)
        return AgentTurn(reasoning=thought, tool_calls=[call], usage=Usage(), model=self.model, stop_reason="tool_use")

    def _decide(self, history: list[tuple[str, dict]], profile: str, hint_level: int, rejected: bool):
        step = len(history)
        rng = random.Random(f"{self.seed}:{self.milestone}:{step}")
        files = sorted(self.task.files)
        explore = [("list_dir", {"path": "."}, "Look at the layout of the repository first.")]
        explore += [
            ("search", {"pattern": name}, f"Is `{name}` mentioned anywhere yet?") for name in self.task.identifiers[:1]
        ]
        explore += [
            ("read_file", {"path": path}, f"Read {path}.") for path in files[:2] if self.task.files[path] is not None
        ]
        if step < len(explore):
            return explore[step]
        if profile == "stuck" or (profile in ("needs_hints", "asks") and hint_level < self.solve_at_level):
            return self._wander(step - len(explore), profile, hint_level, files, rng)

        written = [args["path"] for tool, args in history if tool == "write_file" and args.get("content") != WRONG]
        removed = [
            args["command"].split()[-1]
            for tool, args in history
            if tool == "bash" and args["command"].startswith("git rm")
        ]
        wrong = [args["path"] for tool, args in history if tool == "write_file" and args.get("content") == WRONG]
        if self.detours and profile == "direct" and not wrong:
            editable = [path for path in files if self.task.files[path] is not None]
            if editable:
                path = editable[rng.randrange(len(editable))]
                return ("write_file", {"path": path, "content": WRONG}, f"Try a quick change to {path} first.")
        if wrong and history[-1][0] == "write_file" and history[-1][1].get("content") == WRONG:
            return ("run_tests", {}, "Check whether that quick change works.")
        todo = [path for path in files if path not in written and path not in removed]
        if profile == "partial" and not rejected:
            todo = todo[: max(0, len(todo) - len(files) // 2)]
        if todo:
            path = todo[0]
            if self.task.files[path] is None:
                return ("bash", {"command": f"git rm -q {path}"}, f"{path} is no longer needed.")
            return ("write_file", {"path": path, "content": self.task.files[path]}, f"Implement the change in {path}.")
        if history[-1][0] != "run_tests":
            return ("run_tests", {}, "Run the acceptance tests.")
        return ("submit", {"message": "Implemented the feature."}, "The tests pass; submit.")

    def _wander(self, step: int, profile: str, hint_level: int, files: list[str], rng: random.Random):
        """What a blocked Dev does: re-run tests, poke at files, and (profile `asks`) ask for help."""
        if profile == "asks" and step % 4 == 3:
            return ("request_hint", {"reason": "I do not see where this feature belongs."}, "I am stuck.")
        if hint_level and step % 4 == 1 and files:
            path = files[rng.randrange(len(files))]
            return ("read_file", {"path": path}, f"The hint points at {path}.")
        if step % 2 == 0:
            return ("run_tests", {}, "Run the tests again to see what fails.")
        target = files[rng.randrange(len(files))] if files else "README.md"
        return ("bash", {"command": f"grep -n . {target} | head -20"}, f"Look around {target}.")
