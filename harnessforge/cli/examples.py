"""The bundled example repositories: build one, or run the whole factory on it (`demo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ConfigError, HarnessForgeError
from ..examples import build_example_repo
from ..store import Store
from .context import console, out, state
from .options import sandbox_option
from .rendering import counts_table, demo_chain_table, paths_table, progress_bars

DEMO_STAGES = 9  # the stages `run_demo` announces


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
    from ..examples.patterns import PATTERNS, build_pattern

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


def demo(
    store: Optional[Path] = typer.Option(None, "--store", help="Store directory (default: the global --store)"),
    sandbox: str = sandbox_option(),
) -> None:
    """The whole factory on the bundled example repository, offline: plan, environment, validation,
    the oracle Dev's chain, distillation, export and the report. Re-running reuses what exists."""
    from ..demo import run_demo

    demo_store = Store(store) if store else state.store

    def log(message: str) -> None:
        console.print(f"  {message}", highlight=False, markup=False)

    with progress_bars() as progress:
        task = progress.add_task("demo", total=DEMO_STAGES)
        done = []

        def stage(name: str) -> None:
            if done:
                console.print(f"[green]✓[/] {done[-1]}")
                progress.advance(task)
            done.append(name)
            progress.update(task, description=f"demo: {name}")

        result = run_demo(demo_store, state.rules, sandbox, log=log, stage=stage)
        console.print(f"[green]✓[/] {done[-1]}")
    out.print(demo_chain_table(result))
    out.print(counts_table("distilled", result.counts))
    out.print(paths_table(result.paths))
