"""Invariants of each stage's artifacts, as pure functions that list what is wrong.

The Dagster asset checks call these (blocking where a failure must stop downstream work); the
CLI and tests can call them too. Each returns a list of problems, one readable line each; an empty
list means the invariant holds.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb

from .analytics.rows import CheatingFlagRow, read_rows
from .diffs import split_diff
from .errors import ArtifactError, RepoError
from .files import FileClassifier
from .gitio import GitRepo
from .harness.recorder import Recorder
from .models.distill import Review
from .models.run import MilestoneSummary
from .models.trajectory import VerifierReport
from .rules import Rules
from .store import RunFiles, Store


def plan_problems(store: Store, key: str) -> list[str]:
    """A plan is a chain: it loads (the model checks ids m01..mNN in order, each base the previous
    verify commit, the last ending at the range's end), each milestone changes test files and
    moves the code, and its ground-truth and test patches apply to its base."""
    try:
        plan = store.load_plan(key)
    except ArtifactError as e:
        return [str(e)]
    repo = GitRepo(store.git_cache(key))
    problems = []
    for milestone in plan.milestones:
        if milestone.base_commit == milestone.verify_commit:
            problems.append(f"{milestone.id}: base and verify commit are the same ({milestone.base_commit[:12]})")
        if (
            not milestone.test_files
        ):  # which of their tests are acceptance tests, validation establishes by running them
            problems.append(f"{milestone.id}: changes no test file")
        try:
            ground_truth, test_patch = store.read_patches(key, milestone.id)
            repo.tree_with(milestone.base_commit, ground_truth)
            repo.tree_with(milestone.base_commit, test_patch)
        except (ArtifactError, RepoError) as e:
            problems.append(f"{milestone.id}: {e}")
    return problems


def task_text_problems(store: Store, key: str) -> list[str]:
    """Every milestone's task text reads whole: no hole a reader would see (a dangling "with instead of",
    leftover markup, a cut sentence) and no housekeeping in its title or headings, as measured when the
    plan was written (against the release notes it was rendered from)."""
    try:
        plan = store.load_plan(key)
    except ArtifactError as e:
        return [str(e)]
    problems = []
    for milestone in plan.milestones:
        problems += [f"{milestone.id}: {problem}" for problem in milestone.quality.problems]
        problems += [
            f"{milestone.id}: housekeeping in the text: {words!r}" for words in milestone.quality.housekeeping_in_text
        ]
    return problems


def trajectory_problems(milestone_dir: Path, rules: Rules) -> list[str]:
    """A recorded milestone run: its event log reads back against the schema with no gap, it has a
    summary, and a PASS was graded without crediting any edit to a test file."""
    files = RunFiles(Path(milestone_dir))
    problems = []
    try:
        events = Recorder.open(files.dir, problems.append, repair=False).events()
    except ArtifactError as e:
        return [str(e)]
    if not files.trajectory.exists() or not events:
        problems.append(f"{files.trajectory}: no events")
    try:
        summary = MilestoneSummary.model_validate_json(files.summary.read_bytes())
    except (OSError, ValueError) as e:
        return [*problems, f"{files.summary}: unreadable ({str(e).splitlines()[0]})"]
    if events and summary.turns > len(events):
        problems.append(f"summary counts {summary.turns} turns but the log has {len(events)} events")
    if summary.status != "PASS":
        return problems
    try:
        report = VerifierReport.model_validate_json(files.test_results.read_bytes())
        final = files.final_diff.read_bytes()
    except (OSError, ValueError) as e:
        return [*problems, f"a PASS without its grading record: {str(e).splitlines()[0]}"]
    if not report.passed:
        problems.append("summary says PASS but test_results.json says the submission failed")
    classify = FileClassifier(rules.planning)
    credited = sorted(
        change.path
        for change in split_diff(final)
        if classify.is_test(change.path) and change.path not in report.excluded_files
    )
    if credited:
        problems.append(f"test-file edits were graded as part of the solution: {', '.join(credited)}")
    return problems


def unreviewed_cheating(con: duckdb.DuckDBPyConnection, reviews: list[Review], repo: str, milestone: str) -> list[str]:
    """Every run with a cheating flag in the analytics has a review that discards it for cheating."""
    flags = read_rows(con, CheatingFlagRow, {"repo": repo, "milestone_id": milestone})
    probes = Counter(flag.run_id for flag in flags)
    rejected = {review.run_id for review in reviews if "cheating" in review.discard_reasons}
    return [
        f"run {run_id}: {count} cheating probe(s) but no review rejects it"
        for run_id, count in sorted(probes.items())
        if run_id not in rejected
    ]


def dataset_problems(out: Path, allow_synthetic: bool) -> list[str]:
    """An exported dataset: no synthetic row unless allowed, no id twice in one file."""
    problems = []
    for path in sorted(out.rglob("*.jsonl")):
        ids: Counter = Counter()
        synthetic = 0
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            ids[row.get("instance_id") or row.get("id")] += 1
            synthetic += bool(row.get("synthetic") or (row.get("provenance") or {}).get("synthetic"))
        name = path.relative_to(out)
        if synthetic and not allow_synthetic:
            problems.append(f"{name}: {synthetic} synthetic row(s), and synthetic rows are not allowed")
        twice = sorted(str(row_id) for row_id, count in ids.items() if row_id is not None and count > 1)
        if twice:
            problems.append(f"{name}: duplicate id(s) {', '.join(twice[:5])}")
    return problems
