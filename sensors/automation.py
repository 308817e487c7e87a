"""`harnessforge_automation`: evaluates every asset's automation condition (harnessforge_assets/automation.py).

Dagster's own default automation sensor starts stopped, so nothing would follow a release until
someone toggles it in the UI; this one is on from the start. A tick that asks for several partitions
of an asset launches them as one backfill (each asset's backfill policy then cuts its runs).
"""

import os

import dagster as dg

automation_sensor = dg.AutomationConditionSensorDefinition(
    "harnessforge_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    # seconds between evaluations: each stage starts within this much of the one before finishing
    minimum_interval_seconds=int(os.environ.get("HARNESSFORGE_AUTOMATION_INTERVAL_S") or 30),
    description="Runs each asset when its automation condition says so: releases flow to the datasets.",
)
