"""Stage 2 asset: the Dev's raw trajectories on a repo's milestone chain.

Chain order. A repo's milestones are one continuous chain: milestone k runs after k-1 of the same
run id, and its prompt recalls how the earlier ones went. Dagster cannot express this as a partition
mapping (an asset may depend on its own earlier partitions only through a *time* dimension), and it
cuts backfill ranges as it likes: 6 repos x m01-m03 becomes three runs, m01 of every repo, m02 of
every repo, m03 of every repo, started together. So the order is kept here, for any set of keys:
a step runs, for each repo among its keys, the chain up to the last milestone it was asked for
(`Navigator.run` reuses finished milestones, resumes an interrupted one, runs the others), holding
the store's lock on that repo's chain (`Store.chain_lock`): two runs asking for m01 and m02 of one
repo take turns, and whichever comes second finds its milestone done or runs it after the first.
Repos of one step run in parallel (`agent.parallel_chains`).

What is recorded. One materialization per milestone that has a trajectory now and whose data
version (the hash of its `summary.json`) Dagster has not recorded yet: the milestones asked for and
the earlier ones run on the way, each once; a key the plan lacks gets nothing. A milestone whose
validation is not 'valid' is recorded as skipped. A milestone never validated stops its repo's
chain with an error naming the `validated_milestones` partition to materialize first.
"""

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import dagster as dg

from harnessforge.agents.base import AgentBackend
from harnessforge.agents.errors import AgentError
from harnessforge.checks import trajectory_problems
from harnessforge.errors import HarnessForgeError, SandboxLost
from harnessforge.harness import chain
from harnessforge.harness.navigator import Navigator
from harnessforge.models.plan import MilestonePlan
from harnessforge.models.run import MilestoneSummary
from harnessforge.rules import Rules
from harnessforge.store import RunFiles, Store
from resources import AgentResource, SandboxResource, StoreResource

from .environments import validated_milestones
from .events import check_evaluation, content_version, latest_data_version, materialization
from .partitions import chain_order, plan_with, repo_milestone_key, repo_milestone_partitions
from .versions import rules_for

ASSET = "raw_trajectories"
INTEGRITY = "trajectory_integrity"


def _fail(description: str, **metadata) -> dg.Failure:
    return dg.Failure(description=description, metadata=metadata or None, allow_retries=False)


def chain_predecessor(store: Store, plan: MilestonePlan, milestone_id: str, run_id: str) -> str | None:
    """The core's `chain_predecessor`, its `ChainOrderError` as a `dg.Failure` naming the earliest
    partition to materialize first."""
    try:
        return chain.chain_predecessor(store, plan, milestone_id, run_id)
    except chain.ChainOrderError as e:
        partition = str(repo_milestone_key(e.repo_key, e.earlier))
        asset, note = {"validate": ("validated_milestones", ""), "run": (ASSET, " (same agent run_id)")}[e.stage]
        raise _fail(
            f"{e.repo_key} {e.milestone_id}: the chain runs in order, and {e.reason}: "
            f"materialize {asset} partition '{partition}' first{note}",
            missing_partition=partition,
        ) from None


def unvalidated(plan: MilestonePlan, upto: str) -> dg.Failure | None:
    """The error naming the first milestone up to `upto` that was never validated (its place in the
    chain is unknown until then); None when all were."""
    ids = [milestone.id for milestone in plan.milestones]
    for milestone in plan.milestones[: ids.index(upto) + 1]:
        if milestone.status is None:
            partition = str(repo_milestone_key(plan.repo.key, milestone.id))
            return _fail(
                f"{plan.repo.key} {milestone.id} is not validated yet: materialize validated_milestones partition "
                f"'{partition}' first",
                missing_partition=partition,
            )
    return None


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
        "mentor_log": dg.MetadataValue.md(mentor_excerpt(files)),
    }


def skipped(reason: str, run_id: str, **extra) -> dict:
    return {"status": "skipped", "skipped": True, "reason": reason, "run_id": run_id, **extra}


@dataclass
class Recorded:
    """One milestone of a chain as the step records it."""

    milestone_id: str
    metadata: dict
    data_version: str
    problems: list[str] = field(default_factory=list)  # the integrity check's findings


@dataclass
class ChainOutcome:
    key: str
    recorded: list[Recorded] = field(default_factory=list)
    error: dg.Failure | None = None


def run_chain(
    context,
    store: Store,
    rules: Rules,
    key: str,
    asked: list[str],
    run_id: str,
    sandbox: SandboxResource,
    agent: AgentResource,
) -> ChainOutcome:
    """Repo `key`'s chain up to the last of `asked` (milestone ids its plan has, in chain order), under the
    chain's lock. Errors end up in the outcome: one repo's failure does not stop the others."""
    outcome = ChainOutcome(key)
    try:
        with store.chain_lock(key, run_id):
            _run_chain(context, store, rules, key, asked, run_id, sandbox, agent, outcome)
    except dg.Failure as e:
        outcome.error = e
    except (AgentError, SandboxLost) as e:  # the model's API or the Docker engine: a run retry resumes it
        outcome.error = dg.Failure(description=f"{key}: the agent run failed: {e}", metadata={"run_id": run_id})
    except HarnessForgeError as e:
        outcome.error = _fail(f"{key}: the agent run failed: {e}", run_id=run_id)
    return outcome


