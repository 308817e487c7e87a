"""Stage 3 in Dagster: analytics, distilled rows and datasets materialized on a real instance, and a
changed threshold making exactly the assets that read it stale: a distill rule every distilled
partition, an analytics threshold the models that read it, then the distilled partitions whose rows
those models changed."""

import dagster as dg
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from harnessforge.distill.outputs import DISTILLED_OUTPUTS
from harnessforge.rules import load_rules
from harnessforge.store import Store
from harnessforge_assets.analytics import analytics_assets, milestone_assets
from harnessforge_assets.distill import stage3_assets
from harnessforge_assets.partitions import repo_milestone_key
from harnessforge_assets.versions import with_code_versions
from resources import StoreResource
from tests.test_analytics import craft
from tests.test_distill import craft_more

DISTILLED = [output.asset for output in DISTILLED_OUTPUTS]
PARTITIONED = (*DISTILLED, "verified_tasks")  # per (repo, milestone)
STAGE3 = (*PARTITIONED, "training_datasets")
REPO = "acme__app"  # the crafted runs' repo: m01 has nine runs, m02 two


def with_rules(**changes):
    """The shipped rules with some section fields changed: {"analytics": {...}, ...}."""
    rules = load_rules()
    return rules.model_copy(
        update={section: getattr(rules, section).model_copy(update=fields) for section, fields in changes.items()}
    )


def assets_of(rules):
    """The Stage 3 assets as the code location builds them from `rules`."""
    return with_code_versions([*analytics_assets(rules), *stage3_assets(rules)], rules)


def stale(instance, assets, names=STAGE3) -> dict[tuple[str, str | None], StaleStatus]:
    """Status of each asset, per partition for the partitioned ones (m01, m02 and never-run m03)."""
    graph = dg.Definitions(assets=assets, resources={"store": StoreResource()}).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    out = {}
    for name in names:
        for milestone_id in ("m01", "m02", "m03") if name not in ("training_datasets",) else (None,):
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
    shipped = assets_of(load_rules())

    def materialize(selection, assets=shipped, **kwargs):
        result = dg.materialize(assets, instance=instance, resources=resources, selection=selection, **kwargs)
        assert result.success
        return {
            event.asset_key.to_user_string(): event.materialization.metadata
            for event in result.get_asset_materialization_events()
        }

    rows = {}
    for milestone_id in ("m01", "m02"):  # each milestone's analytics, then its distilled rows, in one run
        selection = [*milestone_assets(), *PARTITIONED]
        meta = materialize(selection, partition_key=repo_milestone_key(REPO, milestone_id))
        assert meta["milestone_summary"]["dagster/row_count"].value == {"m01": 9, "m02": 2}[milestone_id]
        rows[milestone_id] = {name: meta[name]["rows"].value for name in DISTILLED}
        assert meta["verified_tasks"]["cards"].value == 0  # no plan, no task card
    assert rows["m01"]["reviews"] == 9 and rows["m02"]["reviews"] == 2  # each partition cuts its own runs
    assert rows["m02"]["dpo_pairs"] >= 1  # the twins' fail-vs-pass pair lives in m02
    assert (store.root / "distilled" / "milestones" / REPO / "m02" / "dpo_pairs.jsonl").exists()
    # m03 has no run and the repo no plan: a no-op
    assert materialize([*milestone_assets(), *PARTITIONED], partition_key=repo_milestone_key(REPO, "m03")) == {}
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
    assert stale(instance, assets_of(mentor)) == before
    # a distillation threshold: exactly the materialized partitions of the distilled rows, and the datasets
    slices = stale(instance, assets_of(with_rules(distill={"slice_context_messages": 2})), ("stuck_points", *STAGE3))
    assert {slices[("stuck_points", milestone)] for milestone in ("m01", "m02")} == {StaleStatus.FRESH}
    assert {slices[(name, milestone)] for name in PARTITIONED for milestone in ("m01", "m02")} == {StaleStatus.STALE}
    assert {slices[(name, "m03")] for name in PARTITIONED} == {StaleStatus.MISSING}  # never materialized: not unsynced
    assert slices[("training_datasets", None)] == StaleStatus.STALE
    # an analytics threshold: the models that read it, not yet the rows below them
    stricter = with_rules(analytics={"stuck_same_error_cycles": 4})
    rules_file = tmp_path / "stricter.yaml"
    rules_file.write_text("analytics:\n  stuck_same_error_cycles: 4\n")
    stuck = stale(instance, assets_of(stricter), ("stuck_points", "milestone_summary", *DISTILLED))
    assert {stuck[(model, m)] for model in ("stuck_points", "milestone_summary") for m in ("m01", "m02")} == {
        StaleStatus.STALE
    }
    assert {stuck[(name, m)] for name in DISTILLED for m in ("m01", "m02")} == {StaleStatus.FRESH}
    # rebuilt with it: the stuck run of m01 is no longer stuck, so m01's distilled rows are unsynced; m02's
    # rows did not change, and nothing below them is
    resources["store"] = StoreResource(root=str(store.root), rules_path=str(rules_file))
    for milestone_id in ("m01", "m02"):
        materialize(
            ["stuck_points", "milestone_summary"],
            assets_of(stricter),
            partition_key=repo_milestone_key(REPO, milestone_id),
        )
    after = stale(instance, assets_of(stricter), DISTILLED)
    assert {after[(name, "m01")] for name in DISTILLED} == {StaleStatus.STALE}
    assert {after[(name, "m02")] for name in DISTILLED} == {StaleStatus.FRESH}
