"""Which chains one `run` starts: each repo once, or `chains` times as separate runs.

A job is one chain of one repo under one run id. With several chains per repo, chain i of a repo is
recorded as `<run id>-i` and its oracle seed is `seed + i - 1`, so the chains differ and each one can
be resumed by its run id. The job's name labels its progress line and its rows in the results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..models import MilestonePlan


@dataclass(frozen=True)
class ChainJob:
    name: str
    repo: str
    run_id: str | None  # None: the Navigator names the run
    seed: int


def expand_jobs(
    repos: Sequence[str],
    run_id: str | None,
    seed: int,
    chains: int,
    new_run_id: Callable[[], str],
) -> list[ChainJob]:
    """One job per (repo, chain), repos in the order given (a repo named twice counts once).

    `new_run_id()` names the runs when there are several chains per repo and no `run_id` was given."""
    if chains < 1:
        raise ValueError(f"chains must be at least 1, got {chains}")
    unique = list(dict.fromkeys(repos))
    if chains == 1:
        return [ChainJob(repo, repo, run_id, seed) for repo in unique]
    base = run_id or new_run_id()
    return [
        ChainJob(f"{repo} {base}-{index}", repo, f"{base}-{index}", seed + index - 1)
        for repo in unique
        for index in range(1, chains + 1)
    ]


def check_milestone_ids(plan: MilestonePlan, ids: Iterable[str], option: str) -> None:
    """Refuses ids naming no milestone of `plan` before any work (`run --milestones m99` ran nothing and said so
    with exit 0): a ConfigError naming the option, the ids and the plan's milestones."""
    known = [milestone.id for milestone in plan.milestones]
    unknown = sorted(set(ids) - set(known))
    if unknown:
        have = f"{known[0]}..{known[-1]}" if known else "none"
        raise ConfigError(f"{option}: {', '.join(unknown)} name no milestone of {plan.repo.key} (it has {have})")
