"""Every threshold in one validated, hashed object.

The hash is recorded in each artifact's provenance (and is the Dagster `code_version` of the
distillation assets), so a changed rule is visible wherever its outputs are.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, computed_field, field_validator, model_validator

from ..errors import ConfigError
from ..models.common import Model, first_error
from ..models.plan import Granularity
from .context import ContextRules, Sampling, SamplingRules, Window
from .distill import (
    ChainRules,
    ContaminationRules,
    DiscardReason,
    DistillRules,
    GatedDataset,
    HintLevelPairRules,
    PocRules,
    ReviewerRules,
    SliceTurns,
)
from .environments import BootstrapRules, CollateralTests, EnvRules
from .exports import ExportRules, HeldoutRules, SwebenchRules
from .harness import (
    HarnessProfileRules,
    HarnessRules,
    Ladder,
    MemoryRules,
    MentorRules,
    ModeRules,
    Seed000Ladder,
    TestFileEdits,
)
from .patterns import compiles

__all__ = [  # the sections that live in their own modules, importable from here like the rest
    "HarnessProfileRules",
    "HarnessRules",
    "Ladder",
    "MemoryRules",
    "MentorRules",
    "ModeRules",
    "Seed000Ladder",
    "TestFileEdits",
    "ContextRules",
    "Sampling",
    "SamplingRules",
    "Window",
    "BootstrapRules",
    "CollateralTests",
    "EnvRules",
    "ChainRules",
    "ContaminationRules",
    "DiscardReason",
    "DistillRules",
    "ExportRules",
    "GatedDataset",
    "HeldoutRules",
    "HintLevelPairRules",
    "PocRules",
    "ReviewerRules",
    "SliceTurns",
    "SwebenchRules",
]

DEFAULT_RULES = resources.files("harnessforge") / "config" / "rules.yaml"


class CandidateSearch(Model):
    """How `screen --search` asks GitHub: newer, less-starred repositories are less likely to be in a
    model's training data (seed 000 §8.5)."""

    sort: Literal["stars", "updated"] = Field(description="GitHub's order: most stars, or most recently pushed")
    created_within_days: int | None = Field(None, gt=0, description="Only repositories created in this window")
    max_stars: int | None = Field(None, ge=0, description="Only repositories with at most this many stars")


class ScreeningRules(Model):
    min_tests: int = Field(ge=0)
    min_recent_commits: int = Field(ge=0)
    recent_window_days: int = Field(gt=0)
    min_loc: int = Field(ge=0)
    max_loc: int = Field(gt=0)
    min_release_tags: int = Field(ge=0)
    languages: list[str]
    collect_timeout_s: int = Field(gt=0)
    gate: Literal["block", "warn"] = Field(description="What a failed screening does to planning in Dagster")
    search: CandidateSearch


Kind = Literal["feature", "performance", "bug fix", "refactor", "housekeeping"]


class KindRules(Model):
    """What kind of work a change is, read from (in order of trust) its changelog section, its GitHub
    labels, its conventional-commit prefix and its words. Regexes are case-insensitive."""

    sections: dict[Kind, list[str]] = Field(description="Whole words of a section name per kind.")
    ambiguous_sections: list[str] = Field(
        description="Sections (Changed, Removed) that are a feature unless the text says a fix, refactor or speed-up."
    )
    neutral_sections: list[str] = Field(description="Sections (Other, What's Changed) where the text decides.")
    labels: dict[Kind, list[str]]
    prefixes: dict[str, Kind]
    words: dict[Kind, list[str]] = Field(description="The opening words, tried in order.")
    says: dict[Kind, list[str]] = Field(description="Words anywhere, when the opening words say nothing.")
    housekeeping_text: list[str] = Field(
        description="Entries or titles that are housekeeping whatever their section: support windows, minimums, docs."
    )

    @model_validator(mode="after")
    def _patterns_compile(self) -> "KindRules":
        for table in (self.sections, self.labels, self.words, self.says):
            for kind, patterns in table.items():
                compiles(patterns, f"kinds pattern for {kind}")
        for name in ("ambiguous_sections", "neutral_sections", "housekeeping_text"):
            compiles(getattr(self, name), f"kinds.{name} pattern")
        return self


class ExpectedTurns(Model):
    """An estimate of the Dev turns a milestone takes, from the work its source diff holds (housekeeping and
    tests aside): calibrated so the offline oracle's turns on the example repository are within a factor of 2."""

    base: float = Field(ge=0)
    per_source_file: float = Field(ge=0)
    per_hunk: float = Field(ge=0)
    per_100_added_lines: float = Field(ge=0)
    target: tuple[int, int]
    far_factor: float = Field(gt=1, description="Outside target/far_factor .. target*far_factor is reported.")


