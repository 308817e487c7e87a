"""The `harnessforge` command: a thin typer front over the core, with rich progress."""

from __future__ import annotations

import sys
import uuid
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NoReturn, Optional

import typer
from git import RemoteProgress
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .errors import ConfigError, HarnessForgeError
from .examples import build_example_repo
from .gitio import resolve_repo
from .mining.planner import plan as plan_repo
from .mining.screening import screen as screen_repo
from .models import MilestonePlan, RepoSpec, ScreeningReport, export_schemas
from .models.common import first_error
from .repos import open_repo
from .rules import Rules, load_rules, read_yaml
from .store import Store, check_run_id, default_store_dir

if TYPE_CHECKING:
    from .github import GitHubClient

try:  # typer >= 0.22 carries its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException, NoArgsIsHelpError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn real repositories' release history into coding-agent training data.",
)
console = Console(stderr=True)
out = Console()
DEFAULT_CANDIDATES = Path(__file__).parent / "config" / "repos.yaml"


class _State:
    store: Store
    rules_path: Optional[Path]

    @property
    def rules(self) -> Rules:
        return load_rules(self.rules_path)


state = _State()


@app.callback()
def main_options(
    store: Optional[Path] = typer.Option(
        None, "--store", help="Store directory (default: $HARNESSFORGE_HOME, else ./forge_store)"
    ),
    rules: Optional[Path] = typer.Option(
        None, "--rules", help="YAML overriding rule thresholds (default: $HARNESSFORGE_RULES)"
    ),
) -> None:
    state.store = Store(store or default_store_dir())
    state.rules_path = rules


def _github_factory(spec: RepoSpec) -> GitHubClient | None:
    from .github import GitHubClient  # PyGithub takes a second to import: only when a command needs it

    return GitHubClient.from_env(cache_dir=state.store.github_cache(spec.key))


class _CloneProgress(RemoteProgress):
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
def _progress() -> Iterator[Progress]:
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


# ---- commands ----------------------------------------------------------------------------------


@app.command()
def schema(out_dir: Path = typer.Option(..., "--out", help="Directory for <Model>.schema.json files")) -> None:
    """Export the JSON Schema of every artifact model."""
    for path in export_schemas(out_dir):
        out.print(str(path))


@app.command("example-repo")
def example_repo(
    dest: Path = typer.Argument(..., help="Where to create the repository (must not exist or be empty)"),
    tags: bool = typer.Option(True, help="Tag releases"),
    changelog: bool = typer.Option(True, help="Keep a CHANGELOG.md"),
    odd_files: bool = typer.Option(False, help="Add binary and non-UTF-8 files"),
    pattern: Optional[str] = typer.Option(
        None, "--pattern", help="Instead, a small repository of one real-world shape (maintenance-branch, ...)"
    ),
) -> None:
    """Build the bundled example repository (tasklite) used by the tests and the demo, or with
    --pattern one of the small repositories shaped like real histories (harnessforge/examples/patterns)."""
    from .examples.patterns import PATTERNS, build_pattern

    if pattern is not None and pattern not in PATTERNS:
        raise ConfigError(f"--pattern {pattern!r}: use one of {', '.join(sorted(PATTERNS))}")
    try:
        if pattern:
            path = build_pattern(pattern, dest)
        else:
            path = build_example_repo(dest, tags=tags, changelog=changelog, odd_files=odd_files)
    except FileExistsError as e:
        raise HarnessForgeError(str(e)) from None
    out.print(str(path))


class _Candidates(BaseModel):
    candidates: list[str]


def read_candidates(path: Path) -> list[str]:
    data = read_yaml(path, "candidates file")
    try:
        return _Candidates.model_validate(data).candidates
    except ValidationError as e:
        raise ConfigError(
            f"candidates file {path}: {first_error(e)} (expected `candidates: [owner/name, ...]`)"
        ) from None


