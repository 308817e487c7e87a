"""A milestone's task text beside its code: what the description may not show (the withholding), the
milestone with its promises, interface and quality, and the plan's text measures and release-note coverage.

The planner cuts and measures milestones; this module owns what the Dev is told about each one.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Sequence

from ..diffs import FileDiff
from ..envs.declared_tests import declared_tests
from ..envs.milestone_interface import refresh_interface
from ..files import FileClassifier
from ..gitio import GitRepo, display
from ..models import AcceptanceCriterion, ChangelogEntry, Milestone, PlanReport, TaskPart, TaskQuality
from ..models.plan import text_measures
from ..models.task import Composed
from ..rules import PlanningRules
from .describe import TaskText, Withholding
from .kinds import KindReader, strongest
from .segment import UnitInfo
from .unit_diffs import UnitDiff, tests_touched


def withholding(others: list[FileDiff], text: dict, classify: FileClassifier) -> Withholding:
    """What the description may not name: the source files the milestone changes (save a new module its
    tests import) and the source lines it adds."""
    return Withholding(
        [
            display(file.path)
            for file in others
            if classify.is_source(file.path) and not _imported_by_tests(file, text, classify)
        ],
        {
            line.value
            for parsed in text.values()
            if classify.is_source(parsed.path)
            for hunk in parsed
            for line in hunk
            if line.is_added
        },
    )


def _imported_by_tests(file: FileDiff, text: dict, classify: FileClassifier) -> bool:
    """A Python module the milestone adds and its tests import: its name is interface, not solution."""
    if not file.path.endswith(".py") or b"\nnew file mode" not in file.raw[:300]:
        return False
    stem = re.escape(PurePosixPath(file.path).stem)
    imports = re.compile(rf"^\s*(?:from\s+[\w.]*\b{stem}\b|(?:from\s+[\w.]+\s+)?import\s+[\w., ]*\b{stem}\b)")
    return any(
        imports.match(line.value)
        for parsed in text.values()
        if classify.is_test(parsed.path)
        for hunk in parsed
        for line in hunk
        if line.is_added
    )


def with_task(
    milestone: Milestone,
    task: TaskText,
    composed: Composed,
    repo: GitRepo,
    classify: FileClassifier,
    planning: PlanningRules,
    kinds: KindReader,
) -> Milestone:
    """The milestone with its interface and acceptance criteria (for its traced tests; validation reads them
    again for FAIL_TO_PASS), and how whole its text is."""
    promises = [AcceptanceCriterion(text=promise, source="release notes") for promise in composed.promises]
    spoken = [part for part in milestone.title.split("; ") if part] + [
        milestone.parts[index].heading for index in composed.asked if milestone.parts[index].heading
    ]
    quality = TaskQuality(
        problems=task.problems,
        words_lost=len(task.words_lost),
        withheld=sorted(set(task.withheld)),
        housekeeping_in_text=[words for words in spoken if kinds.is_housekeeping(words, subject=True)],
        warnings=[f"{milestone.id}: {warning}" for warning in task.warnings],
    )
    milestone = milestone.model_copy(update={"acceptance_criteria": promises, "quality": quality})
    return refresh_interface(repo, milestone, classify, planning)


def text_warnings(milestone: Milestone) -> list[str]:
    """The plan's warnings about one milestone's text: unreadable inputs, broken sentences, housekeeping, and
    why its task is held back."""
    return [
        *milestone.quality.warnings,  # unreadable markup, diffs and languages: each names its milestone
        *(f"{milestone.id}: its task text reads broken: {problem}" for problem in milestone.quality.problems),
        *(f"{milestone.id}: its first hint reads broken: {problem}" for problem in milestone.quality.hint_problems),
        *(
            f"{milestone.id}: housekeeping speaks in its task text: {words!r}"
            for words in milestone.quality.housekeeping_in_text
        ),
        *(f"{milestone.id}: held back from the Dev: {reason}" for reason in milestone.held_back),
    ]


def task_parts(
    task: TaskText,
    features: list[tuple[list[UnitInfo], list[ChangelogEntry]]],
    classify: FileClassifier,
    diffs: dict[str, UnitDiff],
    repo: GitRepo,
) -> list[TaskPart]:
    """The milestone's parts from its task's sections: each with its commits, the test files they changed and the
    tests they add or change there (what validation looks in for a graded test of it), its size and releases. A
    test file its commits changed outside every test (a `'use strict'` line atop it) holds no test of it.
    `features[position]`: the units and release-note entries of the feature at that position."""
    parts = []
    for section in task.sections:
        infos = [info for position in section.positions for info in features[position][0]]
        entries = [entry for position in section.positions for entry in features[position][1]]
        changes = [(info.unit.sha, change.path) for info in infos for change in info.unit.files]
        names: set[str] = set()
        test_files: set[str] = set()
        for sha, path in dict.fromkeys(changes):
            if not classify.is_test(path):
                continue
            read = lambda path, sha=sha: (repo.show(sha, path) or b"").decode(errors="replace")  # noqa: E731
            before = lambda path, sha=sha: (repo.show(f"{sha}^", path) or b"").decode(errors="replace")  # noqa: E731
            touched = tests_touched(diffs[sha], [path], read, before) if sha in diffs else set()
            names |= touched
            if touched or not declared_tests(path, read(path)):  # a file it changed outside every test is not its
                test_files.add(display(path))
        lines = sum(
            len(diffs[info.unit.sha].lines(path))
            for info in infos
            if info.unit.sha in diffs
            for path in {change.path for change in info.unit.files}
            if classify.is_source(path)
        )
        parts.append(
            TaskPart(
                heading=section.heading,
                source=section.source,
                body=section.body,
                promises=section.promises,
                problems=section.problems,
                asides=section.asides,
                releases=list(dict.fromkeys(entry.release for entry in entries if entry.release)),
                commits=list(dict.fromkeys(info.unit.sha for info in infos)),
                test_files=sorted(test_files),
                tests=sorted(names),
                lines=lines,
                kind=strongest([info.kind for info in infos if info.kind]),
                seed=section.seed,
                tested=section.tested,
            )
        )
    return parts


def carried_entries(
    entries: Sequence[ChangelogEntry], entry_links: Sequence[set[int]], infos: Sequence[UnitInfo], milestones
) -> list[ChangelogEntry]:
    """The range's entries, each with the milestone whose task carries it: the one holding the first unit
    of work it is placed on (an entry placed only on housekeeping, or unplaced, is carried by none)."""
    milestone_of = {sha: milestone.id for milestone in milestones for sha in milestone.commits}
    out = []
    for entry, links in zip(entries, entry_links):
        carriers = [
            infos[position]
            for position in sorted(links)
            if infos[position].described and any(carried is entry for carried in infos[position].entries)
        ]
        milestone = milestone_of.get(carriers[0].unit.sha) if carriers else None
        out.append(entry.model_copy(update={"milestone": milestone}))
    return out


def plan_report(
    milestones: list[Milestone], entries: list[ChangelogEntry], planning: PlanningRules, backport_entries: int
) -> PlanReport:
    """Release-note coverage (how the range's entries were placed, and which tasks carry them), the
    milestones' type mix, how many are titled by a feature, the size outliers and the text measures."""
    kinds = KindReader(planning)
    housekeeping = [entry for entry in entries if kinds.entry_kind(entry) == "housekeeping"]
    work = [entry for entry in entries if kinds.entry_kind(entry) != "housekeeping"]
    citing = [entry for entry in work if entry.prs or entry.issues or entry.refs or entry.commits]
    low, high = planning.expected_turns.target
    return PlanReport(
        entries_in_range=len(entries),
        entries_citing=len(citing),
        entries_covered=sum(1 for entry in citing if entry.milestone),
        entries_placed=sum(1 for entry in entries if entry.placed_by != "unplaced"),
        work_entries=len(work),
        work_entries_carried=sum(1 for entry in work if entry.milestone),
        placed_by=dict(Counter(entry.placed_by or "unplaced" for entry in entries)),
        housekeeping_entries=len(housekeeping),
        backport_entries=backport_entries,
        uncovered=[" ".join(entry.text.split())[:200] for entry in work if not entry.milestone][:20],
        type_mix=dict(Counter(milestone.type or "housekeeping" for milestone in milestones)),
        feature_titled=sum(1 for milestone in milestones if milestone.title_source not in (None, "none")),
        size_outliers=[
            f"{milestone.id}: ~{milestone.expected_turns} Dev turns expected (target {low}-{high})"
            for milestone in milestones
            if "expected_turns_far_from_target" in milestone.flags
        ],
        **text_measures(milestones),
    )
