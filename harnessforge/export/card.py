"""The dataset card (README.md of an export): what is in it, where it came from, how to load it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..analytics.rows import MemorisationRateRow
from ..models.distill import Review
from .trainers import files_section


def dataset_card(
    report,
    reviews: list[Review],
    manifest: dict[str, Any],
    allow_synthetic: bool,
    rates: list[MemorisationRateRow] = (),
) -> str:
    kept = [review for review in reviews if allow_synthetic or not review.synthetic]
    difficulty = Counter(review.difficulty for review in kept)
    value = Counter(review.rl_value for review in kept)
    hints = Counter(review.max_hint_level for review in kept)
    lines = [
        "# HarnessForge export",
        "",
        "Coding-agent training data distilled from milestone-chain runs on real repositories' release history.",
        f"Rules hash `{manifest['rules_hash']}`, distilled {manifest['created_at']}.",
        "",
        *files_section(report),
        "## Milestone runs reviewed",
        "",
        "| difficulty | runs |",
        "|---|---|",
        *[f"| {level} | {difficulty[level]} |" for level in range(1, 6)],
        "",
        "| highest hint level | runs |",
        "|---|---|",
        *[f"| {'none' if level == 0 else f'L{level}'} | {hints[level]} |" for level in range(5)],
        "",
        "| RL value | runs |",
        "|---|---|",
        *[f"| {rl_value} | {value[rl_value]} |" for rl_value in ("high", "medium", "low", "reject")],
        "",
        "## Left out",
        "",
        f"- synthetic rows (the offline oracle's runs) refused: {sum(report.refused_synthetic.values())}"
        + (" (synthetic rows were allowed in this export)" if allow_synthetic else ""),
        *[f"  - {kind}: {count}" for kind, count in sorted(report.refused_synthetic.items())],
        f"- rows of rejected runs left out by the rules' `distill.gates`: {sum(report.discarded.values())}",
        *[f"  - {kind}: {count}" for kind, count in sorted(report.discarded.items())],
        *[f"  - for {reason}: {count}" for reason, count in sorted(report.discarded_for.items())],
        *_tasks_left_out(report),
        "",
        *poc_lines(report.poc, report.funnel),
        "## Splits and contamination",
        "",
        *_splits(report),
        "Every row carries `contamination_risk` (high: the milestone's solution was committed before the Dev",
        "model's training cutoff, `distill.contamination.cutoffs`; medium: within `margin_days` after it; low:",
        "later; unknown: no cutoff for the model) with `verify_commit_date`, `model_cutoff` and `repo_created_at`.",
        "",
    ]
    modes = Counter((review.mode, review.harness_profile) for review in kept)
    if modes:
        lines += ["## Modes", "", "| mode | harness profile | runs |", "|---|---|---|"]
        lines += [f"| {mode} | {profile} | {count} |" for (mode, profile), count in sorted(modes.items())] + [""]
    if rates:
        lines += [
            "## Memorisation probe",
            "",
            "| repo | model | probe runs | located | rate |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {r.repo} | {r.model} | {r.probe_runs} | {r.located_runs} | {r.rate:.0%} |" for r in rates]
        lines += [""] + [f"**Warning**: {rate.warning_text()}." for rate in rates if rate.warning] + [""]
    return "\n".join(lines)


def _tasks_left_out(report) -> list[str]:
    """Harbor tasks and SWE-bench instances come only from cards `verify-tasks` reproduced."""
    if not report.verified:
        return ["- Harbor tasks and SWE-bench instances: none, `harnessforge verify-tasks` has not run on this store"]
    if report.unverified_cards:
        return [
            f"- task cards not (or no longer) verified, so not Harbor tasks or SWE-bench instances: "
            f"{len(report.unverified_cards)} ({', '.join(report.unverified_cards)}); run `harnessforge verify-tasks`"
        ]
    return []


def _splits(report) -> list[str]:
    if not report.heldout_repos:
        return ["All rows are `split: train` (no repository is held out: rules `export.heldout`).", ""]
    return [
        f"Held out (`split: heldout`, under `heldout/` in the same layout): {', '.join(report.heldout_repos)}.",
        "Their rows are in no training file; evaluate on them.",
        "",
    ]


def poc_lines(poc, funnel) -> list[str]:
    """Seed 001's criteria with pass/fail, and each repository's yield funnel (milestones per stage)."""
    mark = {True: "PASS", False: "FAIL", None: "not measured yet"}
    lines = ["## Proof of concept (seed 001's criteria)", "", "| criterion | target | measured | result |"]
    lines += ["|---|---|---|---|"]
    lines += [f"| {c.name} | {c.target} | {c.measured} | {mark[c.passed]} |" for c in poc]
    if funnel:
        stages = list(next(iter(funnel.values())))
        lines += ["", "Yield per repository (milestones at each stage):", ""]
        lines += ["| repo | " + " | ".join(stages) + " |", "|---|" + "---|" * len(stages)]
        lines += [f"| {repo} | " + " | ".join(str(counts[s]) for s in stages) + " |" for repo, counts in funnel.items()]
    return lines + [""]
