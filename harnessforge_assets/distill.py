"""Stage 3 assets: the trajectory analytics in DuckDB, the distilled rows, and the exported datasets.

Code versions come from the rules: `trajectory_analytics` carries the hash of the SQL models and the
thresholds they read, the distilled assets that hash plus the `distill` rules. Change a threshold and
reload the code location: exactly the assets that read it show as unsynced (a mentor threshold
touches none of them), ready for a backfill.
"""

from pathlib import Path

import dagster as dg
from pydantic import Field

from harnessforge.analytics import analytics_version, analyze, distill_version
from harnessforge.distill import distill
from harnessforge.distill.verify import verify_tasks
from harnessforge.errors import HarnessForgeError
from harnessforge.export import FORMATS, export
from harnessforge.rules import Rules
from resources import StoreResource

from .runs import raw_trajectories

DISTILLED = ("stuck_slices", "dpo_pairs", "kto_rows", "sft_segments", "reviews", "verified_tasks")
OUTPUT_FILE = {"stuck_slices": "stuck_slices", "dpo_pairs": "dpo_pairs", "kto_rows": "kto", "sft_segments": "sft",
               "reviews": "reviews", "verified_tasks": "task_cards"}  # fmt: skip


class ExportConfig(dg.Config):
    formats: list[str] = Field(default_factory=lambda: ["all"], description=f"{', '.join(FORMATS)} or all")
    out_dir: str = Field("", description="Where to write (default: <store>/datasets)")
    allow_synthetic: bool = Field(False, description="Include the offline oracle's synthetic runs")


def stage3_assets(rules: Rules) -> list:
    """The Stage 3 assets, versioned by `rules` (the code location passes the rules it loaded)."""

    @dg.asset(group_name="distill", deps=[raw_trajectories], code_version=analytics_version(rules),
              pool="duckdb")  # fmt: skip
    def trajectory_analytics(store: StoreResource) -> dg.MaterializeResult:
        """New or changed trajectories into Parquet and DuckDB; the `dbt_like_sql/` models rebuilt."""
        try:
            report = analyze(store.store(), store.rules())
        except HarnessForgeError as e:
            raise dg.Failure(description=str(e)) from None
        rows = "\n".join(f"| {m.name} | {m.materialization} | {m.rows} |" for m in report.models)
        bad = "\n".join(f"- {b}" for b in report.load.bad_lines[:50]) or "none"
        return dg.MaterializeResult(metadata={
            "trajectories_loaded": len(report.load.loaded), "unchanged": report.load.unchanged,
            "events_loaded": report.load.events, "bad_lines": len(report.load.bad_lines),
            "models": dg.MetadataValue.md(f"| model | kind | rows |\n|---|---|---|\n{rows}\n\nBad lines:\n{bad}"),
            "database": dg.MetadataValue.path(str(store.store().root / "analytics" / "harnessforge.duckdb")),
        })  # fmt: skip

    version = distill_version(rules)

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(name, group_name="distill", deps=[trajectory_analytics], code_version=version)
            for name in DISTILLED
        ],  # fmt: skip
        pool="duckdb",
    )
    def distilled(store: StoreResource):
        """Stuck slices, DPO pairs, KTO rows, SFT segments, reviews and task cards cut from the analytics."""
        s = store.store()
        try:
            report = distill(s, store.rules(), log=dg.get_dagster_logger().warning, analytics=analyze(s, store.rules()))
        except HarnessForgeError as e:
            raise dg.Failure(description=str(e)) from None
        for name in DISTILLED:
            path = report.out_dir / f"{OUTPUT_FILE[name]}.jsonl"
            yield dg.MaterializeResult(asset_key=name, metadata={
                "rows": report.counts[OUTPUT_FILE[name]], "path": dg.MetadataValue.path(str(path)),
                "runs_skipped": len(report.skipped),
            })  # fmt: skip

    @dg.asset(group_name="distill", deps=list(DISTILLED), code_version=version)
    def training_datasets(config: ExportConfig, store: StoreResource) -> dg.MaterializeResult:
        """The distilled rows in trainers' formats (JSONL + Parquet) with a dataset card."""
        s = store.store()
        out = config.out_dir or str(s.root / "datasets")
        try:
            report = export(s, config.formats, Path(out), allow_synthetic=config.allow_synthetic)
        except HarnessForgeError as e:
            raise dg.Failure(description=str(e)) from None
        card = (report.out / "README.md").read_text()
        return dg.MaterializeResult(metadata={
            "files": len(report.files), "refused_synthetic": sum(report.refused_synthetic.values()),
            "discarded": sum(report.discarded.values()), "path": dg.MetadataValue.path(out),
            "dataset_card": dg.MetadataValue.md(card),
            **{f"rows/{k}": v for k, v in sorted(report.rows.items())},
        })  # fmt: skip

    @dg.asset_check(asset="verified_tasks", description="Every task card rebuilds from itself: reference 1, empty 0")
    def tasks_reproduce(store: StoreResource) -> dg.AssetCheckResult:
        try:
            checks = verify_tasks(store.store(), store.rules(), log=dg.get_dagster_logger().info)
        except HarnessForgeError as e:
            return dg.AssetCheckResult(passed=False, metadata={"error": str(e)})
        dropped = {c.task_id: c.reason for c in checks if not c.reproduced}
        return dg.AssetCheckResult(
            passed=not dropped,
            metadata={
                "cards": len(checks),
                "reproduced": len(checks) - len(dropped),
                "dropped": dg.MetadataValue.json(dropped),
            },
        )

    return [trajectory_analytics, distilled, training_datasets, tasks_reproduce]
