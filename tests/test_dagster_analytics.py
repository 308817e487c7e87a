"""The analytics as Dagster assets, on a real (ephemeral) instance: one asset per SQL model with its
lineage, code version and checks; each (repo, milestone) partition recorded with a hash of its rows,
so a re-run that changes nothing changes no data version and a new run of one milestone changes that
milestone's alone; a threshold change gives new code versions to exactly the models that read it and
those below them; a repeated key fails its model's check for that partition."""

import dagster as dg
import pytest
from dagster._core.definitions.data_version import DATA_VERSION_TAG, CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from harnessforge.analytics import MILESTONE, partitioned_models
from harnessforge.analytics.sqlmodels import SOURCES
from harnessforge.rules import load_rules
from harnessforge.store import Store
from harnessforge_assets.analytics import DISTILLED_READS, analytics_assets, milestone_assets
from harnessforge_assets.events import check_evaluation
from harnessforge_assets.partitions import repo_milestone_key
from harnessforge_assets.runs import raw_trajectories
from resources import AgentResource, SandboxResource, StoreResource
from tests.test_analytics import OWN_DIFF, craft, explore
from tests.test_analytics_slices import duplicated_event
from tests.test_dagster_distill import with_rules
from tests.trajectories import CraftedRun

REPO = "acme__app"
MILESTONES = ("m01", "m02")
M01, M02 = (str(repo_milestone_key(REPO, milestone)) for milestone in MILESTONES)
BY_MILESTONE = milestone_assets()


def instance_for(store: Store):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [REPO])
    instance.add_dynamic_partitions("milestone", [*MILESTONES, "m03"])
    return instance


def run(instance, store, selection, assets=None, **kwargs):
    assets = assets or analytics_assets(load_rules())
    resources = {"store": StoreResource(root=str(store.root))}
    return dg.materialize(assets, instance=instance, resources=resources, selection=selection, **kwargs)


def graph_of(assets):
    return dg.Definitions(assets=assets, resources={"store": StoreResource()}).resolve_asset_graph()


def versions(instance) -> dict[tuple[str, str], str]:
    """The latest data version of every analytics asset's partition."""
    found = {}
    for name in (*BY_MILESTONE, "memorisation_rates"):
        for partition in (M01, M02, REPO) if name == "memorisation_rates" else (M01, M02):
            if (name == "memorisation_rates") != (partition == REPO):
                continue
            records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[partition])
            records = instance.fetch_materializations(records_filter, limit=1).records
            if records:
                found[(name, partition)] = records[0].asset_materialization.tags[DATA_VERSION_TAG]
    return found


def stale(instance, assets) -> dict[tuple[str, str], StaleStatus]:
    graph = graph_of(assets)
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    out = {}
    for name in (*BY_MILESTONE, "memorisation_rates"):
        for partition in (REPO,) if name == "memorisation_rates" else (M01, M02):
            out[(name, partition)] = resolver.get_status(dg.AssetKey(name), partition)
    return out


def analyse(root):
    """Both milestones of the crafted runs analysed through the assets, one run per partition."""
    store = Store(root / "store")
    craft(store)
    instance = instance_for(store)
    CraftedRun(store, "second", mid="m02").say().test(1, 0).finish("PASS", OWN_DIFF)
    for partition in (M01, M02):
        assert run(instance, store, BY_MILESTONE, partition_key=partition).success
    assert run(instance, store, ["memorisation_rates"], partition_key=REPO).success
    return store, instance


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    return analyse(tmp_path_factory.mktemp("dagster-analytics"))


