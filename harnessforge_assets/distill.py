"""Stage 3 assets: the distilled rows per milestone, the verified tasks, and the exported datasets.

- The analytics they read are assets of their own (`analytics.py`): `milestone_summary`,
  `stuck_points`, ... of the same (repo, milestone), so one new milestone run stales its partition alone.
- `stuck_slices`, `dpo_pairs`, `kto_rows`, `sft_segments`, `reviews`, `task_cards` (repo x milestone):
  one multi-asset cuts one milestone's runs into `distilled/milestones/<repo>/<mid>/` (the assets and
  their files are `harnessforge.distill.outputs.DISTILLED_OUTPUTS`).
- `verified_tasks` (repo x milestone): the milestone's task card rebuilt from itself in Docker.
- `training_datasets` (unpartitioned): every milestone's rows assembled, then exported.

Code versions come from the rules: the distilled assets carry the `distill` rules' hash (an analytics
threshold reaches them through the models they read, where it changed those rows). Change a rule and
reload the code location: exactly the materialized partitions of the assets that read it show as
unsynced (a mentor threshold touches none of them), ready for a backfill.
"""

from pathlib import Path
from typing import Optional

import dagster as dg
from pydantic import Field

from harnessforge.analytics import distill_version
from harnessforge.analytics.database import connect
from harnessforge.checks import dataset_problems, unreviewed_cheating
from harnessforge.distill import assemble, distill
from harnessforge.distill.outputs import DISTILLED_OUTPUTS, REVIEWS, TASK_CARDS, VERIFIED_TASKS
from harnessforge.errors import HarnessForgeError
from harnessforge.export import FORMATS, export
from harnessforge.export.card import poc_lines
from harnessforge.export.verify import verify_tasks
from harnessforge.models.distill import Review
from harnessforge.rules import Rules
from resources import StoreResource

from .analytics import DISTILLED_READS
from .automation import follows_upstream, gathers_upstream, rebuilds_on_new_rules
from .events import content_version
from .partitions import has_runs_to_distill, repo_milestone_partitions, split_repo_milestone
from .runs import raw_trajectories
from .versions import code_version, rules_for


class ExportConfig(dg.Config):
    formats: list[str] = Field(default_factory=lambda: ["all"], description=f"{', '.join(FORMATS)} or all")
    out_dir: str = Field("", description="Where to write (default: <store>/datasets)")
    allow_synthetic: Optional[bool] = Field(
        None, description="Include the offline oracle's synthetic runs (default: the rules' export.allow_synthetic)"
    )


def _failure(e: HarnessForgeError) -> dg.Failure:
    return dg.Failure(description=str(e), allow_retries=False)


