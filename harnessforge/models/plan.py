"""The product of planning: a contiguous chain of milestones, each with its hint ladder."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .common import Model, Provenance
from .history import ChangelogEntry, CommitRole, PullRef, Release
from .repo import RepoSpec
from .task import Composed, TaskPart

HINT_LEVEL_NAMES = ("issue_titles", "issue_bodies", "pr_descriptions", "files_touched", "diff_hunks")


class Hint(Model):
    level: int = Field(ge=0, le=4)
    name: Literal["issue_titles", "issue_bodies", "pr_descriptions", "files_touched", "diff_hunks"]
    content: str = Field("", description="Empty only when `empty_reason` says why.")
    sources: list[str] = Field([], description="Where the text came from: commits, PRs, issues.")
    empty_reason: str | None = Field(
        None, description="Why this level has no material of its own; the Mentor skips it to the next level."
    )

    @model_validator(mode="after")
    def _content_or_reason(self) -> "Hint":
        if not self.content.strip() and not self.empty_reason:
            raise ValueError(f"hint level {self.level} has no content and no empty_reason")
        return self

    @property
    def empty(self) -> bool:
        return self.empty_reason is not None


class HintLadder(Model):
    """L0 issue titles -> L1 issue bodies -> L2 PR descriptions -> L3 files -> L4 key hunks."""

    milestone_id: str
    levels: list[Hint]

    @field_validator("levels")
    @classmethod
    def _all_five_in_order(cls, levels: list[Hint]) -> list[Hint]:
        got = [(hint.level, hint.name) for hint in levels]
        want = list(enumerate(HINT_LEVEL_NAMES))
        if got != want:
            raise ValueError(f"hint ladder must have levels {want}, got {got}")
        return levels


Granularity = Literal["feature", "pr"]  # a milestone per feature (several PRs), or one per PR
GRANULARITIES: tuple[str, ...] = ("feature", "pr")

MilestoneType = Literal["feature", "performance", "bug fix", "refactor", "housekeeping"]
TitleSource = Literal["changelog", "issue", "pull request", "commit", "none"]


class ExcludedTest(Model):
    test: str
    reason: str


class Headline(Model):
    """A feature the milestone's title names (at most two; the rest are its "+N more"), with what can test it:
    the test files its own commits changed, and the test functions and classes they add or change in them."""

    text: str
    commits: list[str]
    test_files: list[str]
    tests: list[str] = []  # names (`test_parse`, `ParseTests`, `TestParse`); empty: read by file


class MergedPart(Model):
    """A milestone merged into the next one because validation found no FAIL_TO_PASS test for it: its work
    became part of the next task (the chain has no task that nothing grades)."""

    id: str
    title: str
    status: str = Field(description="Its validation verdict when it was merged (e.g. does_not_reproduce).")
    commits: list[str]


InterfaceKind = Literal[
    "module",
    "function",
    "class",
    "exception",
    "method",
    "parameter",
    "constant",
    "attribute",
    "option",
    "key",
    "message",
    "signature",
    "default",
]
TestVisibility = Literal["visible", "hidden"]


class InterfaceItem(Model):
    """A name the acceptance tests use that does not exist at the milestone's base: the Dev must provide it."""

    name: str = Field(
        description="As the tests reach it: `pkg.module.Class.method`, `Class(param)`, `--flag`, a message."
    )
    kind: InterfaceKind
    signature: str = Field("", description="Its declaration at the verify commit (`def f(a, b=1) -> int`).")
    doc: str = Field("", description="The first line of its docstring or comment.")
    before: str = Field("", description="A changed signature's declaration at the base commit.")
    module: str = Field(
        "",
        exclude_if=lambda value: not value,
        description="The file the tests require it from by path (a JavaScript module's private export), else empty.",
    )

    @property
    def private(self) -> bool:
        """A name the package keeps to itself (`_name`; Go's unexported `root`): listed after the public ones."""
        go = self.signature.startswith(("func ", "type ")) or self.signature.endswith(" struct")
        return self.short.startswith("_") or (go and self.short[:1].islower())

    @property
    def short(self) -> str:
        """What a text names it by: `method` of `pkg.Class.method`, `capture` of `CliRunner(capture)`."""
        if self.kind == "parameter":
            return self.name.rsplit("(", 1)[-1].rstrip(")")
        if self.kind in ("option", "key", "message"):
            return self.name
        return self.name.rsplit(".", 1)[-1]

    def line(self) -> str:
        """One line of the task's Interface section."""
        label = {
            "parameter": "new parameter",
            "option": "option",
            "key": "key",
            "message": "exact message",
            "signature": "changed signature of",
            "default": "new limit or default",
        }
        text = f"- {label.get(self.kind, self.kind)} `{self.name}`"
        if self.signature and self.kind not in ("option", "key", "message"):
            text += f": `{self.signature}`" + (f" (was `{self.before}`)" if self.before else "")
        text += f" (in `{self.module}`, which the tests require)" if self.module else ""
        return text + (f" — {self.doc}" if self.doc else "")


