"""Stage 2 asset: the Dev's raw trajectory on one milestone of a repo's chain.

Chain order. A repo's milestones are one continuous chain: milestone k runs after k-1 of the same
run (the Dev carries on from there). Dagster cannot express this as a partition mapping: an asset
may only depend on its own earlier partitions through a *time* dimension (`_validate_self_deps`
rejects a self-dependency otherwise), and the milestone dimension here is dynamic, shared by all
repos, with no "previous milestone of this repo". So the order is enforced in code, from the store:
before running milestone k, the nearest earlier *valid* milestone (invalid ones are skipped by the
chain) must have a `summary.json` under the same run id. Otherwise the partition fails and names
the partition to materialize first. An earlier milestone that was never validated also blocks: its
place in the chain is unknown until `validated_milestones` has run for it.
"""

import dagster as dg

from harnessforge.errors import HarnessForgeError
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import SUMMARY, TRAJECTORY, run_path
from harnessforge.models.plan import MilestonePlan
from harnessforge.models.run import MilestoneSummary
from harnessforge.store import Store
from resources import AgentResource, SandboxResource, StoreResource

from .environments import validated_milestones
from .partitions import repo_milestone_key, repo_milestone_partitions, split_repo_milestone


def _fail(description: str, **metadata) -> dg.Failure:
    return dg.Failure(description=description, metadata=metadata or None, allow_retries=False)


def chain_predecessor(s: Store, plan: MilestonePlan, mid: str, run_id: str) -> str | None:
    """The earlier milestone `mid` continues from, after checking it ran in `run_id` (None: `mid` starts the chain).

    Raises `dg.Failure` naming the partition to materialize first when the chain is not there yet.
    """
    key = plan.repo.key
    ids = [m.id for m in plan.milestones]
    for prev in reversed(plan.milestones[: ids.index(mid)]):
        if prev.status is None:
            raise _fail(
                f"{key} {mid}: the chain runs in order, and earlier milestone {prev.id} is not validated yet: "
                f"materialize validated_milestones partition '{repo_milestone_key(key, prev.id)}' first",
                missing_partition=str(repo_milestone_key(key, prev.id)),
            )
        if prev.status != "valid":
            continue  # the chain skips it and goes on from its verify commit
        if not (run_path(s, key, run_id) / prev.id / SUMMARY).exists():
            raise _fail(
                f"{key} {mid}: the chain runs in order, and run {run_id!r} has no trajectory for {prev.id} yet: "
                f"materialize raw_trajectories partition '{repo_milestone_key(key, prev.id)}' first "
                "(with the same agent run_id)",
                missing_partition=str(repo_milestone_key(key, prev.id)),
            )
        return prev.id
    return None


def summary_metadata(summary: MilestoneSummary, run_dir, agent: str, model: str, previous: str | None) -> dict:
    mdir = run_dir / summary.milestone_id
    return {
        "status": summary.status,
        "run_id": summary.run_id,
        "agent": agent,
        "model": model,
        "turns": summary.turns,
        "hints": len(summary.hints_released),
        "hint_levels": dg.MetadataValue.json(summary.hints_released),
        "tokens_input": summary.tokens.input,
        "tokens_cached": summary.tokens.cached,
        "tokens_output": summary.tokens.output,
        "cost_usd": summary.cost_usd,
        "wall_s": summary.wall_s,
        "synthetic": summary.synthetic,
        "reset_to": summary.reset_to or "",
        "previous_milestone": previous or "",
        "run_dir": dg.MetadataValue.path(str(run_dir)),
        "path": dg.MetadataValue.path(str(mdir)),
        "summary": dg.MetadataValue.path(str(mdir / SUMMARY)),
        "trajectory": dg.MetadataValue.path(str(mdir / TRAJECTORY)),
    }


@dg.asset(
    partitions_def=repo_milestone_partitions,  # the same as validated_milestones': an identity mapping
    group_name="runs",
    deps=[validated_milestones],
    kinds={"docker", "python"},
    description="The Dev agent's run on one milestone of the chain: trajectory.jsonl, ATIF, diffs, test "
    "results, Mentor log and summary.json under trajectories/<repo>/<run_id>/<milestone>/. A repo's "
    "milestones must be materialized in chain order; a milestone that is not valid is reported as skipped.",
)
def raw_trajectories(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource, agent: AgentResource
) -> dg.MaterializeResult:
    s = store.store()
    key, mid = split_repo_milestone(context.partition_key)
    run_id = agent.run_name()
    run_dir = run_path(s, key, run_id)
    try:
        plan = s.load_plan(key)
    except HarnessForgeError as e:
        raise _fail(f"{key}: no milestone plan to run ({e})") from None
    ids = [m.id for m in plan.milestones]
    if mid not in ids:  # the milestone dimension is shared by all repos: this repo's plan is shorter
        raise _fail(
            f"{key} has no milestone {mid!r}: its plan has {len(ids)} milestones ({', '.join(ids) or 'none'}); "
            "this partition has nothing to run"
        )
    milestone = plan.milestone(mid)
    if milestone.status is None:
        raise _fail(
            f"{key} {mid} is not validated yet: materialize validated_milestones partition "
            f"'{repo_milestone_key(key, mid)}' first",
            missing_partition=str(repo_milestone_key(key, mid)),
        )
    if milestone.status != "valid":
        # Not a failure: the chain skips this milestone and goes on from its verify commit.
        context.log.warning(f"{key} {mid}: skipped, its validation status is {milestone.status!r} (not valid)")
        return dg.MaterializeResult(
            metadata={
                "status": "skipped",
                "skipped": True,
                "reason": f"milestone status is {milestone.status!r}, not 'valid': the chain skips it",
                "validation_status": milestone.status,
                "run_id": run_id,
            }
        )
    previous = chain_predecessor(s, plan, mid, run_id)
    if (run_dir / mid / SUMMARY).exists():
        raise _fail(
            f"{key} {mid}: run {run_id!r} already has a trajectory for {mid} ({run_dir / mid}); "
            "a new attempt needs a new run id: set the agent resource's run_id (and re-run the chain from its start)",
            path=dg.MetadataValue.path(str(run_dir / mid)),
        )
    try:
        dev = agent.build()
        nav = Navigator(s, key, dev, store.rules(), run_id=run_id, backend=sandbox.backend, log=context.log.info)
        summaries = nav.run(milestones=[mid])
    except HarnessForgeError as e:
        raise _fail(f"{key} {mid}: the agent run failed: {e}", run_id=run_id) from None
    if not summaries:  # the Navigator skipped it after all (its status changed under us)
        return dg.MaterializeResult(
            metadata={"status": "skipped", "skipped": True, "reason": "the Navigator skipped it", "run_id": run_id}
        )
    (summary,) = summaries
    return dg.MaterializeResult(metadata=summary_metadata(summary, run_dir, dev.name, dev.model, previous))