class PerPrRules(Model):
    """The size rules of `granularity: pr`: a PR (or a commit of work without one) under the minimum joins
    the next one's milestone (flagged `several_prs`); one over the maximum stays whole, flagged `oversized`."""

    min_source_files: int = Field(ge=0)
    min_lines: int = Field(ge=0)
    require_tests: bool
    max_files: int = Field(gt=0)
    max_lines: int = Field(gt=0)
    expected_turns_target: tuple[int, int] = Field(description="The Dev turns a one-PR milestone should take.")

    @model_validator(mode="after")
    def _bounds_are_ordered(self) -> "PerPrRules":
        if self.min_lines > self.max_lines:
            raise ValueError(f"per_pr.min_lines ({self.min_lines}) exceeds per_pr.max_lines ({self.max_lines})")
        if self.min_source_files > self.max_files:
            raise ValueError(
                f"per_pr.min_source_files ({self.min_source_files}) exceeds per_pr.max_files ({self.max_files})"
            )
        return self


class HousekeepingRules(Model):
    """What makes a commit housekeeping by its diff, whatever its wording (it never speaks in a task)."""

    files: dict[str, list[str]] = Field(
        description="Housekeeping type -> globs: a commit whose non-test files all match is that housekeeping."
    )
    with_code: list[str] = Field(
        [],
        description="Types whose files are part of the work when they change with code (a dependency, an entry "
        "point): alone they are housekeeping, with code they count as source.",
    )
    formatting: bool = Field(True, description="Source whose code is unchanged (same AST, else same text) is too.")
    version_lines: list[str] = Field([], description="Regexes of source lines that only set a version number.")

    @model_validator(mode="after")
    def _patterns_compile(self) -> "HousekeepingRules":
        compiles(self.version_lines, "housekeeping.version_lines pattern")
        return self

    @property
    def noise_globs(self) -> list[str]:
        """The files that are never part of the work (all types but `with_code`)."""
        return [pattern for kind, patterns in self.files.items() if kind not in self.with_code for pattern in patterns]


class PlacementRules(Model):
    """How a release-note entry that cites nothing is tied to the work that implements it."""

    min_identifier_score: float = Field(
        gt=0, description="The least sum of log(1 + units/units naming it) over the names an entry and a diff share."
    )
    margin: float = Field(ge=1, description="The best unit's score over the second's, at least.")
    min_topic_overlap: float = Field(gt=0, le=1, description="Shared title words / all words (Jaccard), at least.")
    nearest_per_writer: int = Field(
        default=1,
        ge=0,
        description="Entries one commit wrote down that may go to the work nearest before it, for want of anything "
        "better: a release commit that writes down a whole release's entries says nothing of which work is whose.",
    )


class PlanningRules(Model):
    granularity: Granularity = Field(
        "feature", description="feature: a milestone per feature; pr: one per PR (`plan --granularity` overrides)."
    )
    per_pr: PerPrRules
    min_source_files: int = Field(ge=0)
    min_lines: int = Field(ge=0)
    max_files: int = Field(gt=0)
    max_lines: int = Field(gt=0)
    require_tests: bool
    related_features_only: bool = Field(
        True,
        description="Below the minimum size a milestone takes in the next feature only when their code shares a "
        "definition (a function, class or method; a whole file no reader knows) (False: any next feature): one "
        "capability per milestone, or several sharing code.",
    )
    cut_at_releases: bool
    skip_prereleases: bool
    test_patterns: list[str]
    housekeeping: HousekeepingRules
    placement: PlacementRules
    noise_subjects: list[str]
    backport_subjects: list[str] = Field(description="Mainline merges of a maintenance branch (regex).")
    kinds: KindRules
    default_range_min_commits: int = Field(ge=1)
    described_seed_share: float = Field(
        ge=0, le=1, description="Share of the work (lines) release notes must describe for only them to seed."
    )
    tested_work_opens: bool = Field(
        True,
        description="Work the release notes leave out that changes its own tests (no refactor) opens a milestone "
        "too: a task of its own, not a rider whose tests grade a grab-bag.",
    )
    expected_turns: ExpectedTurns
    assertion_examples: int = Field(
        default=6, ge=0, description="Assertions each test criterion quotes from the lines the diff adds to it."
    )
    task_examples: int = Field(
        default=24,
        ge=0,
        description="Assertions a task's criteria quote in all: with many tests, each quotes fewer (never under 2).",
    )
    new_value_examples: int = Field(
        default=8,
        ge=0,
        description="Further checks a test criterion quotes when they expect a value only the new source holds "
        "(an exact message, a new locale's words): with the tests hidden, the Dev could not guess it.",
    )
    base_failures: int = Field(
        default=3,
        ge=0,
        description="Messages of acceptance tests failing at the base commit a task shows (what goes wrong now; "
        "0: none); one saying only that a name is missing is left out.",
    )
    documentation_lines: int = Field(
        default=30,
        ge=0,
        description="Lines of the user documentation a milestone's change adds (README, docs pages) that its task "
        "quotes: the paragraphs naming what its tests use, whole (0: none).",
    )
    min_statement_words: int = Field(
        default=3,
        ge=0,
        description="A task whose statement (its What to build, quoted documentation and interface lines) has fewer "
        "words is held back from the Dev: a title alone cannot say what its tests check (0: never).",
    )
    behaviour_keeping_kinds: list[Kind] = Field(
        default=["performance", "refactor"],
        description="A task whose asked parts are all of these kinds is held back from the Dev: its text promises the "
        "behaviour stays, yet its tests fail before and pass after, so they check a change no text states ([]: never).",
    )
    behaviour_change_words: str = Field(
        default=r"\b(?:behaviou?r|revert\w*|now|no longer|instead|returns?|panics?|errors?|raises?|throws?|fix\w*)\b",
        description="Words (a regex, case-insensitive) by which a part of a behaviour-keeping kind says it changes "
        "behaviour too (lo's 'Improve SamplesBy performance and revert non-panic behavior'): it is not held back.",
    )
    max_task_releases: int = Field(
        default=2,
        ge=0,
        description="A task whose asked parts shipped in more releases than this is held back: a feature revised "
        "over several releases (dotenv's quiet default, true then false) is no one statement (0: never).",
    )
    max_unstated_values: int = Field(
        default=5,
        ge=0,
        description="A task whose tests expect more messages only the new code holds than this, none of them in its "
        "text, is held back: the Dev cannot write 133 Thai translations it never read (0: never).",
    )
    max_asked_parts: int = Field(
        default=2,
        ge=0,
        description="A task asking for more features than this is held back from the Dev: a grab-bag (0: never).",
    )
    hold_back_ungraded: bool = Field(
        default=True,
        description="A validated task none of whose asked work a graded test covers (`weak_acceptance`) is held back: "
        "its tests check what its text does not ask (body-parser's brotli check asked, its urlencoded fix graded).",
    )
    hint_l4_max_chars: int = Field(gt=0)
    hint_l4_max_hunks: int = Field(gt=0)
    difficulty_lines: list[int] = Field(min_length=4, max_length=4)

    @model_validator(mode="after")
    def _bounds_are_ordered(self) -> "PlanningRules":
        if self.min_lines > self.max_lines:
            raise ValueError(f"min_lines ({self.min_lines}) exceeds max_lines ({self.max_lines})")
        if self.min_source_files > self.max_files:
            raise ValueError(f"min_source_files ({self.min_source_files}) exceeds max_files ({self.max_files})")
        if self.difficulty_lines != sorted(self.difficulty_lines):
            raise ValueError("difficulty_lines must be increasing")
        compiles(self.noise_subjects, "noise_subjects pattern")
        compiles(self.backport_subjects, "backport_subjects pattern")
        return self


