"""Stage 3 in Dagster: analytics, distilled rows and datasets materialized on a real instance, and a
changed threshold making exactly the assets that read it stale."""

import dagster as dg
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from harnessforge.rules import load_rules
from harnessforge.store import Store
from harnessforge_assets.distill import DISTILLED, stage3_assets
from resources import StoreResource
from tests.test_analytics import craft
from tests.test_distill import craft_more

STAGE3 = ("trajectory_analytics", *DISTILLED, "training_datasets")


def with_rules(**changes):
    """The shipped rules with some section fields changed: {"analytics": {...}, ...}."""
    rules = load_rules()
    return rules.model_copy(update={sec: getattr(rules, sec).model_copy(update=v) for sec, v in changes.items()})


def stale(instance, assets) -> dict[str, StaleStatus]:
    graph = dg.Definitions(assets=assets, resources={"store": StoreResource()}).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    return {name: resolver.get_status(dg.AssetKey(name)) for name in STAGE3}


def test_stage3_materializes_and_a_changed_threshold_marks_exactly_its_readers_stale(tmp_path):
    store = Store(tmp_path / "store")
    craft(store)
    craft_more(store)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"store": StoreResource(root=str(store.root))}
    shipped = stage3_assets(load_rules())
    run_config = {"ops": {"training_datasets": {"config": {"allow_synthetic": False}}}}
    result = dg.materialize(shipped, instance=instance, resources=resources, run_config=run_config)
    assert result.success
    meta = {e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    assert meta["trajectory_analytics"]["trajectories_loaded"].value == 11
    assert "| stuck_points | table |" in meta["trajectory_analytics"]["models"].value
    assert meta["dpo_pairs"]["rows"].value >= 3 and meta["reviews"]["rows"].value == 11
    assert "HarnessForge export" in meta["training_datasets"]["dataset_card"].value
    assert (store.root / "datasets" / "dpo" / "trl.parquet").exists()

    assert set(stale(instance, shipped).values()) == {StaleStatus.FRESH}
    # a mentor threshold: no Stage 3 output reads it
    mentor = with_rules(harness={"mentor": load_rules().harness.mentor.model_copy(update={"cooldown_turns": 3})})
    assert set(stale(instance, stage3_assets(mentor)).values()) == {StaleStatus.FRESH}
    # a distillation threshold: the distilled rows and the datasets, not the analytics
    slices = stale(instance, stage3_assets(with_rules(distill={"slice_context_messages": 2})))
    assert slices["trajectory_analytics"] == StaleStatus.FRESH
    assert {slices[n] for n in (*DISTILLED, "training_datasets")} == {StaleStatus.STALE}
    # an analytics threshold: everything downstream of the SQL models
    stuck = stale(instance, stage3_assets(with_rules(analytics={"stuck_same_error_cycles": 4})))
    assert set(stuck.values()) == {StaleStatus.STALE}
