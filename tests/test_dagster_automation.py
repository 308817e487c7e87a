"""The factory as a deploy runs it, driven through the webserver's GraphQL (the UI's own mutations):
a reloadable code server, the real `dagster-daemon` and `dagster-webserver` pointed at it, the
instance settings of deploy/dagster.yaml on a real PostgreSQL server, the example repository as the
upstream remote, the oracle Dev in Docker.

1. A release flows from the sensor to the datasets by itself. The only click is the one a data
   engineer makes, starting the release sensor. Everything after it is automation: planning, images,
   validation, the agent run, analytics, distilled rows, the verified task and the datasets.
2. A changed distillation threshold, after a reload, marks exactly the partitions that read it
   unsynced, and automation rebuilds them (and only them) without running the agent again.

The tests share one deployment, in order: the second starts from what the first produced.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import pytest
import yaml

from harnessforge.distill.outputs import DISTILLED_OUTPUTS
from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge.store import Store
from harnessforge_assets.analytics import milestone_assets
from tests.dagster_deploy import Deployment, screenshot, serve
from tests.test_dagster_ui import LOCATION, DagsterDev

RULES = Path(__file__).parent / "fixtures" / "automation_rules.yaml"
DISTILLED = [output.asset for output in DISTILLED_OUTPUTS]
FAILED_STEPS = """
query($runId: ID!) { logsForRun(runId: $runId) { __typename ... on EventConnection {
  events { __typename ... on ExecutionStepFailureEvent { stepKey error { message } } } } } }"""
RUN_MESSAGES = """
query($runId: ID!) { logsForRun(runId: $runId) { __typename ... on EventConnection {
  events { __typename ... on MessageEvent { message stepKey } } } } }"""
TICKS = """
query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename ... on Sensor {
  sensorState { ticks(limit: 8) { status timestamp runIds skipReason error { message } } } } } }"""


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True, cwd=cwd).stdout


@pytest.fixture(scope="module")
def upstream(example_repo, tmp_path_factory) -> Path:
    """A bare upstream remote of the example repository whose newest release is v0.2.0 (later ones not yet out)."""
    remote = tmp_path_factory.mktemp("upstream") / "tasklite.git"
    git("clone", "--quiet", "--bare", str(example_repo), str(remote))
    for tag in git("tag", cwd=remote).split():
        if tag not in ("v0.1.0", "v0.2.0"):
            git("tag", "-d", tag, cwd=remote)
    git("update-ref", "refs/heads/main", git("rev-list", "-n1", "v0.2.0", cwd=remote).strip(), cwd=remote)
    return remote


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, upstream, docker_client, base_image, postgres_server) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("deployment")
    store, rules = Store(tmp / "store"), tmp / "rules.yaml"
    shutil.copy(RULES, rules)
    open_repo(store, resolve_repo(str(upstream)))  # the watch list: every repo registered in the store
    with serve(tmp, postgres_server, store, rules, {"HARNESSFORGE_AGENT": "oracle"}) as deployment:
        yield deployment


def failures(dev: DagsterDev, run_id: str) -> str:
    events = dev.gql(FAILED_STEPS, runId=run_id)["logsForRun"].get("events", [])
    return "; ".join(f"{e['stepKey']}: {e['error']['message'][:800]}" for e in events if e.get("stepKey"))


def settle(deployment: Deployment, done, timeout: float = 480, state=None) -> None:
    """Until `done()` holds and no run is queued or going; fails on the first failed run, with its steps' errors.
    `timeout` stays under the test's own (pytest-timeout), so a stall fails with what was going on:
    the runs, the last messages of the unfinished ones, `state()`, the sensors' last ticks, the daemon's log."""
    dev, deadline = deployment.dev, time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = deployment.runs()
        failed = [run for run in runs if run["status"] == "FAILURE"]
        if failed:
            detail = "\n".join(
                f"{run['runId']} {run['assetSelection']}: {failures(dev, run['runId'])}" for run in failed
            )
            pytest.fail(f"a run failed:\n{detail}")
        if all(run["status"] in ("SUCCESS", "CANCELED") for run in runs) and done():
            return
        time.sleep(3)
    pytest.fail(f"not done after {timeout:.0f} s\n{stall_report(deployment, state)}")


def stall_report(deployment: Deployment, state=None) -> str:
    dev, lines = deployment.dev, ["runs:"]
    for run in deployment.runs():
        lines.append(f"  {run['status']} {run['runId'][:8]} {[a['path'][0] for a in run['assetSelection'] or []]}")
        if run["status"] not in ("SUCCESS", "CANCELED", "FAILURE"):
            events = dev.gql(RUN_MESSAGES, runId=run["runId"])["logsForRun"].get("events", [])
            lines += [f"    {e.get('stepKey')}: {e['message'][:300]}" for e in events[-8:] if e.get("message")]
    if state is not None:
        lines.append(f"state: {state()}")
    for sensor in ("harnessforge_automation", "new_release_sensor"):
        selector = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__", "sensorName": sensor}
        node = dev.gql(TICKS, selector=selector)["sensorOrError"]
        ticks = (node.get("sensorState") or {}).get("ticks", [])
        lines.append(f"{sensor} ticks, newest first:")
        lines += [
            f"  {tick['status']} {tick['timestamp']:.0f} runs={len(tick['runIds'])} "
            f"{(tick.get('error') or {}).get('message', '')[:300]}{tick.get('skipReason') or ''}"
            for tick in ticks
        ]
    lines.append("daemon log tail:\n" + deployment.logs["daemon"].read_text(errors="replace")[-4000:])
    return "\n".join(lines)


def test_a_new_release_reaches_the_datasets_with_no_click_after_the_sensor(deployment):
    store, materialized = deployment.store, deployment.materialized_partitions
    deployment.set_sensor("new_release_sensor", running=True)  # the UI's toggle
    t0 = time.monotonic()
    settle(deployment, lambda: materialized("training_datasets"), timeout=480)
    elapsed = time.monotonic() - t0

    key = "local__tasklite"
    all_runs = deployment.runs()
    assert all(run["status"] == "SUCCESS" for run in all_runs), [(r["status"], r["assetSelection"]) for r in all_runs]
    tags = [{tag["key"]: tag["value"] for tag in run["tags"]} for run in all_runs]
    by_sensor = [t for t in tags if t.get("dagster/sensor_name") == "new_release_sensor"]
    assert len(by_sensor) == 1 and by_sensor[0]["harnessforge/release"] == "v0.2.0"
    automated = [t for t in tags if t.get("dagster/sensor_name") == "harnessforge_automation"]
    assert len(automated) == len(all_runs) - 1  # every other run came from the automation, none from a click
    # each stage ran for exactly what the plan has (one milestone), each partition once
    assert materialized("milestone_plans") == [key]
    assert materialized("raw_trajectories") == [f"m01|{key}"]
    assert materialized("dpo_pairs") == materialized("milestone_summary") == [f"m01|{key}"]
    assert materialized("verified_tasks") == [f"m01|{key}"]
    # the datasets hold the oracle's run (allowed by the rules this deploy loads)
    summary = json.loads((store.root / "trajectories" / key / "dagster-oracle" / "m01" / "summary.json").read_text())
    assert summary["status"] == "PASS" and summary["synthetic"]
    sft = (store.root / "datasets" / "sft" / "trl.jsonl").read_text().splitlines()
    assert sft and all(json.loads(line)["synthetic"] for line in sft)
    # the milestone became a task, verified in Docker, exported for Harbor and SWE-bench
    assert len((store.root / "datasets" / "swebench" / "instances.jsonl").read_text().splitlines()) == 1
    checks = json.loads((store.root / "datasets" / "format_checks.json").read_text())
    assert checks and not any(checks.values()), checks
    print(f"release to datasets: {elapsed:.0f} s, {len(all_runs)} runs")
    # what the README shows: the lineage, every asset materialized, and the runs the automation launched
    groups = ",".join(f"global@global:{group}" for group in ("plan", "environments", "runs", "distill"))
    lineage = screenshot(deployment, f"/asset-groups?expanded={groups}", "dagster_lineage_after_release")
    assert {"repos", "raw_trajectories", "training_datasets"} <= set(lineage), lineage[:60]
    automation = screenshot(deployment, "/automation", "dagster_automation")
    assert "harnessforge_automation" in automation and "new_release_sensor" in automation, automation[:60]


STALENESS = """
query($key: AssetKeyInput!, $partitions: [String!]!) {
  assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { staleStatusByPartition(partitions: $partitions) } }
}"""
UNPARTITIONED_STALENESS = """
query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { staleStatus } } }"""
RELOAD = """
mutation($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) {
  __typename ... on WorkspaceLocationEntry { loadStatus } ... on PythonError { message } } }"""
KEY = "local__tasklite"
PLAN_AND_RUN = {"repos": KEY, "milestone_plans": KEY, "docker_images": KEY}
PER_MILESTONE = ["validated_milestones", "raw_trajectories", *milestone_assets(), *DISTILLED, "verified_tasks"]
UNPARTITIONED = ["training_datasets"]


def staleness(dev: DagsterDev) -> dict[str, str]:
    """Each asset's status as the UI shows it: per partition for the partitioned ones (their one key here)."""
    statuses = {}
    for asset in [*PLAN_AND_RUN, *PER_MILESTONE]:
        partition = PLAN_AND_RUN.get(asset, f"m01|{KEY}")
        node = dev.gql(STALENESS, key={"path": [asset]}, partitions=[partition])["assetNodeOrError"]
        statuses[asset] = node["staleStatusByPartition"][0]
    for asset in UNPARTITIONED:
        statuses[asset] = dev.gql(UNPARTITIONED_STALENESS, key={"path": [asset]})["assetNodeOrError"]["staleStatus"]
    return statuses


