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
    dimensions = key.keys_by_dimension
    return dimensions["repo"], dimensions["milestone"]


def milestone_number(milestone_id: str) -> int:
    """`m03` -> 3: milestone ids sort by number, so m10 follows m09."""
    return int(milestone_id.lstrip("m") or 0)


def chain_order(keys) -> list[tuple[str, str]]:
    """(repo, milestone) pairs of a run's partition keys, each repo's milestones in chain order."""
    pairs = [split_repo_milestone(key) for key in keys]
    return sorted(pairs, key=lambda pair: (pair[0], milestone_number(pair[1])))


def plan_with(store: Store, key: str, milestone_id: str, log) -> MilestonePlan | None:
    """The repo's plan when it has milestone `milestone_id`; None (after logging the no-op) when it does not.

    Raises `dg.Failure` when the repo has no plan at all: that is missing upstream work, not a no-op."""
    try:
        plan = store.load_plan(key)
    except HarnessForgeError as e:
        why = f"{key}: no milestone plan yet ({e}); materialize milestone_plans first"
        raise dg.Failure(description=why, allow_retries=False) from None
    ids = [milestone.id for milestone in plan.milestones]
    if milestone_id in ids:
        return plan
    log(
        f"{key} has no milestone {milestone_id!r}: its plan has {len(ids)} milestones ({', '.join(ids) or 'none'}); "
        "nothing to do for this partition (no-op: nothing written, nothing materialized)"
    )
    return None


def has_runs_to_distill(store: Store, key: str, milestone_id: str, log) -> bool:
    """Distillation reads trajectories, not the plan: a key is a no-op when the repo's plan lacks the
    milestone, or, for a repo with no plan in the store, when no run of it was recorded."""
    if store.plan_file(key).exists():
        return plan_with(store, key, milestone_id, log) is not None
    if store.has_finished(key, milestone_id):
        return True
    log(f"{key} has no plan and no recorded run of {milestone_id!r}: nothing to distill (no-op)")
    return False
