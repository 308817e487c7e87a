"""The Dagster UI, end to end: the real `dagster dev` (webserver + daemon + code server) on a free
127.0.0.1 port, driven through the GraphQL mutations the UI itself sends (Add partition, Materialize),
and the global asset lineage page rendered by headless Chromium (DOM + a screenshot artifact).

The screenshot and the rendered DOM go to $HARNESSFORGE_ARTIFACTS (a directory) when it is set,
else to <repo>/test-artifacts/ (git-ignored)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from harnessforge.gitio import resolve_repo
from harnessforge.store import Store
from tests.browser import artifact_dir, headless
from tests.helpers import EXAMPLE_RULES, free_port

ROOT = Path(__file__).resolve().parents[1]
DAGSTER = Path(sys.executable).parent / "dagster"
LOCATION = "harnessforge"  # workspace.yaml's location_name
REPOSITORY = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__"}
GRAPH_ASSETS = (  # the chain of stages the lineage graph shows, in order (the analytics' 17: one collapsed group)
    "repos milestone_plans docker_images validated_milestones raw_trajectories training_datasets"
).split()
COLLAPSED = "analytics"  # a group per SQL model would not fit the page; its node shows the group
ANSI = re.compile(r"\x1b\[[0-9;]*m")

ADD_PARTITION = """
mutation AddDynamicPartitionMutation($repositorySelector: RepositorySelector!, $partitionsDefName: String!,
                                     $partitionKey: String!) {
  addDynamicPartition(repositorySelector: $repositorySelector, partitionsDefName: $partitionsDefName,
                      partitionKey: $partitionKey) {
    __typename
    ... on AddDynamicPartitionSuccess { partitionKey }
    ... on PythonError { message stack }
    ... on UnauthorizedError { message }
    ... on DuplicateDynamicPartitionError { partitionName }
  }
}"""
LAUNCH = """
mutation LaunchPipelineExecution($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on PythonError { message stack }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
    ... on PipelineNotFoundError { message }
  }
}"""
RUN_STATUS = "query($runId: ID!) { runOrError(runId: $runId) { __typename ... on Run { status } } }"
RUN_EVENTS = """
query($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events { __typename ... on MessageEvent { message level stepKey } ... on ErrorEvent { error { message stack } } }
    }
    ... on PythonError { message }
  }
}"""
MATERIALIZATIONS = """
query($partitions: [String!]) {
  repos: assetOrError(assetKey: {path: ["repos"]}) {
    __typename ... on Asset { assetMaterializations(partitions: $partitions) { partition runId } }
  }
  plans: assetOrError(assetKey: {path: ["milestone_plans"]}) {
    __typename
    ... on Asset {
      assetMaterializations(partitions: $partitions) {
        partition runId metadataEntries { label __typename ... on IntMetadataEntry { intValue } }
      }
    }
  }
}"""
LOCATIONS = """
{ workspaceOrError { __typename ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename ... on PythonError { message stack } } } } } }"""


@dataclass
class DagsterDev:
    """A running `dagster dev`: its URL, the HarnessForge store its runs use, and its log."""

    url: str
    store: Path
    log: Path
    proc: subprocess.Popen

    def log_tail(self, lines: int = 60) -> str:
        text = ANSI.sub("", self.log.read_text(errors="replace")) if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def gql(self, query: str, **variables) -> dict:
        """POST /graphql as the UI does; the `data` of a reply without GraphQL errors."""
        r = requests.post(f"{self.url}/graphql", json={"query": query, "variables": variables}, timeout=60)
        assert r.status_code == 200, f"/graphql answered {r.status_code}: {r.text[:2000]}"
        body = r.json()
        assert not body.get("errors"), f"GraphQL errors: {body['errors']}"
        return body["data"]


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory):
    """`dagster dev -w workspace.yaml` with a temp DAGSTER_HOME and HARNESSFORGE_HOME, no GitHub token."""
    tmp = tmp_path_factory.mktemp("dagster_dev")
    home, store = tmp / "dagster_home", tmp / "store"
    home.mkdir()
    store.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "HARNESSFORGE_HOME": str(store),
        "GITHUB_TOKEN": "",
        "HARNESSFORGE_RULES": EXAMPLE_RULES,
    }
    log = tmp / "dagster_dev.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(DAGSTER), "dev", "-w", str(ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # a shell may start background jobs with SIGINT ignored; dagster dev must be able to get it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    dev = DagsterDev(url=f"http://127.0.0.1:{port}", store=store, log=log, proc=proc)
    try:
        _wait_until_ready(dev)
        yield dev
    finally:
        _stop(proc)


def _wait_until_ready(dev: DagsterDev, timeout: float = 90) -> None:
    """Until `{ version }` answers and the code location is loaded; fails with the log tail."""
    deadline = time.monotonic() + timeout
    state = "no answer to { version }"
    while time.monotonic() < deadline:
        if dev.proc.poll() is not None:
            pytest.fail(f"dagster dev exited with {dev.proc.returncode}:\n{dev.log_tail()}")
        try:
            r = requests.post(f"{dev.url}/graphql", json={"query": "{ version }"}, timeout=5)
            if r.ok and r.json().get("data", {}).get("version"):
                entries = dev.gql(LOCATIONS)["workspaceOrError"]["locationEntries"]
                entry = next((e for e in entries if e["name"] == LOCATION), None)
                state = f"code location: {entry}"
                if entry and entry["loadStatus"] == "LOADED":
                    loaded = entry["locationOrLoadError"]
                    if loaded["__typename"] == "PythonError":
                        stack = "".join(loaded["stack"])
                        pytest.fail(f"code location {LOCATION} failed to load: {loaded['message']}{stack}")
                    return
        except requests.RequestException as e:
            state = f"{type(e).__name__}"
        time.sleep(0.5)
    pytest.fail(f"dagster dev not ready after {timeout:.0f} s ({state}); log tail:\n{dev.log_tail()}")


def _stop(*procs: subprocess.Popen, grace: float = 10) -> None:
    """SIGINT to each process group at once (dagster dev, webserver, daemon, code servers), `grace`
    seconds for all of them to go, then SIGKILL to each group (also whatever the SIGINT left behind)."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + grace
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