def _criteria_table(report: ScreeningReport) -> Table:
    table = Table(title=f"{report.repo.key} @ {report.head_commit[:10]}: {'PASS' if report.passed else 'FAIL'}")
    for col in ("criterion", "measured", "threshold", "result", "reason"):
        table.add_column(col)
    for c in report.criteria:
        measured = ", ".join(map(str, c.measured)) if isinstance(c.measured, list) else str(c.measured)
        verdict = {True: "[green]pass", False: "[red]fail", None: "[yellow]unknown"}[c.passed]
        table.add_row(c.name, measured[:40], c.threshold, verdict, c.reason)
    return table


@app.command()
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
        from .github import GitHubClient

        client = GitHubClient.from_env()
        if client is None:
            raise ConfigError("--search needs GITHUB_TOKEN to be set")
        since = datetime.now(timezone.utc) - timedelta(days=state.rules.screening.recent_window_days)
        targets += client.search_candidates(search, min_stars, since, limit)
    if not targets:
        raise ConfigError("nothing to screen: pass a repository, --candidates FILE, --default-candidates or --search")
    rules = state.rules
    failures = 0
    summary = Table(title="screening")
    for col in ("repository", "result", "path or error"):
        summary.add_column(col)
    with _progress() as progress:
        task = progress.add_task("screening", total=len(targets))
        for target in targets:
            progress.update(task, description=f"screening {target}")
            try:
                report = screen_repo(
                    state.store,
                    target,
                    rules,
                    github_factory=_github_factory,
                    collect=collect,
                    progress=_CloneProgress(progress),
                )
            except HarnessForgeError as e:
                failures += 1
                summary.add_row(target, "[red]error", str(e))
                if len(targets) == 1:
                    raise  # one repository: its error is the answer
            else:
                if len(targets) == 1:
                    out.print(_criteria_table(report))
                path = state.store.repo_dir(report.repo.key) / "screening.json"
                summary.add_row(target, "[green]pass" if report.passed else "[yellow]fail", str(path))
            progress.advance(task)
    out.print(summary)
    if failures == len(targets):
        raise typer.Exit(1)


def _plan_table(plan: MilestonePlan) -> Table:
    table = Table(title=f"{plan.repo.key}: {plan.from_ref} → {plan.to_ref}, {len(plan.milestones)} milestones")
    for col in ("id", "title", "type", "release", "PRs", "+/-", "tests", "difficulty", "flags"):
        table.add_column(col)
    for m in plan.milestones:
        # before validation: the test files it changes; after: what running them proved
        tests = f"{len(m.fail_to_pass)} F2P ({m.status})" if m.status else f"{len(m.test_files)} files"
        table.add_row(
            m.id,
            m.title,
            m.type or "",
            m.release or "",
            ", ".join(f"#{p}" for p in m.source_prs),
            f"+{m.lines_added}/-{m.lines_deleted}",
            tests,
            str(m.difficulty),
            ", ".join(m.flags),
        )
    r = plan.report
    if plan.milestones:
        table.caption = (
            f"types {', '.join(f'{k} {v}' for k, v in sorted(r.type_mix.items()))}; "
            f"{r.feature_titled}/{len(plan.milestones)} titled by a feature; "
            f"release notes covered {r.entries_covered}/{r.entries_citing} (citing a PR, issue or commit)"
        )
    return table


