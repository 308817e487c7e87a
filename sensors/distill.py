"""`distill_sensor`: new trajectories are analysed and distilled, each milestone on its own.

A tick that sees `raw_trajectories` materializations newer than its cursor requests, per such
(repo, milestone) partition, one run of that partition's analytics (`analytics.milestone_assets`)
and distilled assets (run key `distill:<partition>:<event>`): the analytics of one milestone are
loaded and rebuilt alone, so nothing waits for a store-wide rebuild. The cursor is the newest
trajectory event requested.
"""

from __future__ import annotations

import dagster as dg

from harnessforge.distill.outputs import DISTILLED_OUTPUTS, VERIFIED_TASKS
from harnessforge_assets.analytics import milestone_assets

DISTILL_ASSETS = (*(output.asset for output in DISTILLED_OUTPUTS), VERIFIED_TASKS.asset)
ASSETS = (*milestone_assets(), *DISTILL_ASSETS)


@dg.sensor(
    target=dg.AssetSelection.assets(*ASSETS),
    minimum_interval_seconds=120,
    description="New raw_trajectories: each new milestone partition's analytics, then its distilled rows.",
)
def distill_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    done = int(context.cursor) if context.cursor else None
    records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey("raw_trajectories"), after_storage_id=done)
    new = context.instance.fetch_materializations(records_filter, limit=1000, ascending=True).records
    if not new:
        return dg.SensorResult(skip_reason="no new trajectories")
    newest = {record.partition_key: record.storage_id for record in new if record.partition_key}  # one per partition
    requests = [
        dg.RunRequest(
            partition_key=partition,
            asset_selection=[dg.AssetKey(asset) for asset in ASSETS],
            run_key=f"distill:{partition}:{storage_id}",
            tags={"harnessforge/stage": "distill"},
        )
        for partition, storage_id in newest.items()
    ]
    return dg.SensorResult(run_requests=requests, cursor=str(new[-1].storage_id))