class AcceptanceCriterion(Model):
    """One behaviour the milestone must show: a release-note entry's promise, or what a test checks."""

    text: str
    source: Literal["release notes", "test"]
    tests: list[str] = Field([], description="The acceptance tests that check it (test criteria).")


class TaskQuality(Model):
    """How whole and complete a milestone's task text is, measured when it is written (plan, validate)."""

    problems: list[str] = Field(
        [],
        description="Holes a reader would see in the task as the Dev reads it: dangling words, leftover markup, "
        "credits without names, cut text, a heading with nothing under it, an example missing after its colon.",
    )
    hint_problems: list[str] = Field([], description="The same in its first hint (L0), which the Dev reads with it.")
    words_lost: int = Field(0, description="Words of the release notes and issues the text lacks (references aside).")
    withheld: list[str] = Field([], description="Source paths and solution code left out of the text.")
    housekeeping_in_text: list[str] = Field([], description="Titles and headings that read as housekeeping.")
    interface_names: int = Field(0, description="New names the acceptance tests use.")
    interface_named: int = Field(0, description="Of those, names the task text names.")
    warnings: list[str] = Field([], description="What could not be read: unbalanced markup, a diff, a language.")


class Milestone(Model):
    id: str = Field(pattern=r"^m\d{2,}$")
    ordinal: int = Field(ge=1)
    title: str
    description: str = Field(description="PM-style: behaviour and motivation, no paths, no code.")
    pm_description: str | None = Field(
        None, description="Set by `plan --pm`: a model's rewrite in a PM's voice with acceptance criteria."
    )
    pm_model: str | None = Field(None, description="The model that wrote `pm_description`.")
    pm_cost_usd: float | None = Field(
        None, exclude_if=lambda value: value is None, description="What the accepted PM rewrite's call cost (USD)."
    )
    base_commit: str
    verify_commit: str
    release: str | None = Field(None, description="Tag of the release this milestone ships in.")
    source_prs: list[int]
    issues: list[int]
    commits: list[str]
    changed_files: list[str]
    test_files: list[str]
    lines_added: int
    lines_deleted: int
    difficulty: int = Field(ge=1, le=5)
    type: MilestoneType | None = Field(
        None, description="The work its seeds are (changelog section, label, commit prefix, first words)."
    )
    title_source: TitleSource | None = Field(None, description="What the title was taken from.")
    expected_turns: int | None = Field(
        None, description="An estimate of the Dev turns it takes, from its work: source files, hunks, added lines."
    )
    acceptance_tests: list[str]
    excluded_tests: list[ExcludedTest] = []
    headlines: list[Headline] = Field(
        [],
        description="The title's features; validation keeps only those a graded test covers (`untested_features` "
        "when it drops one), or flags `weak_acceptance` when none is covered.",
    )
    parts: list[TaskPart] = Field(
        [],
        description="Its features as the task presents them, with what can test each; the title and description ask "
        "for the graded ones (`models.task.compose`) and name the others once as context.",
    )
    cohesion: str = Field(
        "", description="Why its parts belong together (one feature, features sharing code), or which share nothing."
    )
    flags: list[str] = Field([], description="e.g. undersized, oversized, no_tests, unrelated_parts")
    interface: list[InterfaceItem] = Field(
        [], description="The names the acceptance tests use that the base lacks (FAIL_TO_PASS once validated)."
    )
    held_back: list[str] = Field(
        [],
        exclude_if=lambda value: not value,
        description="Why the chain does not give it to the Dev as a task though it is valid (empty: it does): its "
        "statement cannot specify what its tests check (`planning.min_statement_words`, `max_asked_parts`). The chain "
        "applies its ground truth and goes on, as for a milestone that is not valid.",
    )
    dependencies: list[str] = Field(
        [],
        exclude_if=lambda value: not value,
        description="The dependencies its change adds, removes or moves (`x` v1 → v2): a test may pass only with them.",
    )
    documentation: list[str] = Field(
        [],
        exclude_if=lambda value: not value,
        description="What the change adds to the user documentation (README, docs pages) about the names its tests "
        "use: the repository's own statement of the behaviour they pin, quoted in the task.",
    )
    acceptance_criteria: list[AcceptanceCriterion] = Field(
        [], description="One line per behaviour: the release notes' promises, then what the acceptance tests check."
    )
    quality: TaskQuality = Field(default_factory=TaskQuality)
    status: Literal["valid", "no_fail_to_pass", "does_not_reproduce", "env_error", "merged"] | None = Field(
        None,
        description="Set by `validate`; None until the milestone's tests have been run; merged: its work is part "
        "of the milestone `merged_into` names (it had no FAIL_TO_PASS test), so it is no task of the chain.",
    )
    merged_into: str | None = Field(None, exclude_if=lambda value: value is None, description="See `status`.")
    merged: list[MergedPart] = Field(
        [], description="The earlier milestones merged into this one (no FAIL_TO_PASS test): their work is in its task."
    )
    fail_to_pass: list[str] = Field([], description="Set by `validate`: fail at base, pass at verify, every run.")
    pass_to_pass: list[str] = Field([], description="Set by `validate`: pass at both ends, every run.")
    ungraded: list[str] = Field(
        [],
        description="Set by `validate`: tests of the changed test files that fail with the reference solution too, "
        "or are flaky: not graded, and the visible task says so (the Dev does not chase them).",
    )
    base_failures: list[str] = Field(
        [],
        exclude_if=lambda value: not value,
        description="Set by `validate`: how acceptance tests fail at the base commit, in the runner's words (a test "
        "id, then its message): what goes wrong now, as a bug report would show it.",
    )

    @property
    def is_task(self) -> bool:
        """A Dev is given it: valid, and not held back."""
        return self.status == "valid" and not self.held_back

    @property
    def brief(self) -> str:
        """The description the Dev reads: the PM rewrite when there is one, else the rule-based text."""
        return self.pm_description or self.description

    def task(self, visibility: TestVisibility = "visible", max_interface: int = 30, max_criteria: int = 25) -> str:
        """The task as the Dev reads it: title, what to build, the interface and the acceptance criteria."""
        parts = [f"# {self.title}", "## What to build", self.brief or self.title]
        if self.documentation:
            lead = "From the project's documentation, as this change extends it."
            parts += ["## Documentation", lead + "\n\n" + "\n".join(self.documentation)]
        names = sorted((item for item in self.interface if item.kind != "default"), key=lambda item: item.private)
        defaults = [item.line() for item in self.interface if item.kind == "default"]
        if names or defaults:
            shown = [item.line() for item in names[:max_interface]]
            rest = [f"`{item.name}`" for item in names[max_interface:]]  # named, if not declared: a cut list hid
            shown += [f"- and, by name only: {', '.join(rest)}"] if rest else []  # the private names tests call
            said = ["The acceptance tests use these names, which do not exist yet or change:\n" + "\n".join(shown)]
            lead = "The change sets these new limits and defaults, which the tests' expectations follow:"
            said = (said if shown else []) + ([lead + "\n" + "\n".join(defaults)] if defaults else [])
            parts += ["## Interface", "\n\n".join(said)]
        if self.dependencies:
            lead = (  # readers took the list for work asked: it is what the sandbox already has
                "Context, not work to do: the repository's change also moved these dependencies, and the sandbox "
                "already has the new versions installed:"
            )
            parts += ["## Dependencies", lead + "\n" + "\n".join(f"- {line}" for line in self.dependencies)]
        if self.base_failures:
            lead = "At the start, acceptance tests fail like this, in the test runner's words."
            shown = "\n\n".join(self.base_failures)
            parts += ["## What happens now", f"{lead}\n\n{shown}"]
        criteria = [f"- {criterion.text}" for criterion in self.acceptance_criteria[:max_criteria]]
        # past `max_criteria`, each test's sentence without its examples, as many again: "... and 16 more behaviours"
        # hid what sqlite-utils' parser tests checked (seventeenth held-out set)
        rest = self.acceptance_criteria[max_criteria : 2 * max_criteria]
        criteria += [f"- {_without_examples(criterion.text)}" for criterion in rest]
        more = len(self.acceptance_criteria) - len(criteria)
        criteria += [f"- ... and {more} more behaviour{'s' * (more > 1)} the tests check" if more > 0 else ""]
        criteria.append("- Everything that worked before keeps working: the rest of the test suite still passes.")
        where = (
            "The acceptance tests are in your workspace: run them, and do not edit them."
            if visibility == "visible"
            else "The acceptance tests are not in your workspace: `submit` runs them and tells you which fail, and why."
        )
        if visibility == "visible" and self.ungraded:
            shown = ", ".join(f"`{test}`" for test in self.ungraded[:10])
            more = f" and {len(self.ungraded) - 10} more" if len(self.ungraded) > 10 else ""
            where += f" These fail with the reference solution too (or are flaky) and are not graded: {shown}{more}."
        parts += ["## Acceptance criteria", "\n".join(line for line in criteria if line) + f"\n\n{where}"]
        return "\n\n".join(parts)

    @property
    def lines_changed(self) -> int:
        return self.lines_added + self.lines_deleted


