"""Stage 1 commands: screen repositories, mine a release range into a milestone plan, register a
repository, and show what the store holds for one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import ConfigError, HarnessForgeError
from ..gitio import resolve_repo
from ..harness.conversation import opening
from ..harness.memory import applied, header, render
from ..mining.candidates import DEFAULT_CANDIDATES, read_candidates, search_candidates
from ..mining.planner import plan as plan_repo
from ..mining.screening import screen as screen_repo
from ..models import GRANULARITIES
from ..models.task import asked_hint
from ..repos import open_repo
from .context import console, github_factory, out, state, warn
from .options import MODEL_AGENTS, either
from .rendering import CloneProgress, criteria_table, plan_table, progress_bars


def screen(
    repo: Optional[str] = typer.Argument(None, help="Local path, git URL, owner/name or a registered repo key"),
    candidates: Optional[Path] = typer.Option(None, "--candidates", help="YAML list of repositories to screen"),
    default_candidates: bool = typer.Option(
        False, "--default-candidates", help="Screen the 30 repositories of repos.yaml"
    ),
    search: Optional[str] = typer.Option(
        None, "--search", help="Find candidates on GitHub in this language (needs GITHUB_TOKEN)"
    ),
    min_stars: int = typer.Option(1000, help="--search: minimum stars"),
    limit: int = typer.Option(20, help="--search: how many repositories"),
    collect: bool = typer.Option(True, help="Run the test collector (else count test declarations)"),
) -> None:
    """Screen repositories against every criterion and save repos/<key>/screening.json."""
    targets = [repo] if repo else []
    if candidates or default_candidates:
        targets += read_candidates(candidates or DEFAULT_CANDIDATES)
    if search:
        from ..github import GitHubClient

        client = GitHubClient.from_env()
        if client is None:
            raise ConfigError("--search needs GITHUB_TOKEN to be set")
        targets += search_candidates(client, search, min_stars, limit, state.rules.screening)
    if not targets:
        raise ConfigError("nothing to screen: pass a repository, --candidates FILE, --default-candidates or --search")
    failures = screen_all(targets, collect)
    if failures == len(targets):
        raise typer.Exit(1)


def screen_all(targets: list[str], collect: bool) -> int:
    """Screen each target, printing a summary row per target; returns how many could not be screened.
    With one target, its error is raised and its criteria are printed."""
    rules = state.rules
    failures = 0
    summary = Table("repository", "result", "path or error", title="screening")
    with progress_bars() as progress:
        task = progress.add_task("screening", total=len(targets))
        for target in targets:
            progress.update(task, description=f"screening {target}")
            try:
                report = screen_repo(
                    state.store,
                    target,
                    rules,
                    github_factory=github_factory,
                    collect=collect,
                    progress=CloneProgress(progress),
                )
            except HarnessForgeError as e:
                failures += 1
                summary.add_row(target, "[red]error", str(e))
                if len(targets) == 1:
                    raise  # one repository: its error is the answer
            else:
                if len(targets) == 1:
                    out.print(criteria_table(report))
                path = state.store.repo_dir(report.repo.key) / "screening.json"
                summary.add_row(target, "[green]pass" if report.passed else "[yellow]fail", str(path))
            progress.advance(task)
    out.print(summary)
    return failures


def check_granularity(value: str | None) -> str | None:
    if value is not None and value not in GRANULARITIES:
        raise typer.BadParameter(f"{value!r}: use {either(GRANULARITIES)}")
    return value


def plan(
    repo: str = typer.Argument(..., help="Local path, git URL, owner/name or a registered repo key"),
    from_ref: Optional[str] = typer.Option(None, "--from", help="Release tag (or mainline commit) to start from"),
    to_ref: Optional[str] = typer.Option(None, "--to", help="Release tag (or mainline commit) to end at"),
    pm: Optional[str] = typer.Option(
        None, "--pm", help=f"Also have a model ({MODEL_AGENTS}) rewrite each description as a PM"
    ),
    pm_model: Optional[str] = typer.Option(None, "--pm-model", help="Model name for --pm"),
    granularity: Optional[str] = typer.Option(
        None,
        "--granularity",
        help="feature (a milestone per feature) or pr (one per PR, the short-task baseline); "
        "default: the rules' planning.granularity",
        callback=check_granularity,
    ),
) -> None:
    """Mine the history between two releases into a milestone chain under repos/<key>/."""
    rules = state.rules
    if pm:
        from ..agents.factory import make_agent

        make_agent(pm, pm_model).close()  # a bad --pm fails before the mining
    with progress_bars() as progress:
        task = progress.add_task(f"planning {repo}", total=None)
        result = plan_repo(
            state.store,
            repo,
            rules,
            from_ref,
            to_ref,
            github_factory=github_factory,
            progress=lambda message: progress.update(task, description=message),
            clone_progress=CloneProgress(progress),
            granularity=granularity,
        )
    out.print(plan_table(result.plan))
    if result.replaced:
        warn(
            f"replaced {result.plan.repo.key}'s {result.replaced}-granularity plan "
            "(a repository holds one plan at a time)"
        )
    if result.archived:
        warn(f"the earlier plan (another range, clone or granularity), its verdicts and runs: {result.archived}")
    for note in result.plan.notes:
        console.print(f"[cyan]note:[/] {note}")
    for warning in result.plan.warnings:
        warn(warning)
    if pm:
        rewrite_descriptions(result.plan.repo.key, pm, pm_model)
    out.print(str(state.store.plan_file(result.plan.repo.key)))


def rewrite_descriptions(key: str, pm: str, pm_model: str | None) -> None:
    """`plan --pm`: a model rewrites each milestone's description as a PM would."""
    from ..agents.factory import make_agent
    from ..agents.pm import rewrite_plan

    with make_agent(pm, pm_model) as writer, progress_bars() as progress:
        progress.add_task(f"PM rewrite with {writer.name} {writer.model}", total=None)
        rewrites = rewrite_plan(state.store, key, writer, log=warn, rules=state.rules)
    accepted = sum(rewrite.accepted for rewrite in rewrites)
    cost = sum(rewrite.cost_usd for rewrite in rewrites)
    out.print(f"PM rewrite: {accepted}/{len(rewrites)} descriptions accepted (${cost:.4f})")


