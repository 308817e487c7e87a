"""Partitions. Repo keys are `owner__name`: no `|`, `,`, `/` or brackets, so they are safe as
dynamic partition keys and as one dimension of the repo x milestone partitions.

Milestones are an *ordinal* dimension (`m01`, `m02`, ...), shared by every repo: a Dagster
multi-partition is a full cross product and has no "milestones of this repo" (dagster#14228), so
`repo x milestone` holds every (repo, mNN) pair, and an asset run on a pair the repo's plan does
not have fails with a clear message instead of doing work. The milestone dimension is dynamic: each
`milestone_plans` run registers the ids of its plan, so the dimension grows to the longest plan
seen and no maximum has to be fixed up front. Build keys with `repo_milestone_key`, never by hand:
Dagster sorts dimensions by name, so the string form is `m03|owner__name`.
"""

import dagster as dg

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
