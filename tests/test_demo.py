"""`harnessforge demo`: the whole factory on the example repository, offline, as a new user runs it."""

import json

import dagster as dg
import pytest

from harnessforge.models.run import MilestoneSummary
from harnessforge.report.exports import card_file_counts
from harnessforge.store import Store
from harnessforge_assets.demo import demo
from resources import SandboxResource, StoreResource

KEY = "harnessforge-examples__tasklite"


def card_counts_match_the_files(datasets) -> dict[str, int]:
    """The dataset card's file table, checked against the files it describes."""
    counts = card_file_counts((datasets / "README.md").read_text())
    assert counts.get("sft/trl", 0) > 0, "the card's file table was not read"
    for name, n in counts.items():
        path = datasets / ("swebench/instances" if name == "instances" else name)
        if path.with_suffix(".jsonl").exists():
            assert len(path.with_suffix(".jsonl").read_text().splitlines()) == n, name
    instances = datasets / "swebench" / "instances.jsonl"
    if instances.exists():  # only from verified tasks: with Docker
        assert counts["instances"] == len(instances.read_text().splitlines())
    else:
        assert "instances" not in counts and "harbor_tasks" not in counts
        assert "`harnessforge verify-tasks` has not run on this store" in (datasets / "README.md").read_text()
    return counts


def check_training_rows(datasets, summaries: dict[str, MilestoneSummary]) -> None:
    """Issue 33 on the demo's export: no SFT-dialect row imitates a stretch or a run that did not succeed (m03 is
    STUCK: only slices it got out of, trained from the recovery); every row carries a contamination risk (the
    oracle read the solution: high); every config of the card loads its file's rows with `load_dataset`."""
    import datasets as hf_datasets
    from huggingface_hub import DatasetCard

    rows = {
        path.relative_to(datasets).with_suffix("").as_posix(): [
            json.loads(line) for line in path.read_text().splitlines()
        ]
        for family in ("sft", "stuck_slices", "chains", "dpo", "kto")
        for path in (datasets / family).glob("*.jsonl")
    }
    for name, file_rows in rows.items():
        if name.split("/")[0] in ("sft", "stuck_slices", "chains"):
            for row in file_rows:
                assert row.get("resolution") != "unresolved", (name, row["id"])
                ran = summaries.get(row["milestone_id"])  # a chain's is a range of passing milestones
                if ran is not None and ran.status != "PASS":
                    assert row["resolution"].startswith("resolved"), (name, row["id"])
        assert all(row["contamination_risk"] == "high" for row in file_rows), name
    configs = [config["config_name"] for config in DatasetCard.load(datasets / "README.md").data.configs]
    assert "sft-trl" in configs and "kto-swift" in configs
    for config in configs:
        family, dialect = config.split("-")
        loaded = hf_datasets.load_dataset(str(datasets), config, cache_dir=str(datasets.parent / "hf-cache"))
        assert loaded["train"].to_list() == rows[f"{family}/{dialect}"], config


