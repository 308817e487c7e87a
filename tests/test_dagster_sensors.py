"""Sensors: new upstream releases (a local git remote that gains a tag; GitHub releases through the
real PyGithub client against a local wire-protocol server) and new trajectories to distill."""

import subprocess

import dagster as dg
import pytest

from harnessforge.gitio import resolve_repo
from harnessforge_assets.plan import milestone_plans, repos
from resources import GitHubResource, StoreResource, UpstreamResource
from sensors import distill_sensor, new_release_sensor
from tests.github_server import FakeGitHub


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def remote(example_repo, tmp_path):
    """A bare upstream copy of the example repository (tags v0.1.0 .. v0.5.0)."""
    path = tmp_path / "upstream" / "tasklite.git"
    git("clone", "--quiet", "--bare", str(example_repo), str(path))
    return path


def tick(instance, resources, cursor=None) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    result = new_release_sensor(context)
    for request in result.dynamic_partitions_requests or []:  # what the daemon does with the result
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_new_release_adds_the_repo_partition_and_requests_one_run_per_tag(remote, store):
    instance = dg.DagsterInstance.ephemeral()
    resources = {
        "store": StoreResource(root=str(store.root)),
        "github": GitHubResource(),
        "upstream": UpstreamResource(repos=[str(remote)]),
    }
    key = resolve_repo(str(remote)).key

    first = tick(instance, resources)
    (request,) = first.run_requests
    assert request.partition_key == key and request.run_key == f"{key}:v0.5.0"
    assert request.tags["harnessforge/release"] == "v0.5.0"
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [[key]]
    assert instance.get_dynamic_partitions("repo") == [key]
    assert (store.repo_dir(key) / "repo.json").exists()  # the `repos` asset can resolve the key

    # the same tag again: no run, no partition request
    again = tick(instance, resources, first.cursor)
    assert again.run_requests == [] and not again.dynamic_partitions_requests
    assert "no new release among 1 repo(s) checked" in again.skip_reason.skip_message

    # upstream gains a release: one run for it, the partition already exists
    git("-C", str(remote), "tag", "v0.6.0", "HEAD")
    new = tick(instance, resources, again.cursor)
    (request,) = new.run_requests
    assert request.run_key == f"{key}:v0.6.0" and not new.dynamic_partitions_requests
    # a pre-release is not a release
    git("-C", str(remote), "tag", "v0.7.0rc1", "HEAD")
    assert tick(instance, resources, new.cursor).run_requests == []

    # the requested run works: screening and planning of the partition the sensor added
    run = dg.materialize(
        [repos, milestone_plans],
        instance=instance,
        partition_key=request.partition_key,
        resources=resources,
        tags=request.tags,
    )
    assert run.success
    newest = instance.get_latest_materialization_event(dg.AssetKey("repos")).asset_materialization.metadata
    assert newest["newest_release"].value == "v0.6.0"


def test_the_watch_list_is_paged_across_ticks_and_a_bad_remote_does_not_stop_the_others(example_repo, tmp_path, store):
    remotes = []
    for name in ("alpha", "beta", "gamma"):
        path = tmp_path / name
        git("clone", "--quiet", "--bare", str(example_repo), str(path))
        remotes.append(str(path))
    watch = [remotes[0], str(tmp_path / "missing.git"), remotes[1], remotes[2]]
    instance = dg.DagsterInstance.ephemeral()
    resources = {
        "store": StoreResource(root=str(store.root)),
        "github": GitHubResource(),
        "upstream": UpstreamResource(repos=watch, per_tick=2),
    }
    keys = [resolve_repo(r).key for r in remotes]
    first = tick(instance, resources)
    assert [r.partition_key for r in first.run_requests] == [keys[0]]  # alpha, then the missing one
    second = tick(instance, resources, first.cursor)
    assert [r.partition_key for r in second.run_requests] == [keys[1], keys[2]]
    third = tick(instance, resources, second.cursor)  # round robin: back to the start, nothing new
    assert third.run_requests == []
    assert sorted(instance.get_dynamic_partitions("repo")) == sorted(keys)


def test_with_a_token_the_sensor_watches_github_releases(store):
    release = {"url": "", "draft": False, "prerelease": False}
    with FakeGitHub() as fake:
        fake.routes["/repos/octo/widgets/releases"] = [
            {**release, "id": 3, "tag_name": "v2.1.0rc1", "prerelease": True},
            {**release, "id": 2, "tag_name": "v2.0.0"},
            {**release, "id": 1, "tag_name": "v1.9.0"},
            {**release, "id": 4, "tag_name": "v3.0.0", "draft": True},
        ]
        resources = {
            "store": StoreResource(root=str(store.root)),
            "github": GitHubResource(token="t", api_url=fake.url),
            "upstream": UpstreamResource(repos=["octo/widgets"]),
        }
        (request,) = tick(dg.DagsterInstance.ephemeral(), resources).run_requests
        assert request.run_key == "octo__widgets:v2.0.0"  # not the draft, not the pre-release
        assert any(r.startswith("/repos/octo/widgets/releases") for r in fake.requests)
        # an API outage is a warning for that repo, and the tick still succeeds
        fake.fail_with = 503
        assert tick(dg.DagsterInstance.ephemeral(), resources).run_requests == []


def test_distill_sensor_analyses_and_distills_each_new_milestone_on_its_own():
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor=None):
        return distill_sensor(dg.build_sensor_context(instance=instance, cursor=cursor))

    assert tick().skip_reason.skip_message == "no new trajectories"
    for partition in ("m01|acme__app", "m02|acme__app"):
        instance.report_runless_asset_event(dg.AssetMaterialization("raw_trajectories", partition=partition))

    first = tick()  # per partition: its analytics and its distilled rows, in one run
    assert [r.partition_key for r in first.run_requests] == ["m01|acme__app", "m02|acme__app"]
    for request in first.run_requests:
        assert {dg.AssetKey("raw_events"), dg.AssetKey("milestone_summary"), dg.AssetKey("verified_tasks")} <= set(
            request.asset_selection
        )
        assert dg.AssetKey("memorisation_rates") not in request.asset_selection  # per repo: not in this run
    assert tick(first.cursor).skip_reason.skip_message == "no new trajectories"

    # a re-run of m02: only m02, under a new run key
    instance.report_runless_asset_event(dg.AssetMaterialization("raw_trajectories", partition="m02|acme__app"))
    (again,) = tick(first.cursor).run_requests
    assert again.partition_key == "m02|acme__app" and again.run_key != first.run_requests[1].run_key