def add(repo: str = typer.Argument(..., help="Local path, git URL or owner/name")) -> None:
    """Register a repository in the store (clone it into the cache) and print its key."""
    with progress_bars() as progress:
        spec = resolve_repo(repo)
        open_repo(state.store, spec, progress=CloneProgress(progress))
    out.print(spec.key)


def show(
    repo_key: str = typer.Argument(..., help="A registered repo key (owner__name)"),
    task: Optional[str] = typer.Option(
        None, "--task", help="A milestone id: print its task exactly as the Dev's first message carries it"
    ),
    tests: Optional[str] = typer.Option(
        None, "--tests", help="--task: visible or hidden acceptance tests (default: rules harness.test_visibility)"
    ),
    as_json: bool = typer.Option(False, "--json", help="--task: the message and what it is made of, as JSON"),
) -> None:
    """Print a repository's saved screening report and milestone plan from the store, or one milestone's task."""
    if task is not None or tests is not None or as_json:
        show_task(repo_key, task, tests, as_json)
        return
    shown = False
    if (state.store.repo_dir(repo_key) / "screening.json").exists():
        out.print(criteria_table(state.store.load_screening(repo_key)))
        shown = True
    if state.store.plan_file(repo_key).exists() or not shown:
        out.print(plan_table(state.store.load_plan(repo_key)))


RUN_MEMORY_NOTE = (
    "In a run, each earlier milestone also carries its outcome, the files the Dev changed and the errors it fixed."
)


def show_task(repo_key: str, milestone_id: str | None, tests: str | None, as_json: bool) -> None:
    """The first message of a milestone at the start of a chain (a run adds what earlier milestones built and,
    after a pass, where the Dev's own work is)."""
    if milestone_id is None:
        raise typer.BadParameter("--tests and --json go with --task MILESTONE")
    if tests not in (None, "visible", "hidden"):
        raise typer.BadParameter(f"--tests must be visible or hidden, not {tests!r}")
    rules = state.rules.harness
    visibility = tests or rules.test_visibility
    plan = state.store.load_plan(repo_key)
    milestone = next((milestone for milestone in plan.milestones if milestone.id == milestone_id), None)
    if milestone is None:
        known = ", ".join(planned.id for planned in plan.milestones)
        raise ConfigError(f"{repo_key} has no milestone {milestone_id!r} (it has {known})")
    ladder = state.store.load_hints(repo_key, milestone_id)
    level = ladder.levels[0]
    content = asked_hint(level.content, milestone.parts)
    hint = "" if level.empty or not content else rules.mentor.frame(0, content, "milestone_start", 0)
    chain = [planned for planned in plan.milestones if planned.status != "merged"]
    ids = [planned.id for planned in chain]
    before = chain[: ids.index(milestone_id)] if milestone_id in ids else []
    earlier = [
        f"- {planned.id} {planned.title}"
        if planned.status in (None, "valid") and not planned.held_back
        else header(applied(planned.id, planned.title))  # held back or not valid: its work is applied all the same
        for planned in before
    ]
    memory = "\n".join(earlier) if earlier else render([], rules.memory)
    message = opening(milestone, visibility, hint, memory)
    if not as_json:
        out.print(message, markup=False, highlight=False, soft_wrap=True)
        if earlier:  # said beside the message, never in it: a reader takes it for the Dev's text
            typer.echo(RUN_MEMORY_NOTE, err=True)
        return
    shown = {
        "repo": repo_key,
        "milestone": milestone_id,
        "status": milestone.status,
        "test_visibility": visibility,
        "title": milestone.title,
        "first_hint": hint or None,
        "message": message,
        "note": RUN_MEMORY_NOTE if earlier else None,
    }
    out.print(json.dumps(shown, indent=2, ensure_ascii=False), markup=False, highlight=False, soft_wrap=True)
