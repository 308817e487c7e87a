"""Partitions. Repo keys are `owner__name`: no `|`, `,`, `/` or brackets, so they are safe as
dynamic partition keys and as one dimension of the repo x milestone partitions.

Milestones are an *ordinal* dimension (`m01`, `m02`, ...), shared by every repo: a Dagster
multi-partition is a full cross product and has no "milestones of this repo" (dagster#14228), so
`repo x milestone` holds every (repo, mNN) pair. An asset run on a pair the repo's plan does not
have is an explicit no-op: it logs why, writes nothing and records no materialization (the assets
are `output_required=False`), so the step succeeds and its downstream steps are skipped. The
milestone dimension is dynamic: each
`milestone_plans` run registers the ids of its plan, so the dimension grows to the longest plan
seen and no maximum has to be fixed up front. Build keys with `repo_milestone_key`, never by hand:
Dagster sorts dimensions by name, so the string form is `m03|owner__name`.
"""

import dagster as dg

from harnessforge.errors import HarnessForgeError
from harnessforge.models.plan import MilestonePlan
from harnessforge.store import Store

repo_partitions = dg.DynamicPartitionsDefinition(name="repo")
milestone_partitions = dg.DynamicPartitionsDefinition(name="milestone")
repo_milestone_partitions = dg.MultiPartitionsDefinition({"repo": repo_partitions, "milestone": milestone_partitions})


def repo_milestone_key(repo: str, milestone: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"repo": repo, "milestone": milestone})


def split_repo_milestone(key: dg.MultiPartitionKey | str) -> tuple[str, str]:
    """(repo key, milestone id) of a repo x milestone partition key."""
    if not isinstance(key, dg.MultiPartitionKey):
        key = repo_milestone_partitions.get_partition_key_from_str(key)
    dims = key.keys_by_dimension
    return dims["repo"], dims["milestone"]


def chain_order(keys) -> list[tuple[str, str]]:
    """(repo, milestone) pairs of a run's partition keys, each repo's milestones in chain order."""
    return sorted((split_repo_milestone(k) for k in keys), key=lambda rm: (rm[0], int(rm[1].lstrip("m") or 0)))


def plan_with(s: Store, key: str, mid: str, log) -> MilestonePlan | None:
    """The repo's plan when it has milestone `mid`; None (after logging the no-op) when it does not.

    Raises `dg.Failure` when the repo has no plan at all: that is missing upstream work, not a no-op."""
    try:
        plan = s.load_plan(key)
    except HarnessForgeError as e:
        raise dg.Failure(description=f"{key}: no milestone plan yet ({e}); materialize milestone_plans first",
                         allow_retries=False) from None  # fmt: skip
    ids = [m.id for m in plan.milestones]
    if mid in ids:
        return plan
    log(f"{key} has no milestone {mid!r}: its plan has {len(ids)} milestones ({', '.join(ids) or 'none'}); "
        "nothing to do for this partition (no-op: nothing written, nothing materialized)")  # fmt: skip
    return None


def has_runs_to_distill(s: Store, key: str, mid: str, log) -> bool:
    """Distillation reads trajectories, not the plan: a key is a no-op when the repo's plan lacks `mid`,
    or, for a repo with no plan in the store, when no run of `mid` was recorded."""
    if s.plan_file(key).exists():
        return plan_with(s, key, mid, log) is not None
    if s.has_finished(key, mid):
        return True
    log(f"{key} has no plan and no recorded run of {mid!r}: nothing to distill (no-op)")
    return False
