"""Stage 4 commands: distil the trajectories, export them in trainers' formats, re-verify the task
cards, and the JSON Schemas of every artifact."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..errors import ConfigError
from ..models import export_schemas
from .context import console, out, state, warn
from .options import MODEL_AGENTS
from .rendering import card_checks_table, counts_table, progress_bars

if TYPE_CHECKING:
    from ..distill.judge import LLMJudge


def schema(out_dir: Path = typer.Option(..., "--out", help="Directory for <Model>.schema.json files")) -> None:
    """Export the JSON Schema of every artifact model."""
    for path in export_schemas(out_dir):
        out.print(str(path))


def distill(
    judge: Optional[str] = typer.Option(None, "--judge", help=f"Grade runs with a model too: {MODEL_AGENTS}"),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Model for --judge"),
) -> None:
    """Load new trajectories into DuckDB, build the SQL models, and cut slices, pairs, KTO rows,
    SFT segments and reviews into distilled/."""
    from ..distill import distill as run_distill

    with ExitStack() as stack:
        reviewer = model_judge(stack, judge, judge_model) if judge else None
        with progress_bars() as progress:
            task = progress.add_task("loading trajectories", total=None)

            def step(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            report = run_distill(state.store, state.rules, log=warn, progress=step, reviewer=reviewer)
    loaded = report.analytics.load
    for bad in loaded.bad_lines:
        warn(f"{bad} (left out)")
    for path in loaded.rebuilt:
        warn(f"{path}: could not be read; rebuilt from the trajectory logs")
    out.print(
        f"loaded {len(loaded.loaded)} trajectories ({loaded.events} events), {loaded.unchanged} unchanged, "
        f"{len(loaded.removed)} removed; {len(report.analytics.models)} SQL models built"
    )
    out.print(counts_table("output", report.counts))
    out.print(str(report.out_dir))


def model_judge(stack: ExitStack, judge: str, judge_model: str | None) -> LLMJudge:
    """`distill --judge`: the reviewer that grades runs with a model (closed when `stack` ends)."""
    from ..agents.factory import make_agent
    from ..distill.judge import LLMJudge

    agent = stack.enter_context(make_agent(judge, judge_model))
    if agent.synthetic:
        raise ConfigError(f"the judge needs a model backend, not {judge!r}")
    return LLMJudge(state.rules.distill.reviewer, state.rules.hash, agent, log=warn)


def export(
    formats: list[str] = typer.Option(
        ["all"],
        "--format",
        help="sft, dpo, kto, atif, swebench, harbor or all (repeatable)",
    ),
    out_dir: Path = typer.Option(..., "--out", help="Directory to write the dataset to"),
    allow_synthetic: bool = typer.Option(False, "--allow-synthetic", help="Include the oracle's synthetic runs"),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="A local Hugging Face tokenizer: the card counts tokens with its chat template"
    ),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out folder that is no earlier export"),
) -> None:
    """Write distilled data in trainers' formats (JSONL + Parquet) with a dataset card."""
    from ..export import export as export_datasets

    report = export_datasets(
        state.store, formats, out_dir, allow_synthetic, state.rules, tokenizer=tokenizer, force=force
    )
    out.print(counts_table("file", dict(sorted(report.rows.items()))))
    refused = sum(report.refused_synthetic.values())
    if refused:
        console.print(f"[yellow]refused {refused} synthetic rows[/] (pass --allow-synthetic to include them)")
    if report.discarded:
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(report.discarded_for.items()))
        console.print(f"discarded {sum(report.discarded.values())} rows of runs the Reviewer rejected ({reasons})")
    if not report.verified:
        console.print("[yellow]no Harbor tasks or SWE-bench instances[/]: run `harnessforge verify-tasks` first")
    elif report.unverified_cards:
        console.print(
            f"[yellow]{len(report.unverified_cards)} task cards not verified[/]: run `harnessforge verify-tasks`"
        )
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {warning}", markup=True, highlight=False)
    out.print(str(out_dir / "README.md"))


def verify_tasks(
    task: list[str] = typer.Option([], "--task", help="Only these task ids (repeatable; default: all cards)"),
) -> None:
    """Rebuild each task card's environment from the card alone (Docker) and prove the reference
    solution scores 1 and an empty attempt 0; cards that do not reproduce are dropped with the reason."""
    from ..export.verify import verify_tasks as verify

    with progress_bars() as progress:
        progress.add_task("verifying task cards", total=None)
        checks = verify(state.store, state.rules, only=task or None, log=console.print)
    out.print(card_checks_table(checks))
    if not all(check.reproduced for check in checks):
        raise typer.Exit(1)
