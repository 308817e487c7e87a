"""`distill_sensor`: new trajectories are distilled, in two steps across ticks.

DuckDB analytics are rebuilt once for all repos, then each milestone is cut from them. So a tick
that sees trajectories newer than the latest `trajectory_analytics` materialization requests one
analytics run (run key `analytics:<newest trajectory event>`); a later tick, once analytics have
caught up, requests the distilled assets of each such (repo, milestone) partition (run key
`distill:<partition>:<event>`). The cursor is the newest trajectory event already distilled.
"""

from __future__ import annotations

import dagster as dg

from harnessforge.distill.outputs import DISTILLED_OUTPUTS, VERIFIED_TASKS

DISTILL_ASSETS = (*(output.asset for output in DISTILLED_OUTPUTS), VERIFIED_TASKS.asset)


def _records(instance: dg.DagsterInstance, asset: str, after: int | None, limit: int, ascending: bool):
    records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), after_storage_id=after)
    return instance.fetch_materializations(records_filter, limit=limit, ascending=ascending).records


@dg.sensor(
    target=dg.AssetSelection.assets("trajectory_analytics", *DISTILL_ASSETS),
    minimum_interval_seconds=120,
    description="New raw_trajectories: rebuild the analytics, then distill each new milestone partition.",
)
def distill_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    done = int(context.cursor) if context.cursor else None
    new = _records(context.instance, "raw_trajectories", done, limit=1000, ascending=True)
    if not new:
        return dg.SensorResult(skip_reason="no new trajectories")
    latest = _records(context.instance, "trajectory_analytics", None, limit=1, ascending=False)
    analysed = latest[0].storage_id if latest else -1
    ready = [record for record in new if record.storage_id < analysed]
    waiting = [record for record in new if record.storage_id > analysed]
    requests = []
    if waiting:
        requests.append(
            dg.RunRequest(
                asset_selection=[dg.AssetKey("trajectory_analytics")],
                run_key=f"analytics:{waiting[-1].storage_id}",
                tags={"harnessforge/stage": "distill"},
            )
        )
    newest = {record.partition_key: record.storage_id for record in ready if record.partition_key}  # one per partition
    for partition, storage_id in newest.items():
        requests.append(
            dg.RunRequest(
                partition_key=partition,
                asset_selection=[dg.AssetKey(asset) for asset in DISTILL_ASSETS],
                run_key=f"distill:{partition}:{storage_id}",
                tags={"harnessforge/stage": "distill"},
            )
        )
    return dg.SensorResult(run_requests=requests, cursor=str(ready[-1].storage_id) if ready else context.cursor)
