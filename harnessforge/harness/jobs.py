"""Which chains one `run` starts: each repo once, or `chains` times as separate runs.

A job is one chain of one repo under one run id. With several chains per repo, chain i of a repo is
recorded as `<run id>-i` and its oracle seed is `seed + i - 1`, so the chains differ and each one can
be resumed by its run id. The job's name labels its progress line and its rows in the results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