@app.command()
def plan(
    repo: str = typer.Argument(..., help="Local path, git URL, owner/name or a registered repo key"),
    from_ref: Optional[str] = typer.Option(None, "--from", help="Release tag (or mainline commit) to start from"),
    to_ref: Optional[str] = typer.Option(None, "--to", help="Release tag (or mainline commit) to end at"),
    pm: Optional[str] = typer.Option(
        None, "--pm", help="Also have a model (anthropic, openai, claude-code) rewrite each description as a PM"
    ),
    pm_model: Optional[str] = typer.Option(None, "--pm-model", help="Model name for --pm"),
) -> None:
    """Mine the history between two releases into a milestone chain under repos/<key>/."""
    rules = state.rules
    if pm:
        from .agents.factory import make_agent

        make_agent(pm, pm_model).close()  # a bad --pm fails before the mining
    with _progress() as progress:
        task = progress.add_task(f"planning {repo}", total=None)
        result = plan_repo(
            state.store,
            repo,
            rules,
            from_ref,
            to_ref,
            github_factory=_github_factory,
            progress=lambda msg: progress.update(task, description=msg),
            clone_progress=_CloneProgress(progress),
        )
    out.print(_plan_table(result.plan))
    for note in result.plan.notes:
        console.print(f"[cyan]note:[/] {note}")
    for w in result.plan.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    if pm:
        from .agents.factory import make_agent
        from .agents.pm import rewrite_plan

        warn = lambda msg: console.print(f"[yellow]warning:[/] {msg}")  # noqa: E731
        with make_agent(pm, pm_model) as writer, _progress() as progress:
            progress.add_task(f"PM rewrite with {writer.name} {writer.model}", total=None)
            rewrites = rewrite_plan(state.store, result.plan.repo.key, writer, log=warn)
        out.print(f"PM rewrite: {sum(r.accepted for r in rewrites)}/{len(rewrites)} descriptions accepted")
    out.print(str(state.store.plan_file(result.plan.repo.key)))


@app.command()
def add(repo: str = typer.Argument(..., help="Local path, git URL or owner/name")) -> None:
    """Register a repository in the store (clone it into the cache) and print its key."""
    with _progress() as progress:
        spec = resolve_repo(repo)
        open_repo(state.store, spec, progress=_CloneProgress(progress))
    out.print(spec.key)


@app.command()
def show(repo_key: str = typer.Argument(..., help="A registered repo key (owner__name)")) -> None:
    """Print a repository's saved screening report and milestone plan from the store."""
    shown = False
    if (state.store.repo_dir(repo_key) / "screening.json").exists():
        out.print(_criteria_table(state.store.load_screening(repo_key)))
        shown = True
    if state.store.plan_file(repo_key).exists() or not shown:
        out.print(_plan_table(state.store.load_plan(repo_key)))


env_app = typer.Typer(no_args_is_help=True, help="Sandbox images: base images and per-repo environments.")
app.add_typer(env_app, name="env")
BACKEND_HELP = "docker, local (bubblewrap/unshare with the host's toolchain) or auto (docker when an engine answers)"


def _backend(value: str) -> str:
    if value not in ("auto", "docker", "local"):
        raise typer.BadParameter(f"{value!r}: use docker, local or auto")
    return value


@env_app.command("bootstrap-base")
def env_bootstrap_base(
    language: list[str] = typer.Option(["python"], "--language", help="Build the base image of these languages"),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists"),
) -> None:
    """Build base images with debootstrap + docker import (for machines without a registry); each
    debootstrap phase is printed as it starts. `env build` does this itself for a missing base."""
    from .envs import engine
    from .envs.images import bootstrap_base

    rules = state.rules
    unknown = [lang for lang in language if lang not in rules.environments.base_images]
    if unknown:  # before any work, and without an engine
        raise ConfigError(f"unknown language {unknown[0]!r}; known: {', '.join(rules.environments.base_images)}")
    client = engine.connect()
    for lang in language:
        with console.status(f"bootstrapping the {lang} base image"):
            tag = bootstrap_base(client, lang, rules.environments, force=force, log=lambda s: console.print(escape(s)))
            out.print(tag)


