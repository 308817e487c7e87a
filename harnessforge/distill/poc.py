"""The proof of concept, measured: seed 001's criteria, and each repository's yield funnel.

Criteria (rules' `distill.poc`): at least `accepted_share` of milestone runs pass the Reviewer (seed
001: a run that passed its milestone and that the Reviewer kept, no discard reason at all: a STUCK or
too-easy run does not count), at least one verified
task of difficulty `min_task_difficulty` or more, every task card's environment rebuilt and
reproduced by `verify-tasks`, and every exported format loaded by its own tool (the export records
those checks; see `export.format_checks`). A criterion with nothing to measure yet is `None`, not a
pass. The funnel counts milestones per repository at each stage: planned, valid, run, passed,
accepted (a task card), verified (`verify-tasks` reproduced it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ArtifactError
from ..rules import Rules
from ..store import Store
from .outputs import REVIEWS, TASK_CARDS, VERIFIED_TASKS, read_distilled

FUNNEL = ("planned", "valid", "run", "passed", "accepted", "verified")


@dataclass
class Criterion:
    name: str
    target: str
    measured: str
    passed: bool | None  # None: nothing to measure yet


def funnel(store: Store) -> dict[str, dict[str, int]]:
    """Milestones per repository at each stage of `FUNNEL`."""
    reviews, cards, verified = (read_distilled(store, output) for output in (REVIEWS, TASK_CARDS, VERIFIED_TASKS))
    current = {card.task_id for card in cards}
    out: dict[str, dict[str, int]] = {}
    for key in store.repo_keys():
        try:
            milestones = store.load_plan(key).milestones
        except ArtifactError:
            continue  # registered, not planned
        runs = [review for review in reviews if review.repo == key]
        out[key] = {
            "planned": len(milestones),
            "valid": sum(milestone.status == "valid" for milestone in milestones),
            "run": len({review.milestone_id for review in runs}),
            "passed": len({review.milestone_id for review in runs if review.status == "PASS"}),
            "accepted": sum(card.repo == key for card in cards),
            "verified": sum(card.repo == key and card.task_id in current for card in verified),
        }
    return out


def criteria(store: Store, rules: Rules, format_checks: dict[str, str | None] | None = None) -> list[Criterion]:
    """Seed 001's criteria over the store; `format_checks`: per exported file or folder, None when its
    tool loaded it, else why not (None for the whole argument: no export checked yet)."""
    poc = rules.distill.poc
    reviews = read_distilled(store, REVIEWS)
    accepted = [review for review in reviews if review.status == "PASS" and not review.discard_reasons]
    share = len(accepted) / len(reviews) if reviews else 0.0
    current = {card.task_id for card in read_distilled(store, TASK_CARDS)}
    verified = [card for card in read_distilled(store, VERIFIED_TASKS) if card.task_id in current]
    hard = [card for card in verified if (card.difficulty or 0) >= poc.min_task_difficulty]
    checks_file = store.task_checks_file()
    checks = json.loads(checks_file.read_text()) if checks_file.exists() else []
    rebuilt = [check for check in checks if check["reproduced"]]
    failed_formats = {name: why for name, why in (format_checks or {}).items() if why}
    return [
        Criterion(
            "runs pass the Reviewer",
            f">= {poc.accepted_share:.0%} of milestone runs",
            f"{len(accepted)} of {len(reviews)} ({share:.0%})",
            share >= poc.accepted_share if reviews else None,
        ),
        Criterion(
            "a hard verified task",
            f">= 1 of difficulty >= {poc.min_task_difficulty}",
            f"{len(hard)} of {len(verified)} verified tasks",
            bool(hard) if verified else None,
        ),
        Criterion(
            "every task's environment rebuilds and reproduces",
            "all task cards checked by verify-tasks",
            f"{len(rebuilt)} of {len(checks)} reproduced ({len(current)} cards)" if checks else "verify-tasks not run",
            (len(rebuilt) == len(checks) and {check["task_id"] for check in checks} >= current) if checks else None,
        ),
        Criterion(
            "every format loads in its tool",
            "each exported file loaded by its tool",
            "export not checked"
            if format_checks is None
            else f"{len(format_checks) - len(failed_formats)} of {len(format_checks)} loaded"
            + "".join(f"; {name}: {why}" for name, why in sorted(failed_formats.items())),
            None if format_checks is None else not failed_formats,
        ),
    ]
