"""Stage 3 records: what distillation cuts out of trajectories, before any trainer's format.

Conversations are OpenAI-style messages (tool arguments as JSON strings, as recorded); the
exporters convert them per trainer. A `Segment` is a conversation and the index training starts
at: what comes before is context (never trained), what comes after is the lesson.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .common import Model
from .trajectory import Message


class RunProvenance(Model):
    """The milestone run a distilled row was cut from, and the rules it was cut with."""

    repo: str
    run_id: str
    milestone_id: str
    agent: str = ""
    model: str = ""
    harness_version: str = ""
    rules_hash: str = Field(description="Hash of the rules the distillation ran with.")
    synthetic: bool = False
    mode: str = Field("standard", description="The run's `--mode` (rules: harness.modes)")
    harness_profile: str = Field("V0", description="The run's `--harness-profile` (V0-V3)")
    test_visibility: str = Field("visible", description="The run's `--tests`: visible or hidden acceptance tests")
    plan_id: str = Field("", description="The plan whose milestone the run attempted (`MilestonePlan.plan_id`)")
    scaffold: str = Field("harnessforge", description="Whose agent loop and tools the Dev worked in")
    scaffold_version: str = ""
    repo_created_at: str | None = Field(None, description="The repository's creation (GitHub's, else its first commit)")
    base_commit_date: str | None = None
    verify_commit_date: str | None = Field(None, description="When the milestone's solution was committed")
    model_cutoff: str | None = Field(None, description="The Dev model's training-data cutoff (rules)")
    contamination_risk: Literal["high", "medium", "low", "unknown"] = "unknown"


class Segment(Model):
    """SFT rows and stuck slices: `messages[train_from:]` is trained, the rest is context."""

    id: str
    kind: str = Field(
        description="milestone | explore | plan | implement | debug | verify | chain | stuck slice kind(s)"
    )
    messages: list[Message]
    train_from: int = Field(ge=0)
    provenance: RunProvenance
    label: str | None = Field(
        None, description="Stuck slices: resolved_by_self | resolved_after_hint | unresolved; chains: whole | part"
    )
    hint_level: int | None = Field(None, description="Stuck slices resolved after a hint: its level")
    start_seq: int | None = None
    end_seq: int | None = None
    depends_on_hint: bool = Field(False, description="A trained turn shows a hint these messages lack (kept marked).")
    cut: str | None = Field(None, description="Why the row holds less than its source (a slice's turns, a chain's cap)")


class ChainSegment(Segment):
    """A chain row: consecutive passing milestones of one run, each opened by a `[milestone <id>] <task>`
    user message (at `boundaries`); trained from the first Dev turn on. `provenance` is the first
    milestone's run (its `milestone_id` names the span); `runs` are every milestone's, which the
    export gates one by one."""

    milestones: list[str]
    boundaries: list[int] = Field(description="Index in `messages` of each milestone's opening message")
    runs: list[RunProvenance]


class PreferencePair(Model):
    """A DPO pair cut at the divergence turn: shared `prompt`, one assistant message each side."""

    id: str
    pair_type: Literal["pre_vs_post_hint", "fail_vs_pass", "low_vs_high_hint"]
    prompt: list[Message]
    chosen: list[Message]
    rejected: list[Message]
    divergence_turn: int
    hint_in_prompt: bool = False
    depends_on_hint: bool = Field(
        False, description="The chosen turn shows the removed hint (its words, or a reference to it)."
    )
    evidence: dict[str, Any] = Field(default_factory=dict)
    provenance: RunProvenance
    rejected_provenance: RunProvenance


class KTORow(Model):
    """An unpaired turn: `label` true for a turn that raised passing tests, false for a loop turn."""

    id: str
    prompt: list[Message]
    completion: list[Message]
    label: bool
    reason: str
    provenance: RunProvenance


class Review(Model):
    """The Reviewer's grade of one milestone run."""

    repo: str
    run_id: str
    milestone_id: str
    status: str
    difficulty: int = Field(ge=1, le=5)
    max_hint_level: int = Field(0, ge=0, le=4)
    rl_value: Literal["high", "medium", "low", "reject"]
    discard_reasons: list[str] = []
    why: str
    trajectory_quality: Literal["good", "fair", "poor"] = "fair"
    quality_why: str = Field("", description="Exploration, direction changes and waste, in numbers")
    reviewer: str = "rules"
    judge_cost_usd: float | None = Field(
        None, exclude_if=lambda value: value is None, description="What the LLM judge's call cost (USD), if one ran"
    )
    synthetic: bool = False
    rules_hash: str
    mode: str = "standard"  # the run's `--mode`, `--harness-profile` and `--tests`, carried to every row made from it
    harness_profile: str = "V0"
    test_visibility: str = "visible"
    plan_id: str = ""


