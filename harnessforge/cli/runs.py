"""Stage 3 command: the Dev agent walks each repo's milestone chain, chains side by side."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import typer
from pydantic import ValidationError
from rich.progress import Progress

from ..agents.base import AgentBackend
from ..agents.factory import make_agent, parse_profiles, sampling_of
from ..agents.oracle import PROFILES
from ..errors import HarnessForgeError
from ..harness.jobs import ChainJob, check_milestone_ids, expand_jobs
from ..harness.stopping import stop_on_signals
from ..models.common import first_error
from ..repos import spec_for
from ..rules import Sampling
from ..store import check_run_id
from .context import console, out, state
from .options import AGENT_HELP, MODEL_AGENTS, check_model_backend, sandbox_option
from .rendering import chains_table, progress_bars, turn_description

if TYPE_CHECKING:
    from ..harness.navigator import Navigator
    from ..harness.parallel import ChainResult


def run(
    repos: list[str] = typer.Argument(..., help="Validated repos: keys, paths, URLs or owner/name"),
    agent: str = typer.Option("oracle", "--agent", help=AGENT_HELP),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        help="Model name for the model backends; PROVIDER/MODEL for mini-swe-agent and openharness",
    ),
    milestones: Optional[str] = typer.Option(None, "--milestones", help="Comma-separated ids (default: all valid)"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Name of the run (default: <agent>-<random>)"),
    sandbox: str = sandbox_option(),
    workers: int = typer.Option(4, "--workers", min=1, help="Chains that run at the same time"),
    chains: int = typer.Option(
        1, "--chains", min=1, help="Chains per repo, each its own run: <run-id>-1 … <run-id>-N (oracle: seed+i-1)"
    ),
    seed: int = typer.Option(0, "--seed", help="oracle: random seed"),
    profile: list[str] = typer.Option([], "--profile", help=f"oracle: MID={'|'.join(PROFILES)}"),
    mode: str = typer.Option("standard", "--mode", help="What the Dev is given (rules harness.modes): probe, hard…"),
    harness_profile: str = typer.Option(
        "V0", "--harness-profile", help="V1 plan first, V2 plan review, V3 checkpoints (rules harness.harness_profiles)"
    ),
    mentor: Optional[str] = typer.Option(
        None, "--mentor", help=f"A model ({MODEL_AGENTS}) words each hint for the Dev's situation (seed 000)"
    ),
    mentor_model: Optional[str] = typer.Option(None, "--mentor-model", help="Model name for --mentor"),
    tests: Optional[str] = typer.Option(
        None,
        "--tests",
        help="visible: the acceptance tests in the workspace; hidden: applied only when grading "
        "(default: rules harness.test_visibility)",
    ),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="openai, anthropic (harness.sampling)"),
    top_p: Optional[float] = typer.Option(None, "--top-p", help="openai/anthropic (rules harness.sampling)"),
    max_output_tokens: Optional[int] = typer.Option(
        None, "--max-output-tokens", help="An answer's cap (default: the model's, rules harness.context.windows)"
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="One model call's timeout in seconds"),
) -> None:
    """Run a Dev agent through each repo's milestone chain (repos in parallel, each chain in order);
    trajectories go to trajectories/<key>/<run_id>/. With --chains N, N independent runs of each repo."""
    from ..harness.parallel import run_chains

    profiles = parse_profiles(profile)
    if run_id is not None:
        check_run_id(run_id)  # it names a folder: refused before any work
    try:
        asked = Sampling(temperature=temperature, top_p=top_p, max_output_tokens=max_output_tokens, timeout_s=timeout)
    except ValidationError as e:
        raise typer.BadParameter(first_error(e)) from None
    sampling = sampling_of(agent, model, state.rules.harness, asked)
    context = state.rules.harness.context  # (a scaffold that compacts itself: its model's window)
    make_agent(agent, model, seed=seed, profiles=profiles, sampling=sampling, context=context).close()  # before work
    state.rules.harness.mode(mode), state.rules.harness.harness_profile(harness_profile)
    if mentor:
        check_model_backend(mentor, "--mentor")
        make_agent(mentor, mentor_model).close()
    if tests not in (None, "visible", "hidden"):
        raise typer.BadParameter(f"--tests must be visible or hidden, not {tests!r}")
    options = RunChoices(mode, harness_profile, mentor, mentor_model, tests)

    def fresh_run_id() -> str:
        return f"{agent}-{uuid.uuid4().hex[:8]}"

    def make_dev(job_seed: int) -> AgentBackend:
        return make_agent(agent, model, seed=job_seed, profiles=profiles, sampling=sampling, context=context)

    jobs = {job.name: job for job in expand_jobs(repos, run_id, seed, chains, new_run_id=fresh_run_id)}
    wanted = [part.strip() for part in milestones.split(",") if part.strip()] if milestones else None
    for repo in dict.fromkeys(job.repo for job in jobs.values()):  # an id naming no milestone: before any work
        try:
            plan = state.store.load_plan(spec_for(state.store, repo).key)
        except HarnessForgeError:
            continue  # no such repository or plan: its chain says so, the others run
        check_milestone_ids(plan, wanted or [], "--milestones")
        check_milestone_ids(plan, profiles, "--profile")
    with progress_bars() as progress:

        def navigator(name: str) -> Navigator:
            return chain_navigator(jobs[name], make_dev, sandbox, progress, options)

        with stop_on_signals(console.print):  # Ctrl-C, SIGTERM: after the current tool call, resumable
            results = run_chains(list(jobs), navigator, workers, wanted, log=lambda _: None)
    report_chains(results)


@dataclass(frozen=True)
class RunChoices:
    """What `run` sets for every chain besides the Dev: the mode, the harness profile, the model Mentor."""

    mode: str = "standard"
    harness_profile: str = "V0"
    mentor: str | None = None
    mentor_model: str | None = None
    test_visibility: str | None = None  # None: the rules' harness.test_visibility


def chain_navigator(
    job: ChainJob,
    make_dev: Callable[[int], AgentBackend],
    sandbox: str,
    progress: Progress,
    options: RunChoices = RunChoices(),
) -> Navigator:
    """The Navigator of one job, with its own progress line."""
    from ..harness.navigator import Navigator

    task = progress.add_task(f"{job.name}: starting", total=None)

    def on_turn(milestone_id: str, turn: int, max_turns: int, level: int, tests) -> None:
        progress.update(task, description=turn_description(job.name, milestone_id, turn, max_turns, level, tests))

    return Navigator(
        state.store,
        job.repo,
        make_dev(job.seed),
        state.rules,
        run_id=job.run_id,
        backend=sandbox,
        log=lambda message: console.print(f"{job.name}: {message}"),
        on_turn=on_turn,
        mentor=make_agent(options.mentor, options.mentor_model) if options.mentor else None,
        mode=options.mode,
        harness_profile=options.harness_profile,
        test_visibility=options.test_visibility,
    )


def report_chains(results: list[ChainResult]) -> None:
    """The table of every milestone run, each run's folder, and one error line per failed chain (exit 1)."""
    out.print(chains_table(results))
    for result in results:
        if result.run_dir:
            out.print(result.run_dir)
    failed = [result for result in results if result.error]
    for result in failed:
        console.print(f"[red]error:[/] {result.job}: {result.error}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)