def check_demo_store(store: Store) -> dict[str, MilestoneSummary]:
    """Every stage's artifacts exist and validate; the run shows each behaviour the demo promises."""
    assert store.load_screening(KEY).repo.key == KEY
    plan = store.load_plan(KEY)
    assert [m.id for m in plan.milestones] == ["m01", "m02", "m03", "m04", "m05", "m06"]
    assert all(store.load_validation(KEY, m.id).status for m in plan.milestones)
    run_dir = store.root / "trajectories" / KEY / "demo"
    summaries = {
        p.parent.name: MilestoneSummary.model_validate_json(p.read_text()) for p in run_dir.glob("*/summary.json")
    }
    assert summaries["m01"].status == "PASS" and summaries["m01"].hints_released == []  # a clean pass
    assert summaries["m02"].status == "PASS" and summaries["m02"].hints_released[:1] == [1]  # rescued by hints
    assert summaries["m03"].status == "STUCK" and summaries["m03"].reset_to  # reset, and the chain went on
    assert summaries["m04"].status == "PASS" and all(s.synthetic for s in summaries.values())
    decisions = json.loads((run_dir / "m02" / "mentor_log.json").read_text())
    assert decisions and all(d["rule"] for d in decisions)  # each hint released by a named rule
    manifest = json.loads((store.root / "distilled" / "manifest.json").read_text())
    assert manifest["counts"]["dpo_pairs"] >= 1 and manifest["counts"]["stuck_slices"] >= 1
    chains = [json.loads(line) for line in (store.root / "distilled" / "chains.jsonl").read_text().splitlines()]
    assert chains[0]["milestones"] == ["m01", "m02"] and chains[0]["cut"] == "ends before m03 (STUCK)"
    card_counts_match_the_files(store.root / "datasets")
    check_training_rows(store.root / "datasets", summaries)
    # every file the demo exported loads in the tool that reads it (datasets, Harbor, swebench)
    checks = json.loads((store.root / "datasets" / "format_checks.json").read_text())
    assert checks and not {name: why for name, why in checks.items() if why}, checks
    report = store.root / "report" / "report.html"
    assert report.exists() and "<svg" in report.read_text()
    for mid in summaries:
        assert (store.root / "report" / "runs" / KEY / "demo" / f"{mid}.html").exists()
    return summaries


def test_demo_rejects_an_unknown_sandbox(run_cli, tmp_path):
    proc = run_cli("demo", "--store", str(tmp_path / "s"), "--sandbox", "vm")
    assert proc.returncode == 2, proc.stderr  # a usage error, like any bad option value
    assert proc.stderr.strip().splitlines() == [
        "error: harnessforge demo: Invalid value for '--sandbox': 'vm': use docker, local or auto "
        "(see harnessforge demo --help)"
    ]
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_demo_in_docker(run_cli, tmp_path, docker_client, base_image):
    # the store as a new user types it: relative to the current directory (git bundles, DuckDB views and
    # sandboxes all get absolute paths)
    store = Store(tmp_path / "demo")
    proc = run_cli("demo", "--store", "demo", "--sandbox", "docker", check=True, timeout=1500, cwd=tmp_path)
    assert "sandbox: docker" in proc.stdout
    check_demo_store(store)
    assert store.load_images(KEY).images  # the environment was built
    cards = [json.loads(line) for line in (store.root / "distilled" / "task_cards.jsonl").read_text().splitlines()]
    reviews = [json.loads(line) for line in (store.root / "distilled" / "reviews.jsonl").read_text().splitlines()]
    accepted = [
        r["milestone_id"] for r in reviews if r["status"] == "PASS" and r["discard_reasons"] in ([], ["too_easy"])
    ]
    assert [card["milestone_id"] for card in cards] == accepted and len(cards) >= 2  # accepted passing runs only
    verified = (store.root / "distilled" / "verified_tasks.jsonl").read_text().splitlines()
    assert "✓ task verification" in proc.stderr and len(verified) == len(cards)  # each card rebuilds and reproduces
    assert card_counts_match_the_files(store.root / "datasets")["harbor_tasks"] == len(cards)
    assert "report.html" in proc.stdout
    for stage in ("planning", "validation", "agent runs", "distillation", "export", "report"):
        assert f"✓ {stage}" in proc.stderr, stage

    # the same demo as a Dagster asset, on the same store, reuses what exists: no validation or agent run redone
    kept = {p: p.read_bytes() for p in store.root.glob("trajectories/**/*.json*")}
    validations = {p: p.stat().st_mtime_ns for p in store.root.glob("repos/*/milestones/*/validation.json")}
    result = dg.materialize(
        [demo], resources={"store": StoreResource(root=str(store.root)), "sandbox": SandboxResource(backend="docker")}
    )
    assert result.success
    assert {p: p.read_bytes() for p in kept} == kept
    assert {p: p.stat().st_mtime_ns for p in validations} == validations
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["report"].value == str(store.root / "report" / "report.html")
    assert "| m03 | STUCK |" in meta["chain"].value