@env_app.command("build")
def env_build(
    repo: str = typer.Argument(..., help="A planned repo: its key, path, URL or owner/name"),
    milestone: Optional[str] = typer.Option(None, "--milestone", help="Only the image this milestone needs"),
) -> None:
    """Build one image per dependency epoch of a planned repo (cached by the env hash); a missing
    base image is bootstrapped first. Exit 1 when some milestone has no image, after building the rest."""
    from .envs.environment import build

    log = lambda line: console.print(escape(line))  # noqa: E731 (requirement lines hold [extras])
    with console.status(f"building environments for {repo}"):
        images = build(state.store, repo, state.rules, milestone=milestone, log=log)
    for record in images.images:
        out.print(f"{record.tag}  {record.recipe.language}/{record.recipe.runner}  {record.log_path}")
    if images.failures:
        by_why: dict[str, list[str]] = {}
        for mid, why in images.failures.items():
            by_why.setdefault(why.splitlines()[0][:300], []).append(mid)
        whys = "; ".join(f"{', '.join(mids)}: {why}" for why, mids in by_why.items())
        raise HarnessForgeError(
            f"{len(images.failures)} milestone(s) have no image ({whys}); `validate` records them as env_error "
            f"and validates the {len(images.milestone_images)} with an image"
        )


