"""Pydantic models of every artifact HarnessForge writes, and their JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path

from .common import Model, Provenance
from .env import ExecResult, Grade, ImageRecord, Recipe, RepoImages, TestRun, Validation
from .history import ChangelogEntry, FileChange, PullRef, Release
from .plan import (
    GRANULARITIES,
    HINT_LEVEL_NAMES,
    AcceptanceCriterion,
    ExcludedTest,
    Granularity,
    Headline,
    Hint,
    HintLadder,
    InterfaceItem,
    MergedPart,
    Milestone,
    MilestonePlan,
    PlanReport,
    TaskQuality,
    TestVisibility,
    milestone_id,
)
from .repo import Criterion, GitHubMeta, RepoSpec, ScreeningReport
from .run import MilestoneSummary, RunMeta
from .task import TaskPart
from .trajectory import Event, MentorDecision, VerifierReport

# Every model a user may find on disk, by the name its schema file gets.
ARTIFACTS: dict[str, type[Model]] = {
    m.__name__: m
    for m in (
        RepoSpec,
        ScreeningReport,
        Release,
        ChangelogEntry,
        PullRef,
        Milestone,
        HintLadder,
        MilestonePlan,
        Recipe,
        RepoImages,
        TestRun,
        Validation,
        Grade,
        Event,
        MentorDecision,
        VerifierReport,
        MilestoneSummary,
        RunMeta,
    )
}


def export_schemas(out_dir: Path) -> list[Path]:
    """Write `<Model>.schema.json` for every artifact; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in ARTIFACTS.items():
        path = out_dir / f"{name}.schema.json"
        path.write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written


__all__ = [
    "ARTIFACTS",
    "AcceptanceCriterion",
    "ChangelogEntry",
    "Criterion",
    "ExcludedTest",
    "Headline",
    "TaskPart",
    "MergedPart",
    "ExecResult",
    "Grade",
    "GRANULARITIES",
    "Granularity",
    "ImageRecord",
    "Recipe",
    "RepoImages",
    "TestRun",
    "Validation",
    "FileChange",
    "GitHubMeta",
    "HINT_LEVEL_NAMES",
    "Hint",
    "HintLadder",
    "InterfaceItem",
    "Milestone",
    "MilestonePlan",
    "PlanReport",
    "Model",
    "Provenance",
    "PullRef",
    "Release",
    "RepoSpec",
    "ScreeningReport",
    "TaskQuality",
    "TestVisibility",
    "export_schemas",
    "milestone_id",
]