def test_the_assets_lineage_versions_and_checks():
    graph = graph_of(analytics_assets(load_rules()))
    analytics = {key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).group_name == "analytics"}
    assert analytics == {*SOURCES, *partitioned_models(MILESTONE), "memorisation_rates"}
    assert len(analytics) == 3 + 14
    key = dg.AssetKey
    assert graph.get(key("milestone_summary")).parent_keys >= {
        key("stuck_points"),
        key("raw_runs"),
        key("raw_milestones"),
    }
    assert graph.get(key("stg_events")).parent_keys == {key("raw_events")}
    assert graph.get(key("raw_events")).parent_keys == {key("raw_trajectories")}
    assert isinstance(graph.get_partition_mapping(key("stg_events"), key("raw_events")), dg.IdentityPartitionMapping)
    assert isinstance(
        graph.get_partition_mapping(key("memorisation_rates"), key("milestone_summary")),
        dg.MultiToSingleDimensionPartitionMapping,
    )
    for name in analytics:
        node = graph.get(key(name))
        assert node.code_version and node.kinds >= {"duckdb"}, name
        assert node.automation_condition is not None, name
    assert all(graph.get(key(name)).pools == {"duckdb"} for name in analytics)
    checks = {(check.asset_key.to_user_string(), check.name) for check in graph.asset_check_keys}
    assert {
        ("stg_events", "unique"),
        ("milestone_summary", "one_row_per_raw_milestones"),
        ("raw_events", "lines_parse"),
    } <= checks
    assert {table.to_user_string() for table in DISTILLED_READS} < analytics


def test_each_partition_has_the_data_version_of_its_rows(analysed):
    store, instance = analysed
    first = versions(instance)
    assert set(first) == {(name, partition) for name in BY_MILESTONE for partition in (M01, M02)} | {
        ("memorisation_rates", REPO)
    }
    assert set(stale(instance, analytics_assets(load_rules())).values()) == {StaleStatus.FRESH}
    # m01 again, nothing changed: the same data versions, nothing below unsynced
    assert run(instance, store, BY_MILESTONE, partition_key=M01).success
    assert versions(instance) == first
    assert set(stale(instance, analytics_assets(load_rules())).values()) == {StaleStatus.FRESH}

    # a new run of m02: m02's rows change, and only those
    explore(CraftedRun(store, "late", mid="m02")).say().edit(sha="l1").say().test(0, 1).finish("STUCK", OWN_DIFF)
    assert run(instance, store, BY_MILESTONE, partition_key=M02).success
    after = versions(instance)
    changed = {asset for asset, partition in after if after[(asset, partition)] != first[(asset, partition)]}
    assert {partition for asset, partition in after if after[(asset, partition)] != first[(asset, partition)]} == {M02}
    assert {"raw_events", "raw_milestones", "raw_runs", "stg_events", "milestone_summary"} <= changed
    statuses = stale(instance, analytics_assets(load_rules()))
    assert statuses[("memorisation_rates", REPO)] == StaleStatus.STALE  # its repo read a new m02
    assert {status for (name, partition), status in statuses.items() if name != "memorisation_rates"} == {
        StaleStatus.FRESH
    }