def stage3_assets(rules: Rules) -> list:
    """The Stage 3 assets, versioned by `rules` (the code location passes the rules it loaded)."""

    version = distill_version(rules)

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(
                output.asset,
                group_name="distill",
                deps=[*DISTILLED_READS, raw_trajectories],  # the same (repo, milestone) of each
                code_version=version,
                skippable=True,  # a milestone with no run: a no-op, nothing materialized
                kinds={"duckdb"},
                automation_condition=rebuilds_on_new_rules(),
            )
            for output in DISTILLED_OUTPUTS
        ],
        partitions_def=repo_milestone_partitions,
        pool="duckdb",
        # One cut writes all six files of the milestone: they materialize together (no subset).
        can_subset=False,
        check_specs=[
            dg.AssetCheckSpec(
                "cheating_reviewed",
                asset=REVIEWS.asset,
                partitions_def=repo_milestone_partitions,
                blocking=True,
                description="Every run with a cheating flag in the analytics is rejected by its review.",
            ),
        ],
    )
    def distilled(context: dg.AssetExecutionContext, store: StoreResource):
        """Stuck slices, DPO pairs, KTO rows, SFT segments, reviews and the task card cut from one
        milestone's runs (all run ids) in the analytics."""
        forge_store = store.store()
        key, milestone_id = split_repo_milestone(context.partition_key)
        if not has_runs_to_distill(forge_store, key, milestone_id, context.log.info):
            # nothing materialized; the check (which the six outputs share) has nothing to object to
            yield dg.AssetCheckResult(
                asset_key=REVIEWS.asset,
                check_name="cheating_reviewed",
                passed=True,
                description="no run of this milestone to review",
            )
            return
        try:
            report = distill(forge_store, rules_for(context, store), log=context.log.warning, only=(key, milestone_id))
        except HarnessForgeError as e:
            raise _failure(e) from None
        with connect(forge_store) as con:
            cheating = unreviewed_cheating(con, report.reviews, key, milestone_id)
        for output in DISTILLED_OUTPUTS:
            path = forge_store.distilled_file(output.stem, (key, milestone_id))
            metadata = {
                "rows": report.counts[output.stem],
                "path": dg.MetadataValue.path(str(path)),
                "runs_skipped": len(report.skipped),
            }
            checks = None
            if output is REVIEWS:
                metadata["verdicts"] = dg.MetadataValue.md(reviews_markdown(report.reviews))
                problems = dg.MetadataValue.json(cheating)
                checks = [
                    dg.AssetCheckResult(
                        check_name="cheating_reviewed", passed=not cheating, metadata={"problems": problems}
                    )
                ]
            # the file's bytes: a re-cut with the same rows leaves the datasets below in sync
            version = dg.DataVersion(content_version(path))
            yield dg.MaterializeResult(
                asset_key=output.asset, metadata=metadata, check_results=checks, data_version=version
            )

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(
                VERIFIED_TASKS.asset,
                group_name="distill",
                deps=[TASK_CARDS.asset],
                code_version=version,
                kinds={"docker"},
                skippable=True,
                automation_condition=follows_upstream(),
            )
        ],
        partitions_def=repo_milestone_partitions,
        can_subset=True,  # lets a no-op yield no check result either
        pool="docker",  # rebuilds the task's image and runs its tests
        check_specs=[
            dg.AssetCheckSpec(
                "tasks_reproduce",
                asset=VERIFIED_TASKS.asset,
                partitions_def=repo_milestone_partitions,
                description="The milestone's task card rebuilds from itself: reference 1, "
                "empty attempt 0 (else it is dropped from verified_tasks)",
            )
        ],
    )
    def verified_tasks(context: dg.AssetExecutionContext, store: StoreResource):
        """The milestone's task card, kept only if it reproduces from the card alone in Docker."""
        forge_store = store.store()
        key, milestone_id = split_repo_milestone(context.partition_key)
        if not has_runs_to_distill(forge_store, key, milestone_id, context.log.info):
            return
        try:
            rules = rules_for(context, store)
            checks = verify_tasks(forge_store, rules, log=context.log.info, milestone=(key, milestone_id))
        except HarnessForgeError as e:
            raise _failure(e) from None
        dropped = {check.task_id: check.reason for check in checks if not check.reproduced}
        verified = forge_store.distilled_file(VERIFIED_TASKS.stem, (key, milestone_id))
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(content_version(verified)),
            asset_key=VERIFIED_TASKS.asset,
            metadata={
                "cards": len(checks),
                "reproduced": len(checks) - len(dropped),
                "dropped": dg.MetadataValue.json(dropped),
                "path": dg.MetadataValue.path(str(verified)),
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name="tasks_reproduce",
                    passed=not dropped,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={"dropped": dg.MetadataValue.json(dropped)},
                )
            ],
        )

    @dg.asset(
        group_name="distill",
        deps=[*(output.asset for output in DISTILLED_OUTPUTS), verified_tasks, "memorisation_rates"],  # the card: rates
        code_version=code_version("training_datasets", rules),  # the rows, and how they are exported
        automation_condition=gathers_upstream(),
        check_specs=[
            dg.AssetCheckSpec(
                "dataset_clean",
                asset="training_datasets",
                blocking=True,
                description="No synthetic row unless allowed; no id twice in one file.",
            ),
            dg.AssetCheckSpec(
                "formats_load",
                asset="training_datasets",
                description="Each exported file loads in the tool that reads it (datasets, Harbor, swebench).",
            ),
        ],
    )
    def training_datasets(
        context: dg.AssetExecutionContext, config: ExportConfig, store: StoreResource
    ) -> dg.MaterializeResult:
        """Every milestone's distilled rows assembled, then written in trainers' formats with a dataset card."""
        forge_store = store.store()
        out = Path(config.out_dir or forge_store.datasets_dir())
        rules = rules_for(context, store)
        allow = rules.export.allow_synthetic if config.allow_synthetic is None else config.allow_synthetic
        try:
            assembled = assemble(forge_store, rules)
            report = export(forge_store, config.formats, out, allow_synthetic=allow, rules=rules)
        except HarnessForgeError as e:
            raise _failure(e) from None
        problems = dataset_problems(out, allow)
        return dg.MaterializeResult(
            metadata={
                "files": len(report.files),
                "refused_synthetic": sum(report.refused_synthetic.values()),
                "discarded": sum(report.discarded.values()),
                "path": dg.MetadataValue.path(str(out)),
                "dataset_card": dg.MetadataValue.md((report.out / "README.md").read_text()),
                "assembled": dg.MetadataValue.json(assembled),
                "poc": dg.MetadataValue.md(poc_markdown(report)),
                **{f"rows/{name}": count for name, count in sorted(report.rows.items())},
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name="dataset_clean",
                    passed=not problems,
                    metadata={"problems": dg.MetadataValue.json(problems)},
                ),
                dg.AssetCheckResult(
                    check_name="formats_load",
                    passed=not any(report.format_checks.values()),
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={"failures": dg.MetadataValue.json({k: v for k, v in report.format_checks.items() if v})},
                ),
            ],
        )

    return [distilled, verified_tasks, training_datasets]


def poc_markdown(report) -> str:
    """Seed 001's criteria as the dataset card gives them, with each repository's yield funnel."""
    return "\n".join(poc_lines(report.poc, report.funnel))


def reviews_markdown(reviews: list[Review]) -> str:
    rows = ["| run | status | value | difficulty | reasons |", "|---|---|---|---|---|"]
    for review in reviews:
        reasons = ", ".join(review.discard_reasons) or "—"
        rows.append(f"| {review.run_id} | {review.status} | {review.rl_value} | {review.difficulty} | {reasons} |")
    return "\n".join(rows)