class AnalyticsRules(Model):
    """Thresholds of the SQL models; each is a `{{ var('name') }}` there."""

    stuck_same_error_cycles: int = Field(ge=2)
    repeat_action_observation: int = Field(ge=2)
    repeat_action_error: int = Field(ge=2)
    alternating_steps: int = Field(ge=4)
    turns_without_tool_calls: int = Field(3, ge=1)
    hint_response_turns: int = Field(ge=1)
    efficient_max_turns: int = Field(ge=1)
    memorisation_ngram: int = Field(ge=1)
    memorisation_overlap: float = Field(gt=0, le=1)
    probe_locate_turns: int = Field(3, ge=1)
    memorisation_warning_rate: float = Field(0.5, ge=0, le=1)
    cheating_patterns: dict[str, str]

    @computed_field
    @property
    def cheating_any(self) -> str:
        """All cheating patterns as one regex: a cheap first pass before naming which one matched."""
        return "|".join(f"(?:{pattern})" for pattern in self.cheating_patterns.values())

    @field_validator("cheating_patterns")
    @classmethod
    def _patterns_compile(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"cheating pattern {name!r} is not a regular expression: {e}") from None
        return value


class Rules(Model):
    screening: ScreeningRules
    planning: PlanningRules
    environments: EnvRules
    harness: HarnessRules
    analytics: AnalyticsRules
    distill: DistillRules
    export: ExportRules

    @cached_property
    def hash(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def section_hash(self, *sections: str) -> str:
        """A hash of the named sections only: what a stage reads, so a change elsewhere leaves it alone."""
        parts = {name: getattr(self, name).model_dump(mode="json") for name in sections}
        canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def read_yaml(path: Path | Any, what: str = "rules file") -> dict[str, Any]:
    """A YAML mapping from a file the user wrote; any problem is one line naming the file (and where in it)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except OSError as e:
        raise ConfigError(f"{what} {path} cannot be read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{what} {path} is not valid YAML: {getattr(e, 'problem', None) or e}{where}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path} must be a mapping (`key: value` lines), got {type(data).__name__}")
    return data


def load_rules(path: str | Path | None = None) -> Rules:
    """The defaults, overridden by `path` (or $HARNESSFORGE_RULES) when given."""
    data = read_yaml(DEFAULT_RULES)
    path = path or os.environ.get("HARNESSFORGE_RULES")
    if path:
        data = _deep_merge(data, read_yaml(Path(path)))
    try:
        return Rules.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"rules file {path or DEFAULT_RULES}: {first_error(e)}") from None
