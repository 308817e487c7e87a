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
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harnessforge.distill.outputs import DISTILLED_OUTPUTS
from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge.store import Store
from tests.postgres import write_postgres_instance
from tests.test_dagster_ui import LOCATION, REPOSITORY, DagsterDev, _free_port, _stop, _wait_until_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RULES = Path(__file__).parent / "fixtures" / "automation_rules.yaml"
DISTILLED = [output.asset for output in DISTILLED_OUTPUTS]

START_SENSOR = """
mutation StartSensor($sensorSelector: SensorSelector!) {
  startSensor(sensorSelector: $sensorSelector) {
    __typename
    ... on Sensor { name sensorState { status } }
    ... on PythonError { message stack }
  }
}"""
RUNS = """
{ runsOrError { __typename ... on Runs { results {
    runId status tags { key value } assetSelection { path }
} } } }"""
MATERIALIZED = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { partitionKeysByDimension { name partitionKeys } } }
  assetOrError(assetKey: $key) { __typename ... on Asset { assetMaterializations { partition runId } } }
}"""
FAILED_STEPS = """
query($runId: ID!) { logsForRun(runId: $runId) { __typename ... on EventConnection {
  events { __typename ... on ExecutionStepFailureEvent { stepKey error { message } } } } } }"""


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


@dataclass
class Deployment:
    dev: DagsterDev  # the webserver
    store: Store
    rules: Path  # the rules file every process reads ($HARNESSFORGE_RULES)
    logs: dict[str, Path]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, upstream, docker_client, base_image, postgres_server):
    """As deploy/ runs it: a code server (`dagster code-server start`, reloadable), and the daemon and the
    webserver both pointed at it; the instance: deploy/dagster.yaml's settings on a real PostgreSQL server."""
    tmp = tmp_path_factory.mktemp("deployment")
    home = write_postgres_instance(tmp / "dagster_home", postgres_server.url(postgres_server.create_database("d")))
    store, rules = Store(tmp / "store"), tmp / "rules.yaml"
    shutil.copy(RULES, rules)
    open_repo(store, resolve_repo(str(upstream)))  # the watch list: every repo registered in the store
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "HARNESSFORGE_HOME": str(store.root),
        "HARNESSFORGE_RULES": str(rules),
        "HARNESSFORGE_AGENT": "oracle",  # automation runs the Dev: the offline oracle
        "HARNESSFORGE_AUTOMATION_INTERVAL_S": "5",
        "HARNESSFORGE_RELEASE_INTERVAL_S": "5",
        "GITHUB_TOKEN": "",
    }
    # the storage first, once: the daemon and the webserver would otherwise both create it at start
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env=env, check=True, capture_output=True)
    code_port, port = _free_port(), _free_port()
    workspace = tmp / "workspace.yaml"
    location = {"host": "127.0.0.1", "port": code_port, "location_name": LOCATION}
    workspace.write_text(json.dumps({"load_from": [{"grpc_server": location}]}))
    code = ["-m", "harnessforge_assets.definitions", "-a", "defs", "--location-name", LOCATION]
    commands = {
        "code": [str(BIN / "dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(code_port), *code],
        "daemon": [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
        "webserver": [str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)],
    }
    procs, logs = {}, {}

    def start(name: str) -> None:
        logs[name] = tmp / f"{name}.log"
        with open(logs[name], "wb") as out:
            procs[name] = subprocess.Popen(
                commands[name], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    start("code")  # serving before the others connect, as a deploy's health check ensures
    health = [str(BIN / "dagster"), "api", "grpc-health-check", "-h", "127.0.0.1", "-p", str(code_port)]
    deadline = time.monotonic() + 120
    while subprocess.run(health, capture_output=True).returncode != 0:
        assert procs["code"].poll() is None and time.monotonic() < deadline, logs["code"].read_text()[-3000:]
        time.sleep(1)
    start("daemon")
    start("webserver")
    dev = DagsterDev(url=f"http://127.0.0.1:{port}", store=store.root, log=logs["webserver"], proc=procs["webserver"])
    try:
        _wait_until_ready(dev, timeout=120)
        yield Deployment(dev, store, rules, logs)
    finally:
        for proc in procs.values():
            _stop(proc)


def runs(dev: DagsterDev) -> list[dict]:
    return dev.gql(RUNS)["runsOrError"]["results"]


def materialized_partitions(dev: DagsterDev, asset: str) -> list[str | None]:
    data = dev.gql(MATERIALIZED, key={"path": [asset]})
    return [m["partition"] for m in data["assetOrError"]["assetMaterializations"]]


def failures(dev: DagsterDev, run_id: str) -> str:
    events = dev.gql(FAILED_STEPS, runId=run_id)["logsForRun"].get("events", [])
    return "; ".join(f"{e['stepKey']}: {e['error']['message'][:800]}" for e in events if e.get("stepKey"))


def wait_for_datasets(dev: DagsterDev, logs: dict, timeout: float = 1200) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed = [run for run in runs(dev) if run["status"] == "FAILURE"]
        if failed:
            detail = "\n".join(
                f"{run['runId']} {run['assetSelection']}: {failures(dev, run['runId'])}" for run in failed
            )
            pytest.fail(f"a run failed:\n{detail}")
        settled = all(run["status"] in ("SUCCESS", "CANCELED") for run in runs(dev))
        if settled and materialized_partitions(dev, "training_datasets"):
            return
        time.sleep(3)
    seen = "\n".join(f"{run['status']} {[a['path'][0] for a in run['assetSelection']]}" for run in runs(dev))
    daemon = logs["daemon"].read_text(errors="replace")[-4000:]
    pytest.fail(f"no datasets after {timeout:.0f} s; runs:\n{seen}\ndaemon log tail:\n{daemon}")


def test_a_new_release_reaches_the_datasets_with_no_click_after_the_sensor(deployment):
    dev, store, logs = deployment.dev, deployment.store, deployment.logs
    started = dev.gql(START_SENSOR, sensorSelector={**REPOSITORY, "sensorName": "new_release_sensor"})
    assert started["startSensor"]["sensorState"]["status"] == "RUNNING", started
    t0 = time.monotonic()
    wait_for_datasets(dev, logs)
    elapsed = time.monotonic() - t0

    key = "local__tasklite"
    all_runs = runs(dev)
    assert all(run["status"] == "SUCCESS" for run in all_runs), [(r["status"], r["assetSelection"]) for r in all_runs]
    tags = [{tag["key"]: tag["value"] for tag in run["tags"]} for run in all_runs]
    by_sensor = [t for t in tags if t.get("dagster/sensor_name") == "new_release_sensor"]
    assert len(by_sensor) == 1 and by_sensor[0]["harnessforge/release"] == "v0.2.0"
    automated = [t for t in tags if t.get("dagster/sensor_name") == "harnessforge_automation"]
    assert len(automated) == len(all_runs) - 1  # every other run came from the automation, none from a click
    # each stage ran for exactly what the plan has (one milestone), each partition once
    assert materialized_partitions(dev, "milestone_plans") == [key]
    assert materialized_partitions(dev, "raw_trajectories") == [f"m01|{key}"]
    assert materialized_partitions(dev, "dpo_pairs") == [f"m01|{key}"]
    assert materialized_partitions(dev, "verified_tasks") == [f"m01|{key}"]
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


STALENESS = """
query($key: AssetKeyInput!, $partitions: [String!]!) {
  assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { staleStatusByPartition(partitions: $partitions) } }
}"""
UNPARTITIONED_STALENESS = """
query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { staleStatus } } }"""
RELOAD = """
mutation($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) {
  __typename ... on WorkspaceLocationEntry { loadStatus } ... on PythonError { message } } }"""
SENSOR = """
query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
  __typename ... on Sensor { id sensorState { status } } } }"""
STOP_SENSOR = """
mutation($id: String!) { stopSensor(id: $id) {
  __typename ... on StopSensorMutationResult { instigationState { status } } ... on PythonError { message } } }"""
KEY = "local__tasklite"
PLAN_AND_RUN = {"repos": KEY, "milestone_plans": KEY, "docker_images": KEY}
PER_MILESTONE = ["validated_milestones", "raw_trajectories", *DISTILLED, "verified_tasks"]
UNPARTITIONED = ["trajectory_analytics", "training_datasets"]


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
    dev = deployment.dev
    assert materialized_partitions(dev, "training_datasets"), "runs after the release test, on its deployment"
    assert set(staleness(dev).values()) == {"FRESH"}
    automation = {**REPOSITORY, "sensorName": "harnessforge_automation"}
    sensor = dev.gql(SENSOR, selector=automation)["sensorOrError"]
    stopped = dev.gql(STOP_SENSOR, id=sensor["id"])["stopSensor"]  # so the UI shows the state before any rebuild
    assert stopped["instigationState"]["status"] == "STOPPED", stopped

    rules = yaml.safe_load(deployment.rules.read_text())
    rules["distill"]["slice_context_messages"] = 2  # how many messages before a stuck point a slice keeps
    deployment.rules.write_text(yaml.safe_dump(rules))
    assert dev.gql(RELOAD, name=LOCATION)["reloadRepositoryLocation"]["loadStatus"] == "LOADED"
    readers = {*DISTILLED, "verified_tasks", "training_datasets"}
    after = staleness(dev)
    assert {asset for asset, status in after.items() if status == "STALE"} == readers, after
    assert {asset for asset, status in after.items() if status == "FRESH"} == set(after) - readers

    trajectories = len(materialized_partitions(dev, "raw_trajectories"))
    started = dev.gql(START_SENSOR, sensorSelector=automation)["startSensor"]
    assert started["sensorState"]["status"] == "RUNNING", started
    deadline = time.monotonic() + 600
    while set(staleness(dev).values()) != {"FRESH"} or not all(
        run["status"] in ("SUCCESS", "CANCELED", "FAILURE") for run in runs(dev)
    ):
        assert time.monotonic() < deadline, f"still unsynced: {staleness(dev)}"
        time.sleep(3)
    assert all(run["status"] == "SUCCESS" for run in runs(dev))
    assert len(materialized_partitions(dev, "dpo_pairs")) == 2  # rebuilt once, by the automation
    assert len(materialized_partitions(dev, "raw_trajectories")) == trajectories  # the agent did not run again
    assert len(materialized_partitions(dev, "validated_milestones")) == 1
