"""How the commands show things: rich progress bars, tables of the core's results, and the
one-line messages built from them. Nothing here decides; it only lays out what it is given."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from git import RemoteProgress
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..models import MilestonePlan, ScreeningReport
from .context import console

if TYPE_CHECKING:
    from ..demo import DemoResult
    from ..export.verify import CardCheck
    from ..harness.parallel import ChainResult
    from ..models.env import RepoImages, Validation
    from ..models.run import MilestoneSummary

VERDICTS = {True: "[green]pass", False: "[red]fail", None: "[yellow]unknown"}


class CloneProgress(RemoteProgress):
    """GitPython's clone progress, drawn as a rich progress bar."""

    def __init__(self, progress: Progress):
        super().__init__()
        self.progress, self.task = progress, None

    def update(self, op_code, cur_count, max_count=None, message=""):
        if self.task is None:
            self.task = self.progress.add_task("cloning", total=None)
        self.progress.update(
            self.task,
            completed=cur_count,
            total=max_count or None,
            description=f"cloning {self._cur_line or ''}".strip()[:60],
        )


@contextmanager
def progress_bars() -> Iterator[Progress]:
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,  # off a terminal it would only print a blank line
    ) as progress:
        yield progress


def criteria_table(report: ScreeningReport) -> Table:
    verdict = "PASS" if report.passed else "FAIL"
    table = Table(title=f"{report.repo.key} @ {report.head_commit[:10]}: {verdict}")
    for column in ("criterion", "measured", "threshold", "result", "reason"):
        table.add_column(column)
    for criterion in report.criteria:
        measured = criterion.measured
        shown = ", ".join(map(str, measured)) if isinstance(measured, list) else str(measured)
        table.add_row(criterion.name, shown[:40], criterion.threshold, VERDICTS[criterion.passed], criterion.reason)
    return table


def _numbers(prs: list[int], shown: int = 3) -> str:
    """`#1, #2, #3 +4`: the first PRs and how many more."""
    text = ", ".join(f"#{number}" for number in prs[:shown])
    return text + (f" +{len(prs) - shown}" if len(prs) > shown else "")


def plan_table(plan: MilestonePlan) -> Table:
    title = f"{plan.repo.key}: {plan.from_ref} → {plan.to_ref}, {len(plan.milestones)} milestones"
    title += " (one per PR)" if plan.granularity == "pr" else ""
    table = Table(title=title)
    # at any width the title and flags wrap; PR numbers stay on one line (one number per line says nothing)
    table.add_column("id", no_wrap=True)
    table.add_column("title", ratio=3, min_width=20)
    table.add_column("type")
    table.add_column("release")
    table.add_column("PRs", no_wrap=True, overflow="ellipsis", max_width=16)
    table.add_column("+/-")
    table.add_column("tests")
    table.add_column("flags", ratio=1)
    for milestone in plan.milestones:
        # before validation: the test files it changes; after: what running them proved
        if milestone.status:
            tests = f"{len(milestone.fail_to_pass)} F2P ({milestone.status})"
        else:
            tests = f"{len(milestone.test_files)} files"
        table.add_row(
            milestone.id,
            milestone.title,
            milestone.type or "",
            milestone.release or "",
            _numbers(milestone.source_prs),
            f"+{milestone.lines_added}/-{milestone.lines_deleted}",
            tests,
            ", ".join(milestone.flags),
        )
    report = plan.report
    if plan.milestones:
        types = ", ".join(f"{kind} {count}" for kind, count in sorted(report.type_mix.items()))
        table.caption = (
            f"types {types}; "
            f"{report.feature_titled}/{len(plan.milestones)} titled by a feature; "
            f"release notes covered {report.entries_covered}/{report.entries_citing} (citing a PR, issue or commit); "
            f"entries placed {report.entries_placed}/{report.entries_in_range}; "
            f"task texts: {report.broken_texts} broken, {report.housekeeping_in_text} with housekeeping, "
            f"{report.held_back} held back (terse, a grab-bag, unstated or over releases), "
            f"interface named {report.interface_named}/{report.interface_names}"
        )
    return table


def missing_images_message(images: RepoImages) -> str:
    """The milestones without an image, grouped by the first line of why."""
    by_why: dict[str, list[str]] = {}
    for milestone_id, why in images.failures.items():
        by_why.setdefault(why.splitlines()[0][:300], []).append(milestone_id)
    whys = "; ".join(f"{', '.join(milestone_ids)}: {why}" for why, milestone_ids in by_why.items())
    return (
        f"{len(images.failures)} milestone(s) have no image ({whys}); `validate` records them as env_error "
        f"and validates the {len(images.milestone_images)} with an image"
    )


def validation_table(results: Iterable[Validation], merged_into: dict[str, str] | None = None) -> Table:
    """One row per verdict; `merged_into`: untested milestones merged into a later one (which the table shows)."""
    table = Table("id", "status", "FAIL_TO_PASS", "PASS_TO_PASS", "flaky", "reason")
    merged_into = merged_into or {}
    for validation in sorted(results, key=lambda validation: validation.milestone_id):
        into = merged_into.get(validation.milestone_id)
        table.add_row(
            validation.milestone_id,
            f"{validation.status}, merged into {into}" if into else validation.status,
            str(len(validation.fail_to_pass)),
            str(len(validation.pass_to_pass)),
            ", ".join(validation.flaky),
            validation.reason or "",
        )
    return table


def hint_levels(summary: MilestoneSummary) -> str:
    return ",".join(f"L{level}" for level in summary.hints_released)


def turn_description(job: str, milestone_id: str, turn: int, max_turns: int, level: int, tests) -> str:
    """A chain's progress line after each turn of its Dev."""
    passing = f" · tests {tests.passed}/{tests.total}" if tests else ""
    hint = f" · hint L{level}" if level else ""
    return f"{job}: {milestone_id} turn {turn}/{max_turns}{hint}{passing}"


def chains_table(results: Iterable[ChainResult]) -> Table:
    table = Table("repo", "id", "status", "turns", "hints", "tokens in/out", "cost $", "wall s")
    for result in results:
        for summary in result.summaries:
            table.add_row(
                result.job,
                summary.milestone_id,
                summary.status,
                str(summary.turns),
                hint_levels(summary),
                f"{summary.tokens.input}/{summary.tokens.output}",
                f"{summary.cost_usd:.4f}",
                f"{summary.wall_s:.1f}",
            )
    return table


def counts_table(what: str, counts: Mapping[str, int]) -> Table:
    """Rows per output (or per file), in the order given."""
    table = Table(what, "rows")
    for name, count in counts.items():
        table.add_row(name, str(count))
    return table


def card_checks_table(checks: Iterable[CardCheck]) -> Table:
    table = Table("task", "reproduced", "reference", "empty", "reason")
    for check in checks:
        reproduced = "yes" if check.reproduced else "no"
        table.add_row(check.task_id, reproduced, check.reference_reward, check.empty_reward, check.reason)
    return table


def demo_chain_table(result: DemoResult) -> Table:
    title = f"{result.repo} · sandbox: {result.sandbox}"
    table = Table("milestone", "status", "turns", "hints", "reset to", title=title)
    for summary in result.summaries:
        table.add_row(
            summary.milestone_id,
            summary.status,
            str(summary.turns),
            hint_levels(summary) or "-",
            (summary.reset_to or "")[:12],
        )
    return table


def paths_table(paths: Mapping[str, Path]) -> Table:
    table = Table("open")
    table.add_column("path", overflow="fold")  # whole paths, to copy
    for name, path in paths.items():
        table.add_row(name, str(path))
    return table
