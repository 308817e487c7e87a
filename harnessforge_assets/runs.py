"""Stage 2 asset: the Dev's raw trajectory on one milestone of a repo's chain.

Chain order. A repo's milestones are one continuous chain: milestone k runs after k-1 of the same
run, and its prompt recalls how the earlier ones went. Dagster cannot express this as a partition
mapping: an asset may depend on its own earlier partitions only through a *time* dimension
(`_validate_self_deps` rejects any other self-dependency), and the milestone dimension here is
dynamic, shared by all repos, with no "previous milestone of this repo". So the order is the core's
rule (`harnessforge.harness.chain`), checked from the store: milestone k runs only when every earlier
*valid* milestone (the chain skips invalid ones) has a `summary.json` under the same run id. Otherwise
the partition fails and names the partition to materialize first. An earlier milestone that was never
validated blocks too: its place in the chain is unknown until `validated_milestones` has run for it.

Re-materializing follows the core's attempt rule for the same run id (`chain.attempt_kind`, the one
the Navigator applies): an interrupted milestone continues from its event log, a finished one is not
run again (its recorded summary is reported). A new attempt is a new run id (the `agent` resource's
`run_id`).
"""

import json

import dagster as dg

from harnessforge.agents.base import AgentBackend
from harnessforge.agents.errors import AgentError
from harnessforge.checks import trajectory_problems
from harnessforge.errors import HarnessForgeError, SandboxLost
from harnessforge.harness import chain
from harnessforge.harness.navigator import Navigator
from harnessforge.models.plan import MilestonePlan
from harnessforge.models.run import MilestoneSummary
from harnessforge.store import RunFiles, Store
from resources import AgentResource, SandboxResource, StoreResource

from .environments import validated_milestones
from .partitions import chain_order, plan_with, repo_milestone_key, repo_milestone_partitions


def _fail(description: str, **metadata) -> dg.Failure:
    return dg.Failure(description=description, metadata=metadata or None, allow_retries=False)


# The asset to materialize first for each stage the core's chain rule names.
_FIRST = {"validate": ("validated_milestones", ""), "run": ("raw_trajectories", " (same agent run_id)")}


def chain_predecessor(store: Store, plan: MilestonePlan, milestone_id: str, run_id: str) -> str | None:
    """The core's `chain_predecessor`, its `ChainOrderError` as a `dg.Failure` naming the earliest
    partition to materialize first."""
    try:
        return chain.chain_predecessor(store, plan, milestone_id, run_id)
    except chain.ChainOrderError as e:
        partition = str(repo_milestone_key(e.repo_key, e.earlier))
        asset, note = _FIRST[e.stage]
        raise _fail(
            f"{e.repo_key} {e.milestone_id}: the chain runs in order, and {e.reason}: "
            f"materialize {asset} partition '{partition}' first{note}",
            missing_partition=partition,
        ) from None


def summary_metadata(
    summary: MilestoneSummary, files: RunFiles, dev: AgentBackend, attempt: str, previous: str | None
) -> dict:
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
        "stopped_by": summary.stopped_by or "",  # the budget a STUCK milestone ran out of
        "previous_milestone": previous or "",
        "run_dir": dg.MetadataValue.path(str(files.run_dir)),
        "path": dg.MetadataValue.path(str(files.dir)),
        "summary": dg.MetadataValue.path(str(files.summary)),
        "trajectory": dg.MetadataValue.path(str(files.trajectory)),
    }


def skipped(reason: str, run_id: str, **extra) -> dict:
    return {"status": "skipped", "skipped": True, "reason": reason, "run_id": run_id, **extra}


def run_milestone(
    context,
    store: Store,
    plan: MilestonePlan,
    milestone_id: str,
    dev: AgentBackend,
    run_id: str,
    store_resource: StoreResource,
    sandbox: SandboxResource,
    agent: AgentResource,
) -> dict:
    """Run (or resume, or report) milestone `milestone_id` of the chain; the metadata of its materialization."""
    key, ids = plan.repo.key, [milestone.id for milestone in plan.milestones]
    status = plan.milestone(milestone_id).status
    if status is None:
        partition = str(repo_milestone_key(key, milestone_id))
        raise _fail(
            f"{key} {milestone_id} is not validated yet: materialize validated_milestones partition '{partition}' "
            "first",
            missing_partition=partition,
        )
    if status != "valid":
        context.log.warning(f"{key} {milestone_id}: skipped, its validation status is {status!r}")
        reason = f"milestone status is {status!r}, not 'valid': the chain skips it"
        return skipped(reason, run_id, validation_status=status)
    previous = chain_predecessor(store, plan, milestone_id, run_id)
    files = store.milestone_run(key, run_id, milestone_id)
    attempt = chain.attempt_kind(files)
    if attempt == "reused":
        context.log.info(
            f"{milestone_id} already finished in run {run_id!r}: reporting its summary (a new attempt needs "
            "a new run_id on the agent resource)"
        )
    rules = sandbox.rules(store_resource.rules())
    navigator = Navigator(
        store,
        key,
        dev,
        rules,
        run_id=run_id,
        backend=sandbox.backend,
        log=context.log.info,
        mode=agent.mode,
        harness_profile=agent.harness_profile,
    )
    # The chain up to `milestone_id`: earlier milestones are finished (checked above), so the Navigator
    # only reads their summaries, which gives it the same memory of them as a whole-chain run.
    summaries = navigator.run(milestones=ids[: ids.index(milestone_id) + 1])
    summary = next((summary for summary in summaries if summary.milestone_id == milestone_id), None)
    if summary is None:  # its status changed under us: the Navigator skipped it
        return skipped("the Navigator skipped it (its status is no longer 'valid')", run_id)
    metadata = summary_metadata(summary, files, dev, attempt, previous)
    metadata["mentor_log"] = dg.MetadataValue.md(mentor_excerpt(files))
    return metadata


