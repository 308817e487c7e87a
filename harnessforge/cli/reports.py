"""Reading the results: the HTML report over the analytics with its trajectory viewer pages, and
the viewer page of one milestone run."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .context import console, out, state, warn


def report(
    out_path: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: <store>/report/report.html)"),
) -> None:
    """One self-contained HTML report from the DuckDB models (plots and tables), with a trajectory
    viewer page per milestone run beside it."""
    from ..report.report import build_report
    from ..report.viewer import write_viewers

    target = out_path or state.store.report_file()
    pages = write_viewers(state.store, target.parent, log=warn)
    out.print(str(build_report(state.store, target)))
    console.print(f"{len(pages)} trajectory viewer page(s) in {target.parent / 'runs'}")


def view(
    run_dir: Path = typer.Argument(..., help="A milestone run directory: trajectories/<repo>/<run_id>/<mid>"),
    out_path: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: <run_dir>/viewer.html)"),
) -> None:
    """One milestone run as a self-contained HTML page: every event, hints, stuck stretches."""
    from ..report.viewer import view_run_dir

    out.print(str(view_run_dir(run_dir, out_path)))