class PlanReport(Model):
    """How the plan covers the range's release notes, and what shape its chain has."""

    entries_in_range: int = Field(0, description="Changelog entries of the range's releases (and unreleased).")
    entries_citing: int = Field(0, description="Of those, entries that cite a PR or an issue (or own a commit).")
    entries_covered: int = Field(0, description="Of those citing, entries that describe a milestone.")
    entries_placed: int = Field(0, description="Entries tied to a commit of the range (any `placed_by` but unplaced).")
    work_entries: int = Field(0, description="Entries that are not housekeeping: each should reach a task.")
    work_entries_carried: int = Field(0, description="Of those, entries a milestone's task carries.")
    placed_by: dict[str, int] = Field({}, description="Entries per way of placement (reference, identifiers, ...).")
    housekeeping_entries: int = Field(0, description="Entries that are housekeeping: they describe no milestone.")
    backport_entries: int = Field(
        0,
        description="Entries of maintenance releases merged back into the range: fixes the chain's start lacks, "
        "described with the milestone that merges them (never its title).",
    )
    uncovered: list[str] = Field([], description="Citing entries that describe no milestone (the first 20).")
    type_mix: dict[str, int] = Field({}, description="Milestones per type.")
    feature_titled: int = Field(0, description="Milestones titled by a feature (changelog, issue or work PR).")
    size_outliers: list[str] = Field([], description="Milestones whose expected Dev turns are far from the target.")
    merged: list[str] = Field(
        [], description="Milestones merged into the next one because validation found no FAIL_TO_PASS test for them."
    )
    broken_texts: int = Field(0, description="Milestones whose task text has a hole a reader would see.")
    housekeeping_in_text: int = Field(0, description="Milestones whose title or headings read as housekeeping.")
    held_back: int = Field(0, description="Milestones whose task is held back from the Dev (`Milestone.held_back`).")
    words_lost: int = Field(0, description="Release-note and issue words the task texts lack (references aside).")
    interface_names: int = Field(0, description="New names the acceptance tests use, over all milestones.")
    interface_named: int = Field(0, description="Of those, names their task text names.")