def test_a_changed_rule_marks_exactly_its_readers_unsynced_and_automation_rebuilds_only_them(deployment):
    dev, materialized = deployment.dev, deployment.materialized_partitions
    assert materialized("training_datasets"), "runs after the release test, on its deployment"
    assert set(staleness(dev).values()) == {"FRESH"}
    deployment.set_sensor("harnessforge_automation", running=False)  # the state before any rebuild, as the UI shows it

    rules = yaml.safe_load(deployment.rules.read_text())
    rules["distill"]["slice_context_messages"] = 2  # how many messages before a stuck point a slice keeps
    deployment.rules.write_text(yaml.safe_dump(rules))
    assert dev.gql(RELOAD, name=LOCATION)["reloadRepositoryLocation"]["loadStatus"] == "LOADED"
    readers = {*DISTILLED, "verified_tasks", "training_datasets"}
    after = staleness(dev)
    assert {asset for asset, status in after.items() if status == "STALE"} == readers, after
    assert {asset for asset, status in after.items() if status == "FRESH"} == set(after) - readers
    # the partition selected, as a click on it does: its panel's tag reads "Unsynced (1)"
    selected = quote(f"m01|{KEY}", safe="")
    page = screenshot(
        deployment, f"/assets/dpo_pairs?view=partitions&partition={selected}", "dagster_unsynced_partition"
    )
    assert any(text.startswith("Unsynced") for text in page), page[:80]  # as the README describes it

    trajectories = len(materialized("raw_trajectories"))
    deployment.set_sensor("harnessforge_automation", running=True)
    settle(deployment, lambda: set(staleness(dev).values()) == {"FRESH"}, timeout=420, state=lambda: staleness(dev))
    assert len(materialized("dpo_pairs")) == 2  # rebuilt once, by the automation
    assert len(materialized("raw_trajectories")) == trajectories  # the agent did not run again
    assert len(materialized("validated_milestones")) == 1
    # what a stall would have printed reads back (its queries are valid against this webserver)
    report = stall_report(deployment, state=lambda: staleness(dev))
    assert "harnessforge_automation ticks, newest first:" in report and "SUCCESS" in report, report[:2000]
