"""Scaffolds side by side: per milestone that two or more scaffolds ran, each one's runs."""

from __future__ import annotations

from dataclasses import dataclass

from ..analytics.rows import MilestoneSummaryRow


@dataclass(frozen=True)
class ScaffoldRow:
    """One scaffold's runs of one milestone: what the report compares across scaffolds."""

    repo: str
    milestone_id: str
    scaffold: str
    models: str
    runs: int
    passed: int
    turns: float
    hints: float
    tokens: float


def scaffold_comparison(runs: list[MilestoneSummaryRow]) -> list[ScaffoldRow]:
    """Per milestone that two or more scaffolds ran (the oracle's runs left out), each scaffold's runs:
    how many passed, and the mean turns, hints and tokens (input + output) per run."""
    by_milestone: dict[tuple[str, str], dict[str, list[MilestoneSummaryRow]]] = {}
    for run in runs:
        if run.synthetic:
            continue
        name = f"{run.scaffold} {run.scaffold_version}" if run.scaffold_version else run.scaffold
        by_milestone.setdefault((run.repo, run.milestone_id), {}).setdefault(name, []).append(run)
    rows = []
    for (repo, milestone_id), scaffolds in sorted(by_milestone.items()):
        if len({name.split()[0] for name in scaffolds}) < 2:
            continue
        for name, group in sorted(scaffolds.items()):
            count = len(group)
            rows.append(
                ScaffoldRow(
                    repo,
                    milestone_id,
                    name,
                    ", ".join(sorted({run.model or "" for run in group})),
                    count,
                    sum(run.status == "PASS" for run in group),
                    sum(run.turns or 0 for run in group) / count,
                    sum(run.hints for run in group) / count,
                    sum(run.tokens_input + run.tokens_output for run in group) / count,
                )
            )
    return rows
