"""A backfill over several repos' chains, launched the way the UI launches one (GraphQL
`launchPartitionBackfill`) and run by the real daemon: each repo's milestones run in chain order,
whatever runs Dagster cuts the range into, and each partition is recorded once, none the plans lack.

Three repos, copies of the example repository at different releases: alpha has m01..m03, beta and
gamma only m01, so the milestone dimension has m01..m03 and four of the nine keys are in no plan.
Dagster cuts a backfill into runs as it likes: ranges along whichever dimension has fewer distinct
keys (ties: `milestone`), so this one becomes three runs, m01 of every repo, m02, m03, queued
together. The chain order does not depend on the cut (the chain lock, `harnessforge_assets/runs.py`).
The four keys no plan has are no-ops: never recorded as materialized, so the backfill ends
COMPLETED_FAILED with exactly those four as its failed partitions, which is what the UI then shows
("4 failed"), each run's log saying why.
Plans and validations are made with the core beforehand (the local sandbox: no images to build).
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import pytest

from harnessforge.envs.environment import validate
from harnessforge.gitio import resolve_repo
from harnessforge.mining.planner import plan
from harnessforge.repos import open_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store
from harnessforge_assets.runs import raw_trajectories
from resources import AgentResource, SandboxResource, StoreResource
from tests.dagster_deploy import serve
from tests.helpers import EXAMPLE_RULES
from tests.test_dagster_ui import ADD_PARTITION, REPOSITORY

LAUNCH_BACKFILL = """
mutation LaunchPartitionBackfill($backfillParams: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $backfillParams) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on UnauthorizedError { message }
  }
}"""
BACKFILL = """
query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename ... on PartitionBackfill {
  status
  assetBackfillData { assetBackfillStatuses { __typename ... on AssetPartitionsStatusCounts {
    numPartitionsTargeted numPartitionsMaterialized numPartitionsFailed } } }
} } }"""
RELEASES = {"alpha": "v0.3.0", "beta": "v0.2.0", "gamma": "v0.2.0"}  # each remote's newest release
RUN_ID = "dagster-oracle"  # the agent resource's default run id


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True, cwd=cwd).stdout


def remote_at(example_repo: Path, path: Path, release: str) -> Path:
    """A bare copy of the example repository whose newest release is `release`."""
    git("clone", "--quiet", "--bare", str(example_repo), str(path))
    later = [tag for tag in git("tag", "--contains", release, cwd=path).split() if tag != release]
    for tag in later:
        git("tag", "-d", tag, cwd=path)
    git("update-ref", "refs/heads/main", git("rev-list", "-n1", release, cwd=path).strip(), cwd=path)
    return path


def events(store: Store, key: str, milestone_id: str) -> list[dict]:
    files = store.milestone_run(key, RUN_ID, milestone_id)
    return [json.loads(line) for line in files.trajectory.read_text().splitlines()]


@pytest.fixture(scope="module")
def planned(example_repo, tmp_path_factory) -> tuple[Store, dict[str, list[str]]]:
    """The three repos registered, planned and validated: (store, repo key -> milestone ids)."""
    tmp = tmp_path_factory.mktemp("planned")
    store, rules = Store(tmp / "store"), load_rules(EXAMPLE_RULES)
    plans = {}
    for name, release in RELEASES.items():
        remote = remote_at(example_repo, tmp / "upstream" / f"{name}.git", release)
        spec = resolve_repo(str(remote))
        open_repo(store, spec)
        plan(store, str(remote), rules)
        validate(store, spec.key, rules, backend="local")
        plans[spec.key] = [milestone.id for milestone in store.load_plan(spec.key).milestones]
    assert sorted(map(len, plans.values())) == [1, 1, 3]
    return store, plans


def test_two_runs_asking_for_one_chain_take_turns_and_record_each_milestone_once(planned, tmp_path):
    """m02 and m01 of one repo asked for at once, by two runs (what two backfill runs, or a backfill and
    the automation, do): the chain lock makes them take turns; m01 runs before m02, each once."""
    store, plans = planned
    alpha = next(key for key, ids in plans.items() if len(ids) == 3)
    (tmp_path / "dagster_home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    instance.add_dynamic_partitions("repo", [alpha])
    instance.add_dynamic_partitions("milestone", ["m01", "m02"])
    resources = {
        "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES),
        "sandbox": SandboxResource(backend="local"),
        "agent": AgentResource(run_id="two-runs"),
    }

    def materialize(milestone_id: str):
        key = dg.MultiPartitionKey({"repo": alpha, "milestone": milestone_id})
        return dg.materialize([raw_trajectories], instance=instance, partition_key=key, resources=resources)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(materialize, ["m02", "m01"]))
    assert all(result.success for result in results)
    records = instance.fetch_materializations(dg.AssetKey("raw_trajectories"), limit=10).records
    assert sorted(record.partition_key for record in records) == [f"m01|{alpha}", f"m02|{alpha}"]
    first, second = (store.milestone_run(alpha, "two-runs", m) for m in ("m01", "m02"))
    before = [json.loads(line) for line in first.trajectory.read_text().splitlines()]
    after = [json.loads(line) for line in second.trajectory.read_text().splitlines()]
    assert before[-1]["ts"] <= after[0]["ts"]
    assert f"- m01 {store.load_milestone(alpha, 'm01').title}: PASS" in after[0]["action"]["content"]


def test_a_multi_repo_backfill_keeps_each_chain_in_order_and_records_each_partition_once(
    planned, tmp_path, postgres_server
):
    store, plans = planned
    assert all(m.status == "valid" for key in plans for m in store.load_plan(key).milestones)
    milestones = ["m01", "m02", "m03"]
    real = {f"{m}|{key}" for key, ids in plans.items() for m in ids}
    keys = [f"{m}|{key}" for key in plans for m in milestones]

    env = {"HARNESSFORGE_SANDBOX": "local"}  # and no HARNESSFORGE_AGENT: automation leaves the agent alone
    with serve(tmp_path, postgres_server, store, Path(EXAMPLE_RULES), env) as deployment:
        dev = deployment.dev
        deployment.set_sensor("harnessforge_automation", running=False)  # only the backfill runs
        for name, values in (("repo", list(plans)), ("milestone", milestones)):
            for value in values:  # the UI's "Add partition"
                added = dev.gql(
                    ADD_PARTITION, repositorySelector=REPOSITORY, partitionsDefName=name, partitionKey=value
                )
                assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
        params = {"assetSelection": [{"path": ["raw_trajectories"]}], "partitionNames": keys}
        launched = dev.gql(LAUNCH_BACKFILL, backfillParams=params)["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        backfill_id = launched["backfillId"]
        deadline = time.monotonic() + 900
        while (backfill := dev.gql(BACKFILL, id=backfill_id)["partitionBackfillOrError"])["status"] in (
            "REQUESTED",
            "CANCELING",
        ):
            assert time.monotonic() < deadline, f"backfill still {backfill['status']}: {deployment.runs()}"
            time.sleep(3)
        runs = [run for run in deployment.runs() if {"key": "dagster/backfill", "value": backfill_id} in run["tags"]]
        assert runs and all(run["status"] == "SUCCESS" for run in runs), runs
        (counts,) = backfill["assetBackfillData"]["assetBackfillStatuses"]
        assert backfill["status"] == "COMPLETED_FAILED", backfill
        assert counts == {
            "__typename": "AssetPartitionsStatusCounts",
            "numPartitionsTargeted": 9,
            "numPartitionsMaterialized": 5,
            "numPartitionsFailed": 4,  # the keys no plan has: requested, not produced
        }, counts
        recorded = deployment.materialized_partitions("raw_trajectories")
        print(f"backfill: {len(runs)} run(s)", [[tag for tag in run["tags"] if "range" in tag["key"]] for run in runs])

    assert sorted(recorded) == sorted(real)  # each real partition once; none of the four the plans lack
    alpha = next(key for key, ids in plans.items() if len(ids) == 3)
    for earlier, later in (("m01", "m02"), ("m02", "m03")):
        before, after = events(store, alpha, earlier), events(store, alpha, later)
        assert before[-1]["ts"] <= after[0]["ts"], f"{later} started before {earlier} ended"
        title = store.load_milestone(alpha, earlier).title
        assert f"- {earlier} {title}: PASS" in after[0]["action"]["content"]  # it continued the chain
    for key, ids in plans.items():
        for milestone_id in ids:
            summary = json.loads(store.milestone_run(key, RUN_ID, milestone_id).summary.read_text())
            assert summary["status"] == "PASS", (key, milestone_id, summary)
