"""Stage 3 in Dagster: analytics, distilled rows and datasets materialized on a real instance, and a
changed threshold making exactly the assets that read it stale."""

import dagster as dg
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from harnessforge.distill.outputs import DISTILLED_OUTPUTS
from harnessforge.rules import load_rules
from harnessforge.store import Store
from harnessforge_assets.distill import stage3_assets
from harnessforge_assets.partitions import repo_milestone_key
from resources import StoreResource
from tests.test_analytics import craft
from tests.test_distill import craft_more

DISTILLED = [output.asset for output in DISTILLED_OUTPUTS]
PARTITIONED = (*DISTILLED, "verified_tasks")  # per (repo, milestone)
STAGE3 = ("trajectory_analytics", *PARTITIONED, "training_datasets")
REPO = "acme__app"  # the crafted runs' repo: m01 has nine runs, m02 two


def with_rules(**changes):
    """The shipped rules with some section fields changed: {"analytics": {...}, ...}."""
    rules = load_rules()
    return rules.model_copy(
        update={section: getattr(rules, section).model_copy(update=fields) for section, fields in changes.items()}
    )


def stale(instance, assets) -> dict[tuple[str, str | None], StaleStatus]:
    """Status of each Stage 3 asset, per partition for the partitioned ones (m01, m02 and never-run m03)."""
    graph = dg.Definitions(assets=assets, resources={"store": StoreResource()}).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    out = {}
    for name in STAGE3:
        for milestone_id in ("m01", "m02", "m03") if name in PARTITIONED else (None,):
            partition = str(repo_milestone_key(REPO, milestone_id)) if milestone_id else None
            out[(name, milestone_id)] = resolver.get_status(dg.AssetKey(name), partition)
    return out


def test_stage3_materializes_per_milestone_and_a_changed_threshold_marks_exactly_its_readers_stale(tmp_path):
    store = Store(tmp_path / "store")
    craft(store)
    craft_more(store)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [REPO])
    instance.add_dynamic_partitions("milestone", ["m01", "m02", "m03"])
    resources = {"store": StoreResource(root=str(store.root))}
    shipped = stage3_assets(load_rules())

    def materialize(selection, **kwargs):
        result = dg.materialize(shipped, instance=instance, resources=resources, selection=selection, **kwargs)
        assert result.success
        return {
            event.asset_key.to_user_string(): event.materialization.metadata
            for event in result.get_asset_materialization_events()
        }

    meta = materialize(["trajectory_analytics"])
    assert meta["trajectory_analytics"]["trajectories_loaded"].value == 11
    assert "| stuck_points | table |" in meta["trajectory_analytics"]["models"].value
    rows = {}
    for milestone_id in ("m01", "m02"):
        meta = materialize(list(PARTITIONED), partition_key=repo_milestone_key(REPO, milestone_id))
        rows[milestone_id] = {name: meta[name]["rows"].value for name in DISTILLED}
        assert meta["verified_tasks"]["cards"].value == 0  # no plan, no task card
    assert rows["m01"]["reviews"] == 9 and rows["m02"]["reviews"] == 2  # each partition cuts its own runs
    assert rows["m02"]["dpo_pairs"] >= 1  # the twins' fail-vs-pass pair lives in m02
    assert (store.root / "distilled" / "milestones" / REPO / "m02" / "dpo_pairs.jsonl").exists()
    # m03 has no run and the repo no plan: a no-op
    assert materialize(list(PARTITIONED), partition_key=repo_milestone_key(REPO, "m03")) == {}
    assert not (store.root / "distilled" / "milestones" / REPO / "m03").exists()

    run_config = {"ops": {"training_datasets": {"config": {"allow_synthetic": False}}}}
    meta = materialize(["training_datasets"], run_config=run_config)
    assert meta["training_datasets"]["assembled"].value["reviews"] == 11
    assert "HarnessForge export" in meta["training_datasets"]["dataset_card"].value
    assert (store.root / "datasets" / "dpo" / "trl.parquet").exists()

    before = stale(instance, shipped)
    assert {status for (name, milestone_id), status in before.items() if milestone_id != "m03"} == {StaleStatus.FRESH}
    assert {status for (name, milestone_id), status in before.items() if milestone_id == "m03"} == {StaleStatus.MISSING}
    # a mentor threshold: no Stage 3 output reads it
    mentor = with_rules(harness={"mentor": load_rules().harness.mentor.model_copy(update={"cooldown_turns": 3})})
    assert stale(instance, stage3_assets(mentor)) == before
    # a distillation threshold: exactly the materialized partitions of the distilled rows, and the datasets
    slices = stale(instance, stage3_assets(with_rules(distill={"slice_context_messages": 2})))
    assert slices[("trajectory_analytics", None)] == StaleStatus.FRESH
    assert {slices[(name, milestone)] for name in PARTITIONED for milestone in ("m01", "m02")} == {StaleStatus.STALE}
    assert {slices[(name, "m03")] for name in PARTITIONED} == {StaleStatus.MISSING}  # never materialized: not unsynced
    assert slices[("training_datasets", None)] == StaleStatus.STALE
    # an analytics threshold: everything downstream of the SQL models
    stuck = stale(instance, stage3_assets(with_rules(analytics={"stuck_same_error_cycles": 4})))
    assert {status for (name, milestone_id), status in stuck.items() if milestone_id != "m03"} == {StaleStatus.STALE}
