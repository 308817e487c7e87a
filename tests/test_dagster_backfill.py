"""A backfill over several repos' chains, launched the way the UI launches one (GraphQL
`launchPartitionBackfill`) and run by the real daemon: each repo's milestones run in chain order,
whatever runs Dagster cuts the range into, and each partition is recorded once, none the plans lack.

Three repos, copies of the example repository at different releases: alpha has m01..m03, beta and
gamma only m01, so the milestone dimension has m01..m03 and four of the nine keys are in no plan.
Dagster cuts a multi-partition backfill along whichever dimension has fewer distinct keys (ties: the
first, `milestone`), so this one becomes three runs, m01 of every repo, m02, m03, queued together.
Plans and validations are made with the core beforehand (the local sandbox: no images to build).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from harnessforge.envs.environment import validate
from harnessforge.gitio import resolve_repo
from harnessforge.mining.planner import plan
from harnessforge.repos import open_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store
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
query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename ... on PartitionBackfill { status } } }"""
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


def test_a_multi_repo_backfill_keeps_each_chain_in_order_and_records_each_partition_once(
    example_repo, tmp_path, postgres_server
):
    store, rules = Store(tmp_path / "store"), load_rules(EXAMPLE_RULES)
    plans = {}
    for name, release in RELEASES.items():
        remote = remote_at(example_repo, tmp_path / "upstream" / f"{name}.git", release)
        spec = resolve_repo(str(remote))
        open_repo(store, spec)
        plan(store, str(remote), rules)
        validate(store, spec.key, rules, backend="local")
        plans[spec.key] = [milestone.id for milestone in store.load_plan(spec.key).milestones]
    assert sorted(map(len, plans.values())) == [1, 1, 3]
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
        while (status := dev.gql(BACKFILL, id=backfill_id)["partitionBackfillOrError"]["status"]) in (
            "REQUESTED",
            "CANCELING",
        ):
            assert time.monotonic() < deadline, f"backfill still {status}: {deployment.runs()}"
            time.sleep(3)
        runs = [run for run in deployment.runs() if {"key": "dagster/backfill", "value": backfill_id} in run["tags"]]
        assert status == "COMPLETED_SUCCESS", (status, runs)
        assert [run["status"] for run in runs] == ["SUCCESS"] * 3  # m01 of every repo, m02, m03
        recorded = deployment.materialized_partitions("raw_trajectories")

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
