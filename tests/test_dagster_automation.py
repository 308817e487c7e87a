"""A release flows from the sensor to the datasets by itself, as a deploy runs it: the real
`dagster-daemon` and `dagster-webserver` (separate processes, as in deploy/), the instance settings
of deploy/dagster.yaml on a real PostgreSQL server, the example repository as the upstream remote, the oracle Dev in Docker.
The only click is the one a data engineer makes: starting the release sensor (the UI's mutation).
Everything after that is the automation: planning, images, validation, the agent run, analytics,
distilled rows, the verified task and the datasets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge.store import Store
from tests.test_dagster_ui import REPOSITORY, DagsterDev, _free_port, _stop, _wait_until_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RULES = Path(__file__).parent / "fixtures" / "automation_rules.yaml"

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


@pytest.fixture
def upstream(example_repo, tmp_path) -> Path:
    """A bare upstream remote of the example repository whose newest release is v0.2.0 (later ones not yet out)."""
    remote = tmp_path / "upstream" / "tasklite.git"
    git("clone", "--quiet", "--bare", str(example_repo), str(remote))
    for tag in git("tag", cwd=remote).split():
        if tag not in ("v0.1.0", "v0.2.0"):
            git("tag", "-d", tag, cwd=remote)
    git("update-ref", "refs/heads/main", git("rev-list", "-n1", "v0.2.0", cwd=remote).strip(), cwd=remote)
    return remote


@pytest.fixture
def deployment(tmp_path, upstream, docker_client, base_image, postgres_instance_dir):
    """dagster-daemon + dagster-webserver over workspace.yaml; the instance: deploy/dagster.yaml's settings,
    stored in a real PostgreSQL server (dagster-postgres)."""
    home, store = postgres_instance_dir(), Store(tmp_path / "store")
    open_repo(store, resolve_repo(str(upstream)))  # the watch list: every repo registered in the store
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "HARNESSFORGE_HOME": str(store.root),
        "HARNESSFORGE_RULES": str(RULES),
        "HARNESSFORGE_AGENT": "oracle",  # automation runs the Dev: the offline oracle
        "HARNESSFORGE_AUTOMATION_INTERVAL_S": "5",
        "HARNESSFORGE_RELEASE_INTERVAL_S": "5",
        "GITHUB_TOKEN": "",
    }
    # the storage first, once: the daemon and the webserver would otherwise both create it at start
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env=env, check=True, capture_output=True)
    port = _free_port()
    workspace = ["-w", str(ROOT / "workspace.yaml")]
    commands = {
        "daemon": [str(BIN / "dagster-daemon"), "run", *workspace],
        "webserver": [str(BIN / "dagster-webserver"), *workspace, "-h", "127.0.0.1", "-p", str(port)],
    }
    procs, logs = {}, {}
    for name, command in commands.items():
        logs[name] = tmp_path / f"{name}.log"
        with open(logs[name], "wb") as out:
            procs[name] = subprocess.Popen(
                command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
    webserver = DagsterDev(
        url=f"http://127.0.0.1:{port}", store=store.root, log=logs["webserver"], proc=procs["webserver"]
    )
    try:
        _wait_until_ready(webserver)
        yield webserver, store, logs
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
    dev, store, logs = deployment
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
