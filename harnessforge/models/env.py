"""Environments, sandboxes and test validation: what `env build`, `validate` and grading write."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from .common import Model, Provenance, utcnow

Language = Literal["python", "typescript", "go", "rust"]
Runner = Literal["pytest", "go", "cargo", "jest", "vitest", "ava", "node", "tape", "tap", "mocha"]
TestStatus = Literal["passed", "failed", "error", "skipped", "xfailed", "missing"]
MilestoneStatus = Literal["valid", "no_fail_to_pass", "does_not_reproduce", "env_error"]
# Why an environment or a test run failed, so a data engineer can count causes instead of reading logs.
EnvErrorReason = Literal[
    "install_failed",
    "toolchain_unavailable",
    "checkout_failed",
    "patch_failed",
    "collection_error",
    "no_tests_ran",
    "timeout",
    "oom",
    "sandbox_error",
    "package_shadowed",
]


class Recipe(Model):
    """How to build a repo's environment and run its tests; every field may be overridden in config."""

    language: Language
    runner: Runner
    base_image: str = Field(description="Image the env layer starts from (OS + toolchain).")
    install: list[str] = Field([], description="Shell commands run once at image build, network on.")
    prepare: list[str] = Field([], description="Shell commands run per checkout, network off.")
    test_cmd: str = Field(
        "",
        description="Override of the runner's command: `{tests}` becomes the test ids, `{out}` the report "
        "directory, `{plugins}` the plugin directory. The runner's structured report must still be written.",
    )
    env: dict[str, str] = Field({}, description="Variables set for install, prepare and tests.")
    requirements: list[str] = Field(
        [],
        description="Python: the PEP 508 requirements installed (sorted); never the project itself, which is "
        "installed from each checkout (its extras are expanded instead).",
    )
    packages: list[str] = Field(
        [], description="Python: top-level import names of the project; validation proves they load from the workspace."
    )
    skipped_requirements: list[str] = Field(
        [],
        description="Python: dependency lines not installed, as `where: line (why)`: they do not parse, or only a "
        "source other than the package index could provide them (VCS, URLs, other local paths).",
    )
    inputs: dict[str, str] = Field({}, description="Other languages: manifest/lockfile path -> content digest.")


class ImageRecord(Model):
    """`images/<repo_key>.json`: the image built for a repo's dependency epoch."""

    repo_key: str
    tag: str
    env_hash: str
    image_id: str
    base_image: str
    commit: str = Field(description="Commit whose dependency files defined the epoch.")
    recipe: Recipe
    build_seconds: float
    log_path: str
    provenance: Provenance = Field(default_factory=Provenance)


class RepoImages(Model):
    """`images/<repo_key>.json`: every dependency epoch's image, and which milestone runs in which."""

    repo_key: str
    images: list[ImageRecord] = []
    milestone_images: dict[str, str] = Field({}, description="Milestone id -> env hash of its image.")
    failures: dict[str, str] = Field({}, description="Milestone id -> why its image could not be built.")

    def for_milestone(self, mid: str) -> ImageRecord | None:
        image = self.milestone_images.get(mid)
        return next((i for i in self.images if i.env_hash == image), None)


class ExecResult(Model):
    """One command run in a sandbox."""

    exit_code: int
    stdout: str
    stderr: str = ""
    duration_s: float
    timed_out: bool = False
    oom_killed: bool = False


class TestRun(Model):
    """Structured results of one test command: per-test status plus proof that the suite ran."""

    __test__ = False  # not a pytest test class, despite its name

    runner: Runner
    statuses: dict[str, TestStatus] = {}
    messages: dict[str, str] = Field({}, description="What each failing test said, when the runner tells (pytest).")
    collect_errors: list[str] = Field([], description="Files/packages/binaries that failed to load or build.")
    suite_ran: bool = Field(False, description="The runner's own report says a session started and finished.")
    exit_code: int = 0
    timed_out: bool = False
    oom_killed: bool = False
    duration_s: float = 0.0
    log_tail: str = ""

    def status(self, test_id: str) -> TestStatus:
        return self.statuses.get(test_id, "missing")


class Validation(Model):
    """`milestones/<id>/validation.json`: the proof that a milestone's tests go FAIL -> PASS."""

    milestone_id: str
    status: MilestoneStatus
    reason: EnvErrorReason | None = None
    detail: str = ""
    image: str = ""
    repeats: int
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    flaky: list[str] = []
    not_reproduced: list[str] = Field([], description="Candidate tests that already pass at base.")
    broken: list[str] = Field([], description="Tests that pass at base but fail at verify.")
    suite_pass_to_pass: list[str] = Field(
        [],
        description="Every test passing in every base and verify run (PASS_TO_PASS is a sample of it): what a "
        "passing submission is checked on for regressions",
    )
    candidates: list[str] = Field(
        [],
        description="The runner's test ids in the milestone's changed test files, and the tests other files "
        "inherit from a changed mixin: FAIL_TO_PASS is taken from these.",
    )
    collateral: list[str] = Field(
        [],
        description="Tests that go FAIL -> PASS but prove nothing of the milestone: it did not change them, and "
        "at base they fail only because their file does not load or on a private name it adds. Out of grading "
        "(`rejected` says `collateral`) unless nothing else is FAIL_TO_PASS.",
    )
    untested_headlines: list[str] = Field(
        [],
        description="Features the milestone's title names that no graded, non-collateral FAIL_TO_PASS test "
        "covers (none lives in a test file their commits changed). When another headline is tested, these move into "
        'the title\'s "+N more" (flag `untested_features`); when none is, the milestone is flagged `weak_acceptance`.',
    )
    ungraded_parts: list[int] = Field(
        [],
        description="The milestone's task parts (positions in `Milestone.parts`) that no graded FAIL_TO_PASS test "
        "covers: the task names them as context, not as requirements.",
    )
    rejected: dict[str, str] = Field(
        {},
        description="Candidate -> why it is not FAIL_TO_PASS, as `kind: detail` (kind: excluded, flaky, "
        "not_reproduced, skipped, not_passing_at_verify, not_failing_at_base, collateral).",
    )
    defined_in: dict[str, str] = Field(
        {}, description="Candidates defined in another file than their own (a mixin's): test id -> `file:line`."
    )
    base_runs: list[TestRun] = []
    verify_runs: list[TestRun] = []
    reference_runs: list[TestRun] = Field(
        [],
        description="A base run without the test patch, made only when tests outside the changed files did not load "
        "at base (a Go package whose new test does not compile): PASS_TO_PASS of those tests comes from it.",
    )
    validated_at: datetime = Field(default_factory=utcnow)
    provenance: Provenance = Field(default_factory=Provenance)


class Grade(Model):
    """A candidate solution graded in a fresh sandbox against a validated milestone."""

    milestone_id: str
    resolved: bool
    fail_to_pass: dict[str, TestStatus]
    pass_to_pass: dict[str, TestStatus]
    excluded_files: list[str] = Field([], description="Candidate changes dropped: tests and test configuration.")
    reason: EnvErrorReason | None = None
    run: TestRun | None = None