def mentor_excerpt(files: RunFiles, last: int = 12) -> str:
    """The Mentor's hint releases for the UI: when, which level, which rule fired."""
    path = files.mentor_log
    if not path.exists():
        return "no Mentor log"
    decisions = json.loads(path.read_text())
    if not decisions:
        return "no hint was released"
    rows = ["| turn | level | rule | hint |", "|---|---|---|---|"]
    for decision in decisions[-last:]:
        hint = " ".join(str(decision.get("hint", "")).split()).replace("|", "/")[:100]
        turn, level, rule = decision.get("turn_id", ""), decision.get("level", ""), decision.get("rule", "")
        rows.append(f"| {turn} | L{level} | {rule} | {hint} |")
    return "\n".join(rows)


def integrity(store: Store, key: str, run_id: str, milestone_id: str, metadata: dict, rules) -> list[str]:
    if metadata.get("skipped"):
        return []
    problems = trajectory_problems(store.milestone_run(key, run_id, milestone_id).dir, rules)
    return [f"{key} {milestone_id}: {problem}" for problem in problems]


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "raw_trajectories",
            group_name="runs",
            deps=[validated_milestones],  # the same partitions as validated_milestones': an identity mapping
            kinds={"docker", "python"},
            skippable=True,  # a milestone the repo's plan does not have: a no-op, nothing materialized
            description="The Dev agent's run on one milestone of the chain: trajectory.jsonl, ATIF, diffs, test "
            "results, Mentor log and summary.json under trajectories/<repo>/<run_id>/<milestone>/. A repo's "
            "milestones run in chain order; a milestone that is not valid is reported as skipped.",
        )
    ],
    partitions_def=repo_milestone_partitions,
    can_subset=True,  # lets a no-op yield no check result either
    # A backfill over several milestones runs as one run, each repo's milestones in chain order.
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool="agent",  # LLM-bound: dagster.yaml limits how many agent steps run at once
    check_specs=[
        dg.AssetCheckSpec(
            "trajectory_integrity",
            asset="raw_trajectories",
            blocking=True,
            description="The event log reads back against the schema with no gap, the run has a summary, and a "
            "PASS credited no edit to a test file.",
        )
    ],
)
def raw_trajectories(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource, agent: AgentResource
):
    data_store = store.store()
    run_id = agent.run_name()
    todo = chain_order(context.partition_keys)  # one key, or a single-run backfill's range
    done: list[tuple[str, str, dict]] = []
    problems: list[str] = []
    error = None
    try:
        with agent.build() as dev:
            for key, milestone_id in todo:
                plan = plan_with(data_store, key, milestone_id, context.log.info)
                if plan is None:
                    continue
                metadata = run_milestone(context, data_store, plan, milestone_id, dev, run_id, store, sandbox, agent)
                problems += integrity(data_store, key, run_id, milestone_id, metadata, store.rules())
                done.append((key, milestone_id, metadata))
    except (AgentError, SandboxLost) as e:  # the model's API or the Docker engine: worth a retry (finished ones
        error = dg.Failure(description=f"the agent run failed: {e}", metadata={"run_id": run_id})  # are reused)
    except HarnessForgeError as e:
        error = _fail(f"the agent run failed: {e}", run_id=run_id)
    per_partition = [
        dg.AssetMaterialization("raw_trajectories", partition=str(repo_milestone_key(key, milestone_id)), metadata=data)
        for key, milestone_id, data in done
    ]
    if error:
        if len(todo) > 1:
            yield from per_partition  # the milestones that finished before the error stay recorded
        raise error
    if not done:
        return
    check = dg.AssetCheckResult(
        check_name="trajectory_integrity",
        passed=not problems,
        metadata={"problems": dg.MetadataValue.json(problems), "milestones": len(done)},
    )
    if len(todo) == 1:
        yield dg.MaterializeResult(asset_key="raw_trajectories", metadata=done[0][2], check_results=[check])
        return
    rows = "\n".join(
        f"| {key} | {milestone_id} | {data['status']} | {data.get('turns', '')} | {data.get('hints', '')} |"
        for key, milestone_id, data in done
    )
    table = f"| repo | milestone | status | turns | hints |\n|---|---|---|---|---|\n{rows}"
    metadata = {"milestones": len(done), "run_id": run_id, "chain": dg.MetadataValue.md(table)}
    yield dg.MaterializeResult(asset_key="raw_trajectories", check_results=[check], metadata=metadata)
    # after the run's summary, so each partition's latest materialization is its own milestone's
    yield from per_partition
