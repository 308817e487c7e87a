"""Several chains at once: one worker per chain, each chain strictly in order.

Repos are independent (own plan, sandboxes, run directory), so their chains run side by side. A
chain itself stays sequential: each milestone starts from the state the previous one left.
Threads suffice, as the work is waiting on sandboxes and model APIs. One chain failing (a repo
without a plan, an API outage) is reported and does not stop the others.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import HarnessForgeError
from ..models.run import MilestoneSummary
from .navigator import Navigator


@dataclass
class ChainResult:
    job: str
    run_dir: str | None = None
    summaries: list[MilestoneSummary] = field(default_factory=list)
    error: str | None = None


def run_chains(
    jobs: list[str],
    navigator: Callable[[str], Navigator],
    workers: int,
    milestones: list[str] | None = None,
    log=print,
) -> list[ChainResult]:
    """Run `navigator(job)`'s chain for every job (usually a repo), `workers` at a time; results in
    job order. Each Navigator's agent is closed when its chain ends."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")

    def one(job: str) -> ChainResult:
        try:
            chain_navigator = navigator(job)
            lock = chain_navigator.store.chain_lock(chain_navigator.key, chain_navigator.run_id, wait=False)
            with lock, chain_navigator.agent:  # one writer per run: a second command is refused before it acts
                return ChainResult(job, str(chain_navigator.run_dir), chain_navigator.run(milestones))
        except HarnessForgeError as e:
            log(f"{job}: {e}")
            return ChainResult(job, error=str(e))

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="chain") as pool:
        return list(pool.map(one, jobs))
