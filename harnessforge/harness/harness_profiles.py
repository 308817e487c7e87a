"""Harness profiles V1-V3 (seed 000 §4.8): how much the harness structures the Dev's work.

- V1, plan first: the task asks for a plan before the first edit; the first Dev message that states one
  (the rules' `plan_pattern`, in its text or reasoning) becomes a `plan` event, and the edit tools refuse
  to run before it (a shell edit cannot be refused: it is counted on the plan event instead).
- V2, plan review: the plan's modules (the directories of the paths it names) against the ground truth's;
  under `plan_review_min_overlap` the Mentor says which share it covers (a `plan_review` event).
- V3, checkpoints: when the Dev's edits move on from a source file, that module is finished: the acceptance
  tests that cover it (by name, else all of them) run and the progress is reported (a `checkpoint` event).

State is rebuilt from the event log (`replay`), so a resumed milestone keeps its plan and last module.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ..files import FileClassifier
from ..models.trajectory import Event, ToolCall
from ..rules import HarnessProfileRules, HarnessRules
from .tools import EDIT_TOOLS

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,5}|(?:[\w.-]+/)+)(?![\w/-])")


@dataclass
class Plan:
    text: str
    files: list[str]  # the paths it names
    modules: list[str]  # their directories ("." for the root)


@dataclass
class PlanReview:
    overlap: float
    covered: int
    total: int
    missing: list[str]
    message: str | None  # the Mentor's words, when the overlap is under the threshold


def module_of(path: str) -> str:
    """A file's directory ("." at the root); a path naming a directory is that directory."""
    if "." not in posixpath.basename(path):
        return path.rstrip("/")
    return posixpath.dirname(path) or "."


def plan_of(text: str) -> Plan:
    files = list(dict.fromkeys(match[1] for match in _PATH.finditer(text)))
    return Plan(text=text, files=files, modules=sorted({module_of(path) for path in files}))


@dataclass
class HarnessProfile:
    name: str
    rules: HarnessProfileRules
    harness: HarnessRules
    classifier: FileClassifier
    ground_truth_files: list[str]
    planned: bool = False
    shell_edits_before_plan: int = 0
    module: str | None = None  # the source file the Dev's edits are on (V3)

    def replay(self, events: list[Event]) -> None:
        for event in events:
            if event.action.type == "plan":
                self.planned = True
            elif event.role == "dev" and event.call_id and event.files_touched:
                self.module = self._source(event.files_touched) or self.module

    def task_note(self) -> str:
        return f"\n\n{self.harness.plan_prompt}" if self.rules.plan_first and self.harness.plan_prompt else ""

    # ---- V1 / V2 --------------------------------------------------------------------------------
    def plan_in(self, event: Event) -> Plan | None:
        """The plan a Dev message states, if it is the first one (V1, V2)."""
        if not self.rules.plan_first or self.planned or event.action.type != "message":
            return None
        for text in (event.action.content, str(event.action.args.get("reasoning") or "")):
            match = re.search(self.harness.plan_pattern, text)
            if match:
                self.planned = True
                return plan_of(text[match.start() :])
        return None

    def refusal(self, call: ToolCall) -> str | None:
        """Why an edit tool may not run yet (V1: no plan stated)."""
        if self.rules.plan_first and not self.planned and call.name in EDIT_TOOLS:
            return f"error: state your plan before your first edit. {self.harness.plan_prompt}".strip()
        return None

    def count_shell_edit(self, call: ToolCall, files_touched: list[str]) -> None:
        if self.rules.plan_first and not self.planned and call.name == "bash" and files_touched:
            self.shell_edits_before_plan += 1

    def review(self, plan: Plan) -> PlanReview | None:
        """The plan's modules against the ground truth's source modules (V2)."""
        threshold = self.rules.plan_review_min_overlap
        truth = sorted({module_of(path) for path in self.ground_truth_files if self.classifier.is_source(path)})
        if threshold is None or not truth:
            return None
        covered = [module for module in truth if module in plan.modules]
        missing = [module for module in truth if module not in plan.modules]
        overlap = len(covered) / len(truth)
        message = None
        if overlap < threshold:
            names = ", ".join(missing)
            message = self.harness.plan_review_message.format(
                covered=len(covered), total=len(truth), missing=names, overlap=f"{overlap:.0%}"
            )
        return PlanReview(round(overlap, 3), len(covered), len(truth), missing, message)

    # ---- V3 -------------------------------------------------------------------------------------
    def finished_module(self, files_touched: list[str]) -> str | None:
        """The source file the Dev's edits just left (V3: its checkpoint is due), else None."""
        if not self.rules.checkpoints:
            return None
        source = self._source(files_touched)
        if source is None:
            return None
        finished = self.module if self.module not in (None, source) else None
        self.module = source
        return finished

    def covering(self, module: str, tests: list[str]) -> list[str]:
        """The acceptance tests named after a module (`test_store.py` for `store.py`), else all of them."""
        stem = posixpath.splitext(posixpath.basename(module))[0]
        named = [test for test in tests if re.search(rf"(?:^|[/_]){re.escape(stem)}(?:[_.]|$)", test.split("::")[0])]
        return named or list(tests)

    def _source(self, files: list[str]) -> str | None:
        sources = [path for path in files if self.classifier.is_source(path) and not self.classifier.is_test(path)]
        return sources[-1] if sources else None