@env_app.command("cleanup")
def env_cleanup(
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Only the containers of this run (others' stay)"),
) -> None:
    """Remove every HarnessForge container left behind (e.g. by a killed run); images stay."""
    from .envs import engine

    out.print(f"removed {engine.cleanup(engine.connect(), run_id)} container(s)")


@app.command()
def validate(
    repo: str = typer.Argument(..., help="A planned repo: its key, path, URL or owner/name"),
    milestone: Optional[str] = typer.Option(None, "--milestone", help="Validate only this milestone (e.g. m03)"),
    repeats: Optional[int] = typer.Option(None, "--repeats", min=1, help="Runs per side (default: rules)"),
    sandbox: str = typer.Option("auto", "--sandbox", help=BACKEND_HELP, callback=_backend),
    workers: int = typer.Option(1, "--workers", min=1, help="Milestones validated at once, each in its own sandbox"),
) -> None:
    """Prove each milestone's tests FAIL at base and PASS at verify; write validation.json."""
    from .envs.environment import validate as validate_repo

    rules = state.rules
    if repeats:
        rules = rules.model_copy(update={"environments": rules.environments.model_copy(update={"repeats": repeats})})
    with console.status(f"validating {repo}"):
        results = validate_repo(
            state.store, repo, rules, milestone=milestone, backend=sandbox, log=console.print, workers=workers
        )
    table = Table("id", "status", "FAIL_TO_PASS", "PASS_TO_PASS", "flaky", "reason")
    for v in results:
        table.add_row(v.milestone_id, v.status, str(len(v.fail_to_pass)), str(len(v.pass_to_pass)),
                      ", ".join(v.flaky), v.reason or "")  # fmt: skip
    out.print(table)


@app.command()
def grade(
    repo: str = typer.Argument(..., help="A validated repo's key"),
    milestone: str = typer.Argument(..., help="Milestone id, e.g. m03"),
    patch: Path = typer.Argument(..., exists=True, dir_okay=False, help="The candidate's diff against base"),
    sandbox: str = typer.Option("auto", "--sandbox", help=BACKEND_HELP, callback=_backend),
) -> None:
    """Grade a candidate diff in a fresh sandbox; prints the grade as JSON, exit 2 if unresolved."""
    from .diffs import split_diff
    from .envs.environment import grade_patch

    candidate = patch.read_bytes()
    if candidate.strip() and not split_diff(candidate):
        raise ConfigError(f"patch file {patch}: no `diff --git` section in it (grade takes `git diff` output)")
    g = grade_patch(state.store, repo, milestone, candidate, state.rules, backend=sandbox)
    out.print_json(g.model_dump_json(exclude={"run"}))
    if not g.resolved:
        raise typer.Exit(2)


@app.command()
def run(
    repos: list[str] = typer.Argument(..., help="Validated repos: keys, paths, URLs or owner/name"),
    agent: str = typer.Option("oracle", "--agent", help="oracle, anthropic, openai or claude-code (keys: env)"),
    model: Optional[str] = typer.Option(None, "--model", help="Model name for the model backends"),
    milestones: Optional[str] = typer.Option(None, "--milestones", help="Comma-separated ids (default: all valid)"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Name of the run (default: <agent>-<random>)"),
    sandbox: str = typer.Option("auto", "--sandbox", help=BACKEND_HELP, callback=_backend),
    workers: int = typer.Option(4, "--workers", min=1, help="Chains that run at the same time"),
    chains: int = typer.Option(
        1, "--chains", min=1, help="Chains per repo, each its own run: <run-id>-1 … <run-id>-N (oracle: seed+i-1)"
    ),
    seed: int = typer.Option(0, "--seed", help="oracle: random seed"),
    profile: list[str] = typer.Option([], "--profile", help="oracle: MID=direct|partial|needs_hints|asks|stuck"),
) -> None:
    """Run a Dev agent through each repo's milestone chain (repos in parallel, each chain in order);
    trajectories go to trajectories/<key>/<run_id>/. With --chains N, N independent runs of each repo."""
    from .agents.factory import make_agent
    from .harness.navigator import Navigator
    from .harness.parallel import run_chains

    profiles = {}
    for item in profile:
        mid, sep, name = item.partition("=")
        if not sep:
            raise ConfigError(f"--profile {item!r}: expected MID=PROFILE, e.g. m02=needs_hints")
        profiles[mid] = name
    if run_id is not None:
        check_run_id(run_id)  # it names a folder: refused before any work
    make_agent(agent, model, seed=seed, profiles=profiles).close()  # a bad agent setting fails before any work
    repos = list(dict.fromkeys(repos))
    jobs = {repo: (repo, run_id, seed) for repo in repos}  # job name -> (repo, run id, oracle seed)
    if chains > 1:
        base = run_id or f"{agent}-{uuid.uuid4().hex[:8]}"
        jobs = {f"{r} {base}-{i}": (r, f"{base}-{i}", seed + i - 1) for r in repos for i in range(1, chains + 1)}
    with _progress() as progress:

        def navigator(job: str) -> Navigator:
            repo, job_run_id, job_seed = jobs[job]
            task = progress.add_task(f"{job}: starting", total=None)

            def on_turn(mid: str, turn: int, max_turns: int, level: int, tests) -> None:
                passing = f" · tests {tests.passed}/{tests.total}" if tests else ""
                hint = f" · hint L{level}" if level else ""
                progress.update(task, description=f"{job}: {mid} turn {turn}/{max_turns}{hint}{passing}")

            dev = make_agent(agent, model, seed=job_seed, profiles=profiles)
            return Navigator(state.store, repo, dev, state.rules, run_id=job_run_id, backend=sandbox,
                             log=lambda msg: console.print(f"{job}: {msg}"), on_turn=on_turn)  # fmt: skip

        wanted = milestones.split(",") if milestones else None
        results = run_chains(list(jobs), navigator, workers, wanted, log=lambda _: None)
    table = Table("repo", "id", "status", "turns", "hints", "tokens in/out", "cost $", "wall s")
    for r in results:
        for s in r.summaries:
            hints = ",".join(f"L{x}" for x in s.hints_released)
            table.add_row(r.job, s.milestone_id, s.status, str(s.turns), hints, f"{s.tokens.input}/{s.tokens.output}",
                          f"{s.cost_usd:.4f}", f"{s.wall_s:.1f}")  # fmt: skip
    out.print(table)
    for r in results:
        if r.run_dir:
            out.print(r.run_dir)
    failed = [r for r in results if r.error]
    for r in failed:
        console.print(f"[red]error:[/] {r.job}: {r.error}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


@app.command()
def distill(
    judge: Optional[str] = typer.Option(
        None, "--judge", help="Grade runs with a model too: anthropic, openai, claude-code"
    ),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Model for --judge"),
) -> None:
    """Load new trajectories into DuckDB, build the SQL models, and cut slices, pairs, KTO rows,
    SFT segments and reviews into distilled/."""
    from .distill import distill as run_distill

    warn = lambda msg: console.print(f"[yellow]warning:[/] {msg}", highlight=False)  # noqa: E731
    with ExitStack() as stack:
        reviewer = None
        if judge:
            from .agents.factory import make_agent
            from .distill.judge import LLMJudge

            agent = stack.enter_context(make_agent(judge, judge_model))
            if agent.synthetic:
                raise ConfigError(f"the judge needs a model backend, not {judge!r}")
            reviewer = LLMJudge(state.rules.distill.reviewer, state.rules.hash, agent, log=warn)
        with _progress() as progress:
            task = progress.add_task("loading trajectories", total=None)
            step = lambda n, total: progress.update(task, completed=n, total=total)  # noqa: E731
            report = run_distill(state.store, state.rules, log=warn, progress=step, reviewer=reviewer)
    loaded = report.analytics.load
    for bad in loaded.bad_lines:
        warn(f"{bad} (left out)")
    out.print(f"loaded {len(loaded.loaded)} trajectories ({loaded.events} events), {loaded.unchanged} unchanged, "
              f"{len(loaded.removed)} removed; {len(report.analytics.models)} SQL models built")  # fmt: skip
    table = Table("output", "rows")
    for name, n in report.counts.items():
        table.add_row(name, str(n))
    out.print(table)
    out.print(str(report.out_dir))


@app.command("export")
def export_cmd(
    formats: list[str] = typer.Option(["all"], "--format", help="sft, dpo, kto, atif, swebench or all (repeatable)"),
    out_dir: Path = typer.Option(..., "--out", help="Directory to write the dataset to"),
    allow_synthetic: bool = typer.Option(False, "--allow-synthetic", help="Include the oracle's synthetic runs"),
) -> None:
    """Write distilled data in trainers' formats (JSONL + Parquet) with a dataset card."""
    from .export import export

    report = export(state.store, formats, out_dir, allow_synthetic=allow_synthetic)
    table = Table("file", "rows")
    for name, n in sorted(report.rows.items()):
        table.add_row(name, str(n))
    out.print(table)
    refused = sum(report.refused_synthetic.values())
    if refused:
        console.print(f"[yellow]refused {refused} synthetic rows[/] (pass --allow-synthetic to include them)")
    if report.discarded:
        console.print(f"discarded {sum(report.discarded.values())} rows of runs rejected for cheating or memorisation")
    out.print(str(out_dir / "README.md"))


@app.command("verify-tasks")
def verify_tasks_cmd(
    task: list[str] = typer.Option([], "--task", help="Only these task ids (repeatable; default: all cards)"),
) -> None:
    """Rebuild each task card's environment from the card alone (Docker) and prove the reference
    solution scores 1 and an empty attempt 0; cards that do not reproduce are dropped with the reason."""
    from .export.verify import verify_tasks

    with _progress() as progress:
        progress.add_task("verifying task cards", total=None)
        checks = verify_tasks(state.store, state.rules, only=task or None, log=console.print)
    table = Table("task", "reproduced", "reference", "empty", "reason")
    for c in checks:
        table.add_row(c.task_id, "yes" if c.reproduced else "no", c.reference_reward, c.empty_reward, c.reason)
    out.print(table)
    if not all(c.reproduced for c in checks):
        raise typer.Exit(1)


@app.command()
def demo(
    store: Optional[Path] = typer.Option(None, "--store", help="Store directory (default: the global --store)"),
    sandbox: str = typer.Option("auto", "--sandbox", help=BACKEND_HELP, callback=_backend),
) -> None:
    """The whole factory on the bundled example repository, offline: plan, environment, validation,
    the oracle Dev's chain, distillation, export and the report. Re-running reuses what exists."""
    from .demo import run_demo

    s = Store(store) if store else state.store
    if sandbox not in ("auto", "docker", "local"):
        raise ConfigError(f"--sandbox {sandbox!r}: use docker, local or auto")
    log = lambda msg: console.print(f"  {msg}", highlight=False, markup=False)  # noqa: E731
    with _progress() as progress:
        task = progress.add_task("demo", total=9)
        done = []

        def stage(name: str) -> None:
            if done:
                console.print(f"[green]✓[/] {done[-1]}")
                progress.advance(task)
            done.append(name)
            progress.update(task, description=f"demo: {name}")

        result = run_demo(s, state.rules, sandbox, log=log, stage=stage)
        console.print(f"[green]✓[/] {done[-1]}")
    title = f"{result.repo} · sandbox: {result.sandbox}"
    runs = Table("milestone", "status", "turns", "hints", "reset to", title=title)
    for m in result.summaries:
        runs.add_row(m.milestone_id, m.status, str(m.turns), ",".join(f"L{x}" for x in m.hints_released) or "-",
                     (m.reset_to or "")[:12])  # fmt: skip
    out.print(runs)
    rows = Table("distilled", "rows")
    for name, n in result.counts.items():
        rows.add_row(name, str(n))
    out.print(rows)
    paths = Table("open")
    paths.add_column("path", overflow="fold")  # whole paths, to copy
    for name, path in result.paths.items():
        paths.add_row(name, str(path))
    out.print(paths)


@app.command()
def report(
    out_path: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: <store>/report/report.html)"),
) -> None:
    """One self-contained HTML report from the DuckDB models (plots and tables), with a trajectory
    viewer page per milestone run beside it."""
    from .report.report import build_report
    from .report.viewer import write_viewers

    target = out_path or state.store.report_file()
    pages = write_viewers(state.store, target.parent)
    out.print(str(build_report(state.store, target)))
    console.print(f"{len(pages)} trajectory viewer page(s) in {target.parent / 'runs'}")


@app.command()
def view(
    run_dir: Path = typer.Argument(..., help="A milestone run directory: trajectories/<repo>/<run_id>/<mid>"),
    out_path: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: <run_dir>/viewer.html)"),
) -> None:
    """One milestone run as a self-contained HTML page: every event, hints, stuck stretches."""
    from .report.viewer import view_run_dir

    out.print(str(view_run_dir(run_dir, out_path)))


def _fail(message: str, code: int) -> NoReturn:
    console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise SystemExit(code) from None


GLOBAL_OPTIONS = ("--store", "--rules")


def hoist_global_options(argv: list[str]) -> list[str]:
    """typer reads the app's own options only before the subcommand; users type them anywhere
    (`harnessforge plan REPO --store DIR`), so they are moved to the front (up to a `--`)."""
    front, rest, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg.split("=", 1)[0] in GLOBAL_OPTIONS:
            width = 1 if "=" in arg else 2
            if width == 2 and (i + 1 >= len(argv) or argv[i + 1].startswith("--")):
                raise ConfigError(f"{arg} needs a value (e.g. {arg} DIR), before or after the command")
            front += argv[i : i + width]
            i += width
            continue
        rest.append(arg)
        i += 1
    return front + rest


def main() -> None:
    """Every error a user can cause ends in one line on stderr, never a traceback: typer's usage
    errors (a bad option or argument, exit 2) and ours (exit 1)."""
    try:
        args = hoist_global_options(sys.argv[1:])
    except ConfigError as e:  # a usage error, like typer's
        _fail(str(e), 2)
    try:
        code = app(args=args, standalone_mode=False)
    except NoArgsIsHelpError:  # typer has printed the help
        raise SystemExit(2) from None
    except ClickException as e:
        ctx = getattr(e, "ctx", None)
        where = f"{ctx.command_path}: " if ctx else ""
        hint = f" (see {ctx.command_path} --help)" if ctx else ""
        _fail(f"{where}{e.format_message()}{hint}", e.exit_code)
    except typer.Abort:
        _fail("aborted", 1)
    except HarnessForgeError as e:
        _fail(str(e), 1)
    except OSError as e:  # a path the user gave that cannot be written or read (a directory, no permission)
        if e.filename is None:
            raise
        not_dir = isinstance(e, FileExistsError) and not Path(e.filename).is_dir()  # mkdir over a file
        why = "exists and is not a directory" if not_dir else e.strerror
        _fail(f"{e.filename}: {why}", 1)
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
