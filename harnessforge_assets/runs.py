"""Stage 2 asset: the Dev's raw trajectory on one milestone of a repo's chain.

Chain order. A repo's milestones are one continuous chain: milestone k runs after k-1 of the same
run, and its prompt recalls how the earlier ones went. Dagster cannot express this as a partition
mapping: an asset may depend on its own earlier partitions only through a *time* dimension
(`_validate_self_deps` rejects any other self-dependency), and the milestone dimension here is
dynamic, shared by all repos, with no "previous milestone of this repo". So the order is enforced
in code, from the store: milestone k runs only when every earlier *valid* milestone (the chain skips
invalid ones) has a `summary.json` under the same run id. Otherwise the partition fails and names
the partition to materialize first. An earlier milestone that was never validated blocks too: its
place in the chain is unknown until `validated_milestones` has run for it.

Re-materializing follows the core's resume rules for the same run id: an interrupted milestone
continues from its event log, a finished one is not run again (its recorded summary is reported).
A new attempt is a new run id (the `agent` resource's `run_id`).
"""

import dagster as dg

from harnessforge.agents.base import AgentBackend
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
    """The earlier milestone `mid` continues from (None: `mid` starts the chain), once the chain is there.

    Raises `dg.Failure` naming the earliest partition to materialize first: an earlier milestone that
    is not validated, or a valid one with no finished trajectory in `run_id`.
    """
    key = plan.repo.key
    ids = [m.id for m in plan.milestones]
    previous = None
    for prev in plan.milestones[: ids.index(mid)]:
        partition = str(repo_milestone_key(key, prev.id))
        if prev.status is None:
            raise _fail(
                f"{key} {mid}: the chain runs in order, and earlier milestone {prev.id} is not validated yet: "
                f"materialize validated_milestones partition '{partition}' first",
                missing_partition=partition,
            )
        if prev.status != "valid":
            continue  # the chain skips it and goes on from its verify commit
        if not (run_path(s, key, run_id) / prev.id / SUMMARY).exists():
            raise _fail(
                f"{key} {mid}: the chain runs in order, and run {run_id!r} has no finished trajectory for "
                f"{prev.id} yet: materialize raw_trajectories partition '{partition}' first (same agent run_id)",
                missing_partition=partition,
            )
        previous = prev.id
    return previous


def summary_metadata(summary: MilestoneSummary, run_dir, dev: AgentBackend, attempt: str, previous) -> dict:
    mdir = run_dir / summary.milestone_id
    return {
        "status": summary.status,
        "attempt": attempt,
        "run_id": summary.run_id,
        "agent": dev.name,
        "model": dev.model,
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


def skipped(reason: str, run_id: str, **extra) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"status": "skipped", "skipped": True, "reason": reason, "run_id": run_id,
                                          **extra})  # fmt: skip


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
    status = plan.milestone(mid).status
    if status is None:
        partition = str(repo_milestone_key(key, mid))
        raise _fail(
            f"{key} {mid} is not validated yet: materialize validated_milestones partition '{partition}' first",
            missing_partition=partition,
        )
    if status != "valid":
        context.log.warning(f"{key} {mid}: skipped, its validation status is {status!r}")
        return skipped(f"milestone status is {status!r}, not 'valid': the chain skips it", run_id,
                       validation_status=status)  # fmt: skip
    previous = chain_predecessor(s, plan, mid, run_id)
    mdir = run_dir / mid
    if (mdir / SUMMARY).exists():
        attempt = "reused"
        context.log.info(f"{mid} already finished in run {run_id!r}: reporting its summary (a new attempt needs "
                         "a new run_id on the agent resource)")  # fmt: skip
    elif (mdir / TRAJECTORY).exists() and (mdir / TRAJECTORY).stat().st_size > 0:
        attempt = "resumed"  # the Navigator continues an interrupted attempt from its event log
    else:
        attempt = "new"
    try:
        with agent.build() as dev:
            nav = Navigator(s, key, dev, store.rules(), run_id=run_id, backend=sandbox.backend,
                            log=context.log.info)  # fmt: skip
            # The chain up to `mid`: earlier milestones are finished (checked above), so the Navigator
            # only reads their summaries, which gives `mid` the same memory of them as a whole-chain run.
            summaries = nav.run(milestones=ids[: ids.index(mid) + 1])
    except HarnessForgeError as e:
        raise _fail(f"{key} {mid}: the agent run failed: {e}", run_id=run_id) from None
    summary = next((x for x in summaries if x.milestone_id == mid), None)
    if summary is None:  # its status changed under us: the Navigator skipped it
        return skipped("the Navigator skipped it (its status is no longer 'valid')", run_id)
    return dg.MaterializeResult(metadata=summary_metadata(summary, run_dir, dev, attempt, previous))
