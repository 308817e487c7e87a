"""The whole factory in Dagster: the example repository from `repos` to `training_datasets` for two
milestones, with the oracle Dev in Docker sandboxes, on a real (ephemeral) instance."""

import json

import dagster as dg

from harnessforge.models.run import MilestoneSummary
from harnessforge_assets.definitions import assets
from harnessforge_assets.partitions import repo_milestone_key
from resources import AgentResource
from tests.test_dagster import _plan_in_dagster

RUN_ID = "oracle-factory"


def by_asset(result) -> dict[str, list]:
    events: dict[str, list] = {}
    for e in result.get_asset_materialization_events():
        events.setdefault(e.asset_key.to_user_string(), []).append(e)
    return events


def metadata(event) -> dict:
    return {k: v.value for k, v in event.materialization.metadata.items()}


def checks(result) -> dict[str, bool]:
    return {c.check_name: c.passed for c in result.get_asset_check_evaluations()}


def test_full_lineage_for_two_milestones_in_docker(example_repo, store, docker_client, base_image):
    key, instance, resources = _plan_in_dagster(example_repo, store, sandbox="docker")
    resources = {**resources, "agent": AgentResource(run_id=RUN_ID)}
    partitions = [repo_milestone_key(key, m) for m in ("m01", "m02")]

    def materialize(selection, **kwargs):
        result = dg.materialize(assets, instance=instance, resources=resources, selection=selection, **kwargs)
        assert result.success
        return result

    plans = instance.get_latest_materialization_event(dg.AssetKey("milestone_plans"))
    assert "| m01 |" in plans.asset_materialization.metadata["plan"].value  # the Markdown plan table
    materialize(["docker_images"], partition_key=key)
    for p in partitions:
        validated = materialize(["validated_milestones"], partition_key=p)
        assert checks(validated) == {"environment_ran": True, "valid_has_fail_to_pass": True}

    # m01..m02 as one run, the way a backfill with the single-run policy launches it: in chain order.
    run = materialize(
        ["raw_trajectories"],
        tags={
            "dagster/asset_partition_range_start": str(partitions[0]),
            "dagster/asset_partition_range_end": str(partitions[1]),
        },
    )
    per_partition = {e.partition: metadata(e) for e in by_asset(run)["raw_trajectories"] if "status" in metadata(e)}
    assert set(per_partition) == {str(p) for p in partitions}
    assert per_partition[str(partitions[1])]["previous_milestone"] == "m01"
    assert "mentor_log" in per_partition[str(partitions[0])]
    latest = instance.get_latest_materialization_event(dg.AssetKey("raw_trajectories"))  # each partition: its own
    assert latest.asset_materialization.metadata["status"].value == "PASS"
    assert checks(run) == {"trajectory_integrity": True}
    run_dir = store.root / "trajectories" / key / RUN_ID
    m02 = MilestoneSummary.model_validate_json((run_dir / "m02" / "summary.json").read_text())
    m01 = MilestoneSummary.model_validate_json((run_dir / "m01" / "summary.json").read_text())
    assert m01.status == m02.status == "PASS" and m02.synthetic

    # each milestone in one run: its analytics, its distilled rows and, if its run was accepted, its verified
    # task card
    from harnessforge.distill.outputs import REVIEWS, read_distilled
    from harnessforge.rules import load_rules
    from harnessforge_assets.analytics import milestone_assets

    gates = load_rules().distill
    accepted = 0
    for p in partitions:
        distilled = materialize(
            [
                *milestone_assets(),
                *("stuck_slices", "dpo_pairs", "kto_rows", "sft_segments", "reviews", "task_cards", "verified_tasks"),
            ],
            partition_key=p,
        )
        events = by_asset(distilled)
        assert set(events) == {
            *milestone_assets(),
            "stuck_slices",
            "dpo_pairs",
            "kto_rows",
            "sft_segments",
            "reviews",
            "task_cards",
            "verified_tasks",
        }
        assert metadata(events["reviews"][0])["rows"] == 1  # this milestone's one run
        assert "| oracle-factory | PASS |" in metadata(events["reviews"][0])["verdicts"]
        (review,) = read_distilled(store, REVIEWS, (key, p.keys_by_dimension["milestone"]))
        card = int(review.status == "PASS" and gates.allows(review.discard_reasons, "tasks"))
        accepted += card
        assert metadata(events["task_cards"][0])["rows"] == card, review
        verified = metadata(events["verified_tasks"][0])
        assert verified["cards"] == verified["reproduced"] == card, verified
        results = checks(distilled)  # the analytics' own (unique keys...) and the distilled rows'
        assert {"cheating_reviewed", "tasks_reproduce", "unique", "lines_parse"} <= set(results), results
        assert all(results.values()), results

    allow = {"ops": {"training_datasets": {"config": {"allow_synthetic": True}}}}
    datasets = materialize(["training_datasets"], run_config=allow)
    meta = metadata(by_asset(datasets)["training_datasets"][0])
    assert checks(datasets) == {"dataset_clean": True, "formats_load": True}
    assert "| runs pass the Reviewer |" in meta["poc"] and f"| {key} |" in meta["poc"]
    assert accepted >= 1  # so the Harbor and SWE-bench exports below are exercised
    assert meta["assembled"]["task_cards"] == meta["assembled"]["verified_tasks"] == accepted
    assert meta["assembled"]["reviews"] == 2
    assert "HarnessForge export" in meta["dataset_card"]
    manifest = json.loads((store.root / "distilled" / "manifest.json").read_text())
    assert manifest["milestones"] == [f"{key}/m01", f"{key}/m02"]
    instances = (store.root / "datasets" / "swebench" / "instances.jsonl").read_text().splitlines()
    assert len(instances) == accepted

    # full lineage: every asset of the factory has a materialization on this instance
    lineage = """repos milestone_plans docker_images validated_milestones raw_trajectories raw_events stuck_points
                 milestone_summary stuck_slices dpo_pairs verified_tasks training_datasets""".split()
    for asset in lineage:
        assert instance.get_latest_materialization_event(dg.AssetKey(asset)) is not None, asset
