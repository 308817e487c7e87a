"""The chain's order and the attempt rule, for every driver of a run (the Navigator, the Dagster asset).

A repo's milestones are one continuous chain in one run: milestone k continues from the earlier
*valid* milestones of the same run id (the chain skips invalid ones and goes on from their verify
commit). A milestone whose run left a summary that is not ENV_ERROR is finished and not run again;
one with an event log but no such summary is resumed from it; any other starts anew.
"""

from __future__ import annotations

from typing import Literal

from ..errors import HarnessForgeError
from ..models.plan import MilestonePlan
from ..models.run import MilestoneSummary
from ..store import RunFiles, Store
from .recorder import read_summary

AttemptKind = Literal["new", "resumed", "reused"]
Stage = Literal["validate", "run"]
_ADVICE = {"validate": "validate it first", "run": "run it first in the same run"}


class ChainOrderError(HarnessForgeError):
    """An earlier milestone has to be done first: validated (its place in the chain is unknown until
    then), or run to its end in the same run."""

    def __init__(self, repo_key: str, milestone_id: str, earlier: str, stage: Stage, reason: str):
        self.repo_key, self.milestone_id, self.earlier, self.stage = repo_key, milestone_id, earlier, stage
        self.reason = reason  # e.g. "earlier milestone m05 is not validated yet"
        super().__init__(f"{repo_key} {milestone_id}: the chain runs in order, and {reason}: {_ADVICE[stage]}")


def chain_predecessor(store: Store, plan: MilestonePlan, milestone_id: str, run_id: str) -> str | None:
    """The earlier milestone `milestone_id` continues from (None: it starts the chain), once the
    chain up to it is there; else `ChainOrderError` names the earliest milestone to do first."""
    key = plan.repo.key
    ids = [milestone.id for milestone in plan.milestones]
    previous = None
    for earlier in plan.milestones[: ids.index(milestone_id)]:
        if earlier.status is None:
            reason = f"earlier milestone {earlier.id} is not validated yet"
            raise ChainOrderError(key, milestone_id, earlier.id, "validate", reason)
        if not earlier.is_task:
            continue  # the chain skips it (not valid, or held back) and goes on from its verify commit
        if not store.milestone_run(key, run_id, earlier.id).finished():
            reason = f"run {run_id!r} has no finished trajectory for {earlier.id} yet"
            raise ChainOrderError(key, milestone_id, earlier.id, "run", reason)
        previous = earlier.id
    return previous


def finished_summary(files: RunFiles) -> MilestoneSummary | None:
    """The summary of a milestone the run has finished; None when it is to run (ENV_ERROR is unfinished:
    the milestone resumes from its log)."""
    summary = read_summary(files.dir) if files.finished() else None
    return None if summary is None or summary.status == "ENV_ERROR" else summary


def attempt_kind(files: RunFiles) -> AttemptKind:
    """What running the milestone again in the same run does: report it (reused), continue its event log
    (resumed), or start it (new)."""
    if finished_summary(files) is not None:
        return "reused"
    return "resumed" if files.started() else "new"
