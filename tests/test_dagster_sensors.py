"""Sensors: new upstream releases (a local git remote that gains a tag; GitHub releases through the
real PyGithub client against a local wire-protocol server), and the automation that distils new trajectories."""

import subprocess
import threading
from functools import partial

import dagster as dg
import pytest
from pydantic import ValidationError

from harnessforge.gitio import resolve_repo
from harnessforge.rules import load_rules
from harnessforge_assets.analytics import analytics_assets, milestone_assets
from harnessforge_assets.automation import gathers_upstream, rebuilds_on_new_rules
from harnessforge_assets.distill import stage3_assets
from harnessforge_assets.events import check_evaluation
from harnessforge_assets.plan import milestone_plans, repos
from harnessforge_assets.runs import raw_trajectories
from resources import AgentResource, GitHubResource, SandboxResource, StoreResource, UpstreamResource
from sensors import new_release_sensor
from tests.github_server import FakeGitHub
from tests.helpers import EXAMPLE_RULES


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
        "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES),
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
        "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES),
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
            "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES),
            "github": GitHubResource(token="t", api_url=fake.url),
            "upstream": UpstreamResource(repos=["octo/widgets"]),
        }
        (request,) = tick(dg.DagsterInstance.ephemeral(), resources).run_requests
        assert request.run_key == "octo__widgets:v2.0.0"  # not the draft, not the pre-release
        assert any(r.startswith("/repos/octo/widgets/releases") for r in fake.requests)
        # an API outage is a warning for that repo, and the tick still succeeds
        fake.fail_with = 503
        assert tick(dg.DagsterInstance.ephemeral(), resources).run_requests == []


def test_a_tick_is_bounded_well_under_the_sensor_deadline():
    upstream = UpstreamResource()
    assert upstream.worst_tick_s() == 40 <= upstream.tick_budget_s < 60  # ceil(25 / 8) x 10 s
    with pytest.raises(ValidationError, match=r"a tick could take 130 s .* over tick_budget_s 45"):
        UpstreamResource(per_tick=100, parallel_checks=8)


RUNS = "raw_trajectories"


def test_automation_analyses_and_distills_exactly_the_new_trajectories():
    """What replaced the distill sensor: the assets' automation conditions, evaluated as the
    `harnessforge_automation` sensor does on each tick."""
    shipped = dg.Definitions(
        assets=[raw_trajectories, *analytics_assets(load_rules()), *stage3_assets(load_rules())],
        resources={"store": StoreResource(), "sandbox": SandboxResource(), "agent": AgentResource()},
    )
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", ["acme__app"])
    instance.add_dynamic_partitions("milestone", ["m01", "m02", "m03"])
    evaluate = partial(dg.evaluate_automation_conditions, defs=shipped, instance=instance)

    first = evaluate()
    assert first.total_requested == 0  # nothing ran yet: nothing to distill (and no missing key forever)
    for partition in ("m01|acme__app", "m02|acme__app"):  # what a raw_trajectories run records
        instance.report_runless_asset_event(dg.AssetMaterialization("raw_trajectories", partition=partition))
        instance.report_runless_asset_event(
            check_evaluation(instance, RUNS, "trajectory_integrity", partition, passed=True)
        )
    instance.report_runless_asset_event(dg.AssetMaterialization(RUNS, partition="m03|acme__app"))
    failed = check_evaluation(instance, RUNS, "trajectory_integrity", "m03|acme__app", False, blocking=True)
    instance.report_runless_asset_event(failed)
    second = evaluate(cursor=first.cursor)
    # each new milestone's analytics and distilled rows, in one tick (the analytics' checks are requested
    # with their assets, so what reads them need not wait a tick); m03's trajectory failed its blocking
    # integrity check: nothing of it is loaded or distilled
    for name in (*milestone_assets(), "dpo_pairs", "stuck_slices", "verified_tasks"):
        assert second.get_requested_partitions(dg.AssetKey(name)) == {"m01|acme__app", "m02|acme__app"}, name
    assert second.get_requested_partitions(dg.AssetKey("memorisation_rates")) == set()  # once they are there
    # requested once: the next tick asks for nothing new while nothing changed
    assert evaluate(cursor=second.cursor).total_requested == 0


def test_a_gathering_asset_loses_no_update_that_lands_while_it_runs(postgres_instance_dir):
    """The datasets read every milestone's rows. After a rule change that both read, a tick requests
    the rows and the datasets at once (in runs of their own: Dagster cannot hold the datasets for rows
    of another run). The rows that land while the datasets run must rebuild them once more: the run
    that ends after those rows started before them. With a run really in progress on the instance."""
    parts = dg.StaticPartitionsDefinition(["m01", "m02"])
    started, release = threading.Event(), threading.Event()

    def definitions(rules: str) -> tuple[dg.Definitions, dg.AssetsDefinition]:
        @dg.asset(partitions_def=parts)
        def source() -> None: ...

        @dg.asset(partitions_def=parts, deps=[source], code_version=rules, automation_condition=rebuilds_on_new_rules())
        def rows() -> None: ...

        @dg.asset(deps=[rows], code_version=rules, automation_condition=gathers_upstream())
        def dataset() -> None:
            started.set()
            assert release.wait(120)

        return dg.Definitions(assets=[source, rows, dataset]), dataset

    def requested(tick) -> dict[str, set]:
        found = {key: tick.get_requested_partitions(dg.AssetKey(key)) for key in ("source", "rows", "dataset")}
        return {key: partitions for key, partitions in found.items() if partitions}

    with dg.DagsterInstance.from_config(str(postgres_instance_dir())) as instance:

        def landed(asset: str, *partitions: str | None) -> None:
            for partition in partitions or (None,):
                instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=partition))

        def evaluate(defs: dg.Definitions, after=None):
            return dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after and after.cursor)

        before, _ = definitions("rules-1")
        landed("source", "m01", "m02")
        landed("rows", "m01", "m02")
        landed("dataset")
        tick = evaluate(before)
        assert requested(tick) == {}
        defs, dataset = definitions("rules-2")  # a reload after a rule change
        tick = evaluate(defs, tick)
        assert requested(tick) == {"rows": {"m01", "m02"}, "dataset": {None}}

        outcome: list = []
        worker = threading.Thread(target=lambda: outcome.append(dg.materialize([dataset], instance=instance)))
        worker.start()  # the dataset's run, in progress until released
        assert started.wait(120)
        tick = evaluate(defs, tick)
        assert requested(tick) == {}
        landed("rows", "m01", "m02")  # the rows' run ends first
        tick = evaluate(defs, tick)
        assert requested(tick) == {}  # the dataset is still running
        release.set()
        worker.join(120)
        assert outcome and outcome[0].success  # the run really was in progress until here
        tick = evaluate(defs, tick)
        assert requested(tick) == {"dataset": {None}}  # once more, for the rows that landed while it ran
        tick = evaluate(defs, tick)
        assert requested(tick) == {}  # and only once