class CardHint(Model):
    level: int = Field(ge=0, le=4)
    name: str
    content: str
    solved_runs: int = Field(0, description="Passing runs whose highest hint was this level.")


class KeyMoment(Model):
    """A turn of the reference run worth reading first: stuck, a hint, a change of direction, progress."""

    turn: int
    kind: Literal["stuck", "hint", "direction_change", "tests_improved", "submitted", "passed"]
    detail: str


class HintLogEntry(Model):
    """One hint the reference run received, and what followed it."""

    turn: int
    level: int | None
    rule: str | None
    text: str
    direction_change: bool
    tests_improved: bool


class CardSolution(Model):
    """How the reference run solved the task (seed 001's solution metadata)."""

    run_id: str
    model: str | None
    turns: int
    edit_attempts: int
    test_runs: int
    hints_received: list[int] = Field(default_factory=list, description="Hint levels, in the order shown")
    key_moments: list[KeyMoment] = Field(default_factory=list)
    hint_log: list[HintLogEntry] = Field(default_factory=list)
    diff: str = Field("", description="The reference run's final diff (its own solution, not the ground truth)")


class CardVerification(Model):
    """The reference run's grading: totals, regressions, and how its files compare with the ground truth."""

    acceptance_passed: int
    acceptance_failed: int
    fail_to_pass: int
    pass_to_pass: int
    regressions: int
    regression_tests: list[str] = Field(default_factory=list)
    suite_checked: int = Field(
        0,
        description="Tests of the whole suite its solution was checked on for regressions, beyond PASS_TO_PASS (0: "
        "none; fewer than `suite_tests`: a sample by a hash of the test id, `environments.regression_suite_max_tests`)",
    )
    suite_tests: int = Field(0, description="Tests passing at base and verify: the suite PASS_TO_PASS samples")
    same_core_files: bool = Field(description="It changed every source file the ground truth changes")
    missing_core_files: list[str] = Field(default_factory=list)
    additional_files: list[str] = Field(default_factory=list, description="Files it changed beyond the ground truth")


class TaskCard(Model):
    """A verified task: everything needed to rebuild its environment, pose it and grade it."""

    task_id: str
    repo: str
    milestone_id: str
    title: str
    statement: str = Field(description="The PM-style task statement (the `plan --pm` rewrite when there is one).")
    base_commit: str
    verify_commit: str
    image: str = Field(description="The environment image tag the milestone was validated in.")
    dockerfile: str = Field(description="Rebuilds that environment from the base image, the recipe and the repo.")
    dependency_files: dict[str, str] = Field(default_factory=dict, description="deps/ beside the Dockerfile.")
    test_cmd: str = Field(description="Runs the FAIL_TO_PASS and PASS_TO_PASS tests; exit 0 iff all pass.")
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    reference_run: str | None = Field(
        None, description="run_id of the easiest accepted passing run (None on older cards)."
    )
    hint_ladder: list[CardHint]
    difficulty: int | None = Field(None, description="The reference run's (the run whose solution the card carries)")
    difficulty_by_run: dict[str, int] = Field(
        default_factory=dict,
        description="The spread: every reviewed run of the milestone (failed ones too), run_id -> difficulty",
    )
    rl_value: str | None = None
    tags: list[str] = []
    provenance: dict[str, Any] = Field(default_factory=dict)
    synthetic_reference: bool = False
    solution: CardSolution | None = Field(None, description="The reference run's solution (None on older cards)")
    verification: CardVerification | None = Field(None, description="The reference run's verification report")