# ---- A: the real webserver, through the UI's GraphQL mutations ------------------------------------


def _wait_for_run(dev: DagsterDev, run_id: str, timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    status = "?"
    while time.monotonic() < deadline:
        run = dev.gql(RUN_STATUS, runId=run_id)["runOrError"]
        assert run["__typename"] == "Run", run
        status = run["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(0.5)
    pytest.fail(f"run {run_id} still {status} after {timeout:.0f} s\n{_run_events(dev, run_id)}\n{dev.log_tail()}")


def _run_events(dev: DagsterDev, run_id: str) -> str:
    logs = dev.gql(RUN_EVENTS, runId=run_id)["logsForRun"]
    lines = []
    for e in logs.get("events", []):
        lines.append(f"{e['__typename']} [{e.get('stepKey') or '-'}] {e.get('message', '')}")
        if e.get("error"):
            lines.append(e["error"]["message"] + "".join(e["error"]["stack"] or []))
    return "\n".join(lines) or str(logs)


def test_materialize_a_partition_through_the_webserver_graphql(dagster_dev, example_repo):
    dev = dagster_dev
    spec = resolve_repo(str(example_repo))
    Store(dev.store).save_repo(spec)  # register the local repo: `spec_for_partition` finds its key
    key = spec.key

    added = dev.gql(ADD_PARTITION, repositorySelector=REPOSITORY, partitionsDefName="repo", partitionKey=key)
    assert added["addDynamicPartition"] == {"__typename": "AddDynamicPartitionSuccess", "partitionKey": key}

    params = {
        "selector": {
            **REPOSITORY,
            "pipelineName": "__ASSET_JOB",
            "assetSelection": [{"path": ["repos"]}, {"path": ["milestone_plans"]}],
        },
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
    }
    launched = dev.gql(LAUNCH, executionParams=params)["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    status = _wait_for_run(dev, run_id)
    assert status == "SUCCESS", f"run {run_id} ended {status}:\n{_run_events(dev, run_id)}\n{dev.log_tail()}"

    data = dev.gql(MATERIALIZATIONS, partitions=[key])
    assert data["repos"]["__typename"] == "Asset", data["repos"]
    assert [(m["partition"], m["runId"]) for m in data["repos"]["assetMaterializations"]] == [(key, run_id)]
    assert data["plans"]["__typename"] == "Asset", data["plans"]
    plans = data["plans"]["assetMaterializations"]
    assert [(m["partition"], m["runId"]) for m in plans] == [(key, run_id)]
    entries = {e["label"]: e for e in plans[0]["metadataEntries"]}
    assert "milestones" in entries, sorted(entries)
    assert entries["milestones"]["__typename"] == "IntMetadataEntry"
    assert entries["milestones"]["intValue"] > 0
    # the run wrote into the HARNESSFORGE_HOME the server was started with
    assert (Store(dev.store).repo_dir(key) / "plan.json").exists()


# ---- B: the global asset lineage page in headless Chromium ---------------------------------------


class _TextNodes(HTMLParser):
    """The stripped text nodes of an HTML document, scripts and styles left out."""

    def __init__(self):
        super().__init__()
        self.texts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(data.strip())


def _text_nodes(html: str) -> list[str]:
    parser = _TextNodes()
    parser.feed(html)
    return parser.texts


def _png_check(path: Path) -> tuple[int, int]:
    """(width, height) of an 8-bit RGB/RGBA PNG whose pixels are not uniform.

    Without an image library: the IDAT stream must inflate to exactly height x (1 + width x bpp) bytes,
    and the (filtered) scanlines must vary. A uniform image filters to a handful of byte values (its
    colour, zeros from the Sub/Up/Paeth predictors, the filter types) and to a few distinct rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    assert header, f"{path}: no IHDR"
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"{path}: unexpected PNG format {header}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = 1 + width * bpp
    assert len(raw) == height * stride, f"{path}: {len(raw)} bytes of pixels for {width}x{height}"
    rows = {raw[i * stride : (i + 1) * stride] for i in range(height)}
    assert len(set(raw)) > 64 and len(rows) > height // 10, f"{path}: the screenshot looks uniform"
    return width, height


@pytest.mark.timeout(1200)  # up to three renders, each slow on a loaded machine (CI runs two workers on 2 cores)
def test_asset_lineage_page_renders_in_headless_chromium(dagster_dev, tmp_path):
    dev = dagster_dev
    # What the first-visit "Join the Dagster community" dialog's Skip button sends: no modal over the graph.
    assert dev.gql("mutation { setNuxSeen }")["setNuxSeen"] is True
    nodes = dev.gql("{ assetNodes { assetKey { path } groupName } }")["assetNodes"]
    names = {"/".join(n["assetKey"]["path"]) for n in nodes}
    assert names >= set(GRAPH_ASSETS), sorted(names)
    # The global lineage graph starts with its groups collapsed; `expanded` lists the open groups (ids as in
    # the UI's asset-graph-open-graph-nodes state).
    groups = sorted({n["groupName"] for n in nodes} - {COLLAPSED})
    url = f"{dev.url}/asset-groups?expanded=" + quote(",".join(f"global@global:{g}" for g in groups), safe="@:,")

    artifacts = artifact_dir()
    png, dom_file = artifacts / "dagster_asset_graph.png", artifacts / "dagster_asset_graph.html"
    # The page fits the graph to the window; below a zoom level it draws minimal nodes whose names are
    # middle-truncated ("valida…_milestones"). So a window large enough for full node cards, and a larger
    # one if the graph has outgrown it (or a longer virtual-time budget if the page was not drawn yet).
    attempts = [((3600, 2100), 15_000), ((4800, 2800), 30_000), ((6000, 3500), 30_000)]
    for (width, height), budget in attempts:
        png.unlink(missing_ok=True)
        proc = headless(url, tmp_path / f"chromium-{width}", (width, height), png, budget, timeout=300)
        dom_file.write_text(proc.stdout)
        texts = _text_nodes(proc.stdout)
        missing = [a for a in (*GRAPH_ASSETS, COLLAPSED) if a not in texts]
        if proc.returncode == 0 and not missing and png.exists():
            break
    assert proc.returncode == 0, f"chromium exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "Global asset lineage" in texts, f"not the lineage page (DOM in {dom_file}): {texts[:40]}"
    truncated = [t for t in texts if "…" in t]
    assert not missing, (
        f"asset names missing from the rendered graph at {width}x{height} (DOM in {dom_file}): {missing}; "
        f"truncated labels: {truncated}; texts: {texts}"
    )
    assert png.exists(), f"no screenshot; chromium stderr:\n{proc.stderr[-3000:]}"
    assert png.stat().st_size > 20_000, f"{png} is only {png.stat().st_size} bytes"
    assert _png_check(png) == (width, height)
