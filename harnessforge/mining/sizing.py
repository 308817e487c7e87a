"""How big a milestone is: its difficulty (from its size) and the Dev turns its work should take.

The turn estimate reads the work, not the churn: the source files that its commits of work change
(housekeeping riding along counts for nothing), their hunks and added lines. The coefficients are rules
(`planning.expected_turns`), fitted so that the offline oracle's turns on the example repository are
within a factor of 2 (`tests/test_memory.py` checks it on the oracle's runs).
"""

from __future__ import annotations

from ..files import FileClassifier
from ..gitio import display
from ..rules import PlanningRules
from .segment import UnitInfo


def difficulty(lines: int, files: int, prs: int, thresholds: list[int]) -> int:
    level = 1 + sum(lines >= threshold for threshold in thresholds)
    if files > 15 or prs > 4:
        level += 1
    return min(level, 5)


def expected_turns(infos: list[UnitInfo], text: dict, classify: FileClassifier, rules: PlanningRules) -> int:
    """An estimate of the Dev turns a milestone's work takes (`text`: its diff parsed, by path): reported when
    far from the target, never used to cut."""
    work_files = {
        display(change.path)
        for info in infos
        if info.role != "housekeeping"
        for change in info.unit.files
        if classify.is_source(change.path)
    }
    work_text = [text[path] for path in sorted(work_files) if path in text]
    estimate = rules.expected_turns
    return round(
        estimate.base
        + estimate.per_source_file * len(work_files)
        + estimate.per_hunk * sum(len(parsed) for parsed in work_text)
        + estimate.per_100_added_lines * sum(parsed.added for parsed in work_text) / 100
    )


def is_far(turns: int, rules: PlanningRules) -> bool:
    low, high = rules.expected_turns.target
    return turns < low / rules.expected_turns.far_factor or turns > high * rules.expected_turns.far_factor