def test_a_threshold_changes_the_code_versions_of_its_readers_and_a_range_rebuilds_in_one_run(analysed):
    store, instance = analysed
    loaded = {
        key.to_user_string(): version
        for assets in analytics_assets(load_rules())
        for key, version in assets.code_versions_by_key.items()
    }
    stricter = analytics_assets(with_rules(analytics={"stuck_same_error_cycles": 4}))
    now = {key.to_user_string(): version for assets in stricter for key, version in assets.code_versions_by_key.items()}
    assert {name for name in loaded if loaded[name] != now[name]} == {
        "stuck_points",
        "milestone_summary",
        "memorisation_rates",
    }
    for changes, readers in (
        ({"hint_response_turns": 7}, {"hint_responses", "milestone_summary", "memorisation_rates"}),
        ({"memorisation_warning_rate": 0.9}, {"memorisation_rates"}),  # read by the per-repo model alone
    ):
        assets = analytics_assets(with_rules(analytics=changes))
        now = {key.to_user_string(): version for each in assets for key, version in each.code_versions_by_key.items()}
        assert {name for name in loaded if loaded[name] != now[name]} == readers
    statuses = stale(instance, stricter)
    code = {key for key, status in statuses.items() if status == StaleStatus.STALE}
    assert code == {(name, partition) for name in ("stuck_points", "milestone_summary") for partition in (M01, M02)} | {
        ("memorisation_rates", REPO)
    }
    # both partitions of the two models rebuilt as one run, each recorded on its own
    before = versions(instance)
    tags = {ASSET_PARTITION_RANGE_START_TAG: M01, ASSET_PARTITION_RANGE_END_TAG: M02}
    resources = {"store": StoreResource(root=str(store.root), rules_path=None)}
    result = dg.materialize(
        stricter,
        instance=instance,
        resources=resources,
        selection=["stuck_points", "milestone_summary"],
        tags=tags,
        raise_on_error=False,
    )
    assert not result.success  # the run's rules (the shipped ones) no longer give the code version loaded
    assert "the rules changed since the code location loaded" in str(result.all_events)
    rules = store.root.parent / "stricter.yaml"
    rules.write_text("analytics:\n  stuck_same_error_cycles: 4\n")
    resources = {"store": StoreResource(root=str(store.root), rules_path=str(rules))}
    result = dg.materialize(
        stricter, instance=instance, resources=resources, selection=["stuck_points", "milestone_summary"], tags=tags
    )
    assert result.success
    events = result.get_asset_materialization_events()
    assert sorted((event.asset_key.to_user_string(), event.partition) for event in events) == [
        ("milestone_summary", M01),
        ("milestone_summary", M02),
        ("stuck_points", M01),
        ("stuck_points", M02),
    ]
    after = versions(instance)
    assert after[("stuck_points", M01)] != before[("stuck_points", M01)]  # the stuck run's three failures: no longer
    assert {key for key in after if after[key] != before[key]} <= {
        (name, partition) for name in ("stuck_points", "milestone_summary") for partition in (M01, M02)
    }
    statuses = stale(instance, stricter)  # each partition recorded with what it read, in this same step too
    assert statuses.pop(("memorisation_rates", REPO)) == StaleStatus.STALE  # its own code version: not rebuilt yet
    assert set(statuses.values()) == {StaleStatus.FRESH}


def test_a_repeated_key_fails_its_check_for_that_partition(tmp_path):
    store = Store(tmp_path / "store")
    duplicated_event(store)
    instance = instance_for(store)
    ok = run(instance, store, BY_MILESTONE, partition_key=M02)
    assert ok.success
    failed = run(instance, store, BY_MILESTONE, partition_key=M01, raise_on_error=False)
    assert not failed.success  # a blocking check: the step fails after recording its rows
    evaluations = {
        (evaluation.asset_key.to_user_string(), evaluation.check_name): evaluation
        for evaluation in failed.get_asset_check_evaluations()
    }
    assert not evaluations[("stg_events", "unique")].passed
    assert evaluations[("stg_events", "unique")].partition == M01
    assert evaluations[("milestone_summary", "one_row_per_raw_milestones")].passed
    passed = {(e.asset_key.to_user_string(), e.check_name): e.passed for e in ok.get_asset_check_evaluations()}
    assert passed[("stg_events", "unique")] and all(passed.values())


def test_automation_takes_one_new_milestone_run_through_its_partition_alone(tmp_path):
    store, instance = analyse(tmp_path)
    resources = {"store": StoreResource(root=str(store.root)), "agent": AgentResource(), "sandbox": SandboxResource()}
    defs = dg.Definitions(assets=[*analytics_assets(load_rules()), raw_trajectories], resources=resources)

    def requested(result) -> set[tuple[str, str]]:
        keys = [key for key in defs.resolve_asset_graph().get_all_asset_keys()]
        return {(key.to_user_string(), partition) for key in keys for partition in result.get_requested_partitions(key)}

    quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert quiet.total_requested == 0
    # m02 gets a new run (its trajectory and its blocking check, as raw_trajectories records them)
    explore(CraftedRun(store, "late", mid="m02")).say().test(0, 1).finish("STUCK", OWN_DIFF)
    instance.report_runless_asset_event(dg.AssetMaterialization("raw_trajectories", partition=M02))
    integrity = check_evaluation(instance, "raw_trajectories", "trajectory_integrity", M02, True)
    instance.report_runless_asset_event(integrity)
    tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
    assert requested(tick) == {(name, M02) for name in BY_MILESTONE}  # the whole chain in one tick, m02 alone
    assert run(instance, store, BY_MILESTONE, partition_key=M02).success
    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
    assert requested(after) == {("memorisation_rates", REPO)}  # then its repo's rollup