class MilestonePlan(Model):
    repo: RepoSpec
    from_ref: str
    to_ref: str
    from_commit: str
    to_commit: str
    releases: list[Release]
    changelog_sources: list[str] = Field(
        [], description="Changelog files read; empty means PR titles and subjects stood in."
    )
    pulls: list[PullRef] = []
    changelog: list[ChangelogEntry] = Field(
        [], description="Every entry of the range's releases, with how it was placed and the milestone carrying it."
    )
    commits: list[CommitRole] = Field(
        [], description="Every mainline commit of the range: work, tests only, housekeeping (and why) or backport."
    )
    granularity: Granularity = Field(
        "feature",
        description="feature: a milestone per feature (the long chain); pr: one per PR (the short-task baseline).",
    )
    milestones: list[Milestone]
    report: PlanReport = Field(default_factory=PlanReport)
    notes: list[str] = Field([], description="What the planner chose and why (e.g. the default range).")
    warnings: list[str] = []
    provenance: Provenance = Field(default_factory=Provenance)

    @property
    def plan_id(self) -> str:
        """What the plan is a plan of: its clone, its range and its granularity. A plan of another is archived
        when it replaces this one (`Store.archive_plan`), its verdicts and runs with it."""
        identity = f"{self.repo.url}\n{self.from_commit}..{self.to_commit}\n{self.granularity}"
        return hashlib.sha256(identity.encode()).hexdigest()[:12]

    @model_validator(mode="after")
    def _chain_is_contiguous(self) -> "MilestonePlan":
        prev = self.from_commit
        merging: list[str] = []  # merged milestones whose work the next task starts from their base
        for i, milestone in enumerate(self.milestones, start=1):
            if milestone.ordinal != i or milestone.id != milestone_id(i):
                raise ValueError(f"milestone {milestone.id} is out of order (expected {milestone_id(i)})")
            base = self.milestone(merging[0]).base_commit if merging else prev
            if milestone.base_commit != base and not (milestone.status == "merged" and milestone.base_commit == prev):
                raise ValueError(
                    f"milestone {milestone.id} base {milestone.base_commit[:10]} != previous verify {prev[:10]}"
                )
            if milestone.status != "merged":
                for part in merging:  # merged into the first milestone after it that is not merged itself
                    if self.milestone(part).merged_into != milestone.id:
                        raise ValueError(
                            f"merged milestone {part} must be merged into {milestone.id}, the task after it"
                        )
            merging = [*merging, milestone.id] if milestone.status == "merged" else []
            prev = milestone.verify_commit
        if merging:
            raise ValueError(f"the last milestone {merging[-1]} cannot be merged: no milestone follows it")
        if self.milestones and prev != self.to_commit:
            raise ValueError(f"last milestone ends at {prev[:10]}, not at {self.to_commit[:10]}")
        return self

    def milestone(self, mid: str) -> Milestone:
        for milestone in self.milestones:
            if milestone.id == mid:
                return milestone
        raise KeyError(mid)