def _run_chain(context, store, rules, key, asked, run_id, sandbox, agent, outcome: ChainOutcome) -> None:
    plan = store.load_plan(key)
    ids = [milestone.id for milestone in plan.milestones]
    upto = ids[: ids.index(asked[-1]) + 1]
    error = unvalidated(plan, asked[-1])
    for milestone_id in upto:  # the skipped milestones asked for are recorded even when the chain cannot run
        status = plan.milestone(milestone_id).status
        if milestone_id in asked and status not in (None, "valid"):
            context.log.warning(f"{key} {milestone_id}: skipped, its validation status is {status!r}")
            reason = f"milestone status is {status!r}, not 'valid': the chain skips it"
            metadata = skipped(reason, run_id, validation_status=status)
            outcome.recorded.append(Recorded(milestone_id, metadata, f"skipped-{status}"))
    if error:
        raise error
    valid = [milestone_id for milestone_id in upto if plan.milestone(milestone_id).status == "valid"]
    if not valid:
        return
    attempts = {
        milestone_id: chain.attempt_kind(store.milestone_run(key, run_id, milestone_id)) for milestone_id in valid
    }
    with agent.build(sandbox.rules(rules)) as dev:
        navigator = Navigator(
            store,
            key,
            dev,
            sandbox.rules(rules),
            run_id=run_id,
            backend=sandbox.backend,
            log=context.log.info,
            mode=agent.mode,
            harness_profile=agent.harness_profile,
        )
        summaries = {summary.milestone_id: summary for summary in navigator.run(milestones=upto)}
        for milestone_id in valid:
            summary = summaries.get(milestone_id)
            if summary is None:  # its status changed under us: the Navigator skipped it
                if milestone_id in asked:
                    metadata = skipped("the Navigator skipped it (its status is no longer 'valid')", run_id)
                    outcome.recorded.append(Recorded(milestone_id, metadata, "skipped"))
                continue
            files = store.milestone_run(key, run_id, milestone_id)
            previous = chain_predecessor(store, plan, milestone_id, run_id)
            metadata = summary_metadata(summary, files, dev, attempts[milestone_id], previous)
            problems = [f"{key} {milestone_id}: {problem}" for problem in trajectory_problems(files.dir, rules)]
            data_version = content_version(files.summary)
            outcome.recorded.append(Recorded(milestone_id, metadata, data_version, problems))


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


def asked_by_repo(store: Store, keys, log) -> dict[str, list[str]]:
    """The step's keys as repo -> milestone ids its plan has, in chain order (keys the plan lacks: no-ops)."""
    asked: dict[str, list[str]] = defaultdict(list)
    for key, milestone_id in chain_order(keys):
        if plan_with(store, key, milestone_id, log) is not None:
            asked[key].append(milestone_id)
    return asked


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            ASSET,
            group_name="runs",
            deps=[validated_milestones],  # the same partitions as validated_milestones': an identity mapping
            kinds={"docker", "python"},
            skippable=True,  # a milestone the repo's plan does not have: a no-op, nothing materialized
            description="The Dev agent's run on one milestone of the chain: trajectory.jsonl, ATIF, diffs, test "
            "results, Mentor log and summary.json under trajectories/<repo>/<run_id>/<milestone>/. Asking for a "
            "milestone runs the chain up to it, in order; a milestone that is not valid is recorded as skipped.",
        )
    ],
    partitions_def=repo_milestone_partitions,
    can_subset=True,  # a no-op yields nothing
    backfill_policy=dg.BackfillPolicy.single_run(),  # a backfill's range: few runs, each chain in order
    pool="agent",  # LLM-bound: the instance limits how many agent steps run at once
    # No op retry policy: run retries (the instance's run_retries) are the one retry layer; a retried run
    # reuses the finished milestones and resumes the interrupted one.
    check_specs=[
        dg.AssetCheckSpec(
            INTEGRITY,
            asset=ASSET,
            blocking=True,
            partitions_def=repo_milestone_partitions,
            description="The event log reads back against the schema with no gap, the run has a summary, and a "
            "PASS credited no edit to a test file.",
        )
    ],
)
def raw_trajectories(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource, agent: AgentResource
):
    data_store = store.store()
    rules = rules_for(context, store)
    run_id = agent.run_name()
    asked = asked_by_repo(data_store, context.partition_keys, context.log.info)
    with ThreadPoolExecutor(max_workers=agent.parallel_chains) as pool:
        chains = [
            pool.submit(run_chain, context, data_store, rules, key, milestones, run_id, sandbox, agent)
            for key, milestones in asked.items()
        ]
        outcomes = [future.result() for future in chains]
    for outcome in outcomes:
        for recorded in outcome.recorded:
            partition = str(repo_milestone_key(outcome.key, recorded.milestone_id))
            if latest_data_version(context, ASSET, partition) == recorded.data_version:
                continue  # the same trajectory is recorded already (another run's, or an earlier one)
            yield materialization(context, ASSET, partition, recorded.metadata, recorded.data_version)
            yield check_evaluation(
                context.instance,
                ASSET,
                INTEGRITY,
                partition,
                passed=not recorded.problems,
                metadata={"problems": dg.MetadataValue.json(recorded.problems)},
                blocking=True,
            )
    errors = [outcome.error for outcome in outcomes if outcome.error]
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise dg.Failure(
            description="; ".join(error.description or "" for error in errors),
            allow_retries=all(error.allow_retries for error in errors),
        )
