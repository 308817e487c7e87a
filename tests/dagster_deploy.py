"""A Dagster deployment as deploy/ runs it, for end-to-end tests: a reloadable code server
(`dagster code-server start`), the real `dagster-daemon` and `dagster-webserver` both pointed at it,
and an instance with deploy/dagster.yaml's settings stored in a real PostgreSQL server. Tests drive
it through the webserver's GraphQL, the UI's own queries and mutations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harnessforge.store import Store
from tests.helpers import free_port
from tests.postgres import write_postgres_instance
from tests.test_dagster_ui import LOCATION, DagsterDev, _stop, _wait_until_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

START_SENSOR = """
mutation StartSensor($sensorSelector: SensorSelector!) {
  startSensor(sensorSelector: $sensorSelector) {
    __typename
    ... on Sensor { name sensorState { status } }
    ... on PythonError { message stack }
  }
}"""
SENSOR = """
query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
  __typename ... on Sensor { id sensorState { status } } } }"""
STOP_SENSOR = """
mutation($id: String!) { stopSensor(id: $id) {
  __typename ... on StopSensorMutationResult { instigationState { status } } ... on PythonError { message } } }"""
RUNS = """
{ runsOrError { __typename ... on Runs { results {
    runId status tags { key value } assetSelection { path }
} } } }"""
MATERIALIZED = """
query($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) { __typename ... on Asset { assetMaterializations { partition runId } } }
}"""


@dataclass
class Deployment:
    dev: DagsterDev  # the webserver
    store: Store
    rules: Path  # the rules file every process reads ($HARNESSFORGE_RULES)
    logs: dict[str, Path]

    def runs(self) -> list[dict]:
        return self.dev.gql(RUNS)["runsOrError"]["results"]

    def materialized_partitions(self, asset: str) -> list[str | None]:
        """One entry per materialization of `asset`, newest first."""
        data = self.dev.gql(MATERIALIZED, key={"path": [asset]})
        return [m["partition"] for m in data["assetOrError"]["assetMaterializations"]]

    def set_sensor(self, name: str, running: bool) -> None:
        selector = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__", "sensorName": name}
        if running:
            state = self.dev.gql(START_SENSOR, sensorSelector=selector)["startSensor"]["sensorState"]
        else:
            sensor = self.dev.gql(SENSOR, selector=selector)["sensorOrError"]
            state = self.dev.gql(STOP_SENSOR, id=sensor["id"])["stopSensor"]["instigationState"]
        assert state["status"] == ("RUNNING" if running else "STOPPED"), state


@contextmanager
def serve(tmp: Path, postgres_server, store: Store, rules: Path, env: dict[str, str]) -> Iterator[Deployment]:
    """Code server, daemon and webserver over `store` and `rules`, with `env` on top of ours."""
    home = write_postgres_instance(tmp / "dagster_home", postgres_server.url(postgres_server.create_database("d")))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "HARNESSFORGE_HOME": str(store.root),
        "HARNESSFORGE_RULES": str(rules),
        "HARNESSFORGE_AUTOMATION_INTERVAL_S": "5",
        "HARNESSFORGE_RELEASE_INTERVAL_S": "5",
        "GITHUB_TOKEN": "",
        **env,
    }
    # the storage first, once: the daemon and the webserver would otherwise both create it at start
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env=env, check=True, capture_output=True)
    code_port, port = free_port(), free_port()
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

    try:
        start("code")  # serving before the others connect, as a deploy's health check ensures
        health = [str(BIN / "dagster"), "api", "grpc-health-check", "-h", "127.0.0.1", "-p", str(code_port)]
        deadline = time.monotonic() + 120
        while subprocess.run(health, capture_output=True).returncode != 0:
            assert procs["code"].poll() is None and time.monotonic() < deadline, logs["code"].read_text()[-3000:]
            time.sleep(1)
        start("daemon")
        start("webserver")
        dev = DagsterDev(f"http://127.0.0.1:{port}", store=store.root, log=logs["webserver"], proc=procs["webserver"])
        _wait_until_ready(dev, timeout=120)
        yield Deployment(dev, store, rules, logs)
    finally:
        _stop(*procs.values())


def screenshot(deployment: Deployment, path: str, name: str, size: tuple[int, int] = (2400, 1500)) -> list[str]:
    """The UI page at `path` in headless Chromium: its screenshot saved as <artifacts>/<name>.png (the
    README's images are copies of these), and the text of its rendered DOM, for the test to check."""
    from tests.browser import artifact_dir, headless
    from tests.test_dagster_ui import _text_nodes

    assert deployment.dev.gql("mutation { setNuxSeen }")["setNuxSeen"] is True  # no first-visit dialog
    png = artifact_dir() / f"{name}.png"
    profile = deployment.logs["webserver"].parent / f"chromium-{name}"
    proc = headless(f"{deployment.dev.url}{path}", profile, size, png, budget_ms=20_000, timeout=120)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-3000:]
    (artifact_dir() / f"{name}.html").write_text(proc.stdout)
    return _text_nodes(proc.stdout)