def _without_examples(criterion: str) -> str:
    """A criterion's test and sentence, its quoted checks left out (`test_checks.criterion` adds them last)."""
    for lead in (", for example:\n", ", e.g. "):
        criterion = criterion.split(lead, 1)[0]
    return criterion


def milestone_id(ordinal: int) -> str:
    return f"m{ordinal:02d}"


def text_measures(milestones: list[Milestone]) -> dict[str, int]:
    """How whole the plan's task texts are (`PlanReport`'s text fields), from each milestone's quality: at planning,
    and again each time validation rewrites a milestone's task (`Store.update_milestone`)."""
    return {
        "broken_texts": sum(
            1 for milestone in milestones if milestone.quality.problems or milestone.quality.hint_problems
        ),
        "housekeeping_in_text": sum(1 for milestone in milestones if milestone.quality.housekeeping_in_text),
        "held_back": sum(1 for milestone in milestones if milestone.held_back),
        "words_lost": sum(milestone.quality.words_lost for milestone in milestones),
        "interface_names": sum(milestone.quality.interface_names for milestone in milestones),
        "interface_named": sum(milestone.quality.interface_named for milestone in milestones),
    }


def title_headlines(parts: list[TaskPart], composed: Composed) -> list[Headline]:
    """The features the title names, as `Milestone.headlines` records them."""
    return [
        Headline(
            text=parts[index].heading,
            commits=parts[index].commits,
            test_files=parts[index].test_files,
            tests=parts[index].tests,
        )
        for index in composed.titled
    ]
