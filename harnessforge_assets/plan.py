"""Stage 1 assets: screened repositories and their milestone plans, one partition per repo."""

import dagster as dg

from harnessforge.checks import plan_problems, task_text_problems
from harnessforge.mining.planner import plan
from harnessforge.mining.screening import screen
from harnessforge.models import MilestonePlan, ScreeningReport
from harnessforge.repos import spec_for_partition
from resources import GitHubResource, StoreResource

from .automation import follows_upstream
from .events import model_version
from .partitions import milestone_partitions, repo_partitions
from .versions import rules_for


def screening_markdown(report: ScreeningReport) -> str:
    rows = ["| criterion | measured | threshold | result | reason |", "|---|---|---|---|---|"]
    for criterion in report.criteria:
        measured = criterion.measured
        shown = ", ".join(map(str, measured)) if isinstance(measured, list) else measured
        result = {True: "pass", False: "**fail**", None: "unknown"}[criterion.passed]
        rows.append(f"| {criterion.name} | {shown} | {criterion.threshold} | {result} | {criterion.reason} |")
    return "\n".join(rows)


def plan_markdown(plan: MilestonePlan) -> str:
    rows = ["| id | title | type | release | PRs | +/- | test files | difficulty |", "|---" * 8 + "|"]
    for milestone in plan.milestones:
        prs = ", ".join(f"#{number}" for number in milestone.source_prs)
        size = f"+{milestone.lines_added}/-{milestone.lines_deleted}"
        rows.append(
            f"| {milestone.id} | {milestone.title} | {milestone.type or ''} | {milestone.release or ''} | {prs} "
            f"| {size} | {len(milestone.test_files)} | {milestone.difficulty} |"
        )
    return "\n".join(rows)


@dg.asset(
    partitions_def=repo_partitions,
    group_name="plan",
    kinds={"git", "python"},
    description="Screening report of a repository: every criterion with measured value, threshold and reason.",
    check_specs=[
        dg.AssetCheckSpec(
            "screening_passed",
            asset="repos",
            blocking=True,  # a repo that fails screening is not planned (same run) nor built (automation)
            partitions_def=repo_partitions,
            description="Every screening criterion passed or could not be measured.",
        )
    ],
)
def repos(context: dg.AssetExecutionContext, store: StoreResource, github: GitHubResource) -> dg.MaterializeResult:
    forge_store = store.store()
    spec = spec_for_partition(forge_store, context.partition_key)
    rules = rules_for(context, store)
    report = screen(forge_store, spec, rules, github_factory=github.factory(forge_store))
    version = report.newest_release or report.head_commit
    failed = [criterion.name for criterion in report.criteria if criterion.passed is False]
    return dg.MaterializeResult(
        check_results=[
            dg.AssetCheckResult(
                check_name="screening_passed",
                passed=report.passed,
                # rules.screening.gate: "warn" plans a repo below the thresholds anyway (a small example)
                severity=dg.AssetCheckSeverity.ERROR if rules.screening.gate == "block" else dg.AssetCheckSeverity.WARN,
                metadata={"failed": dg.MetadataValue.json(failed)},
                description=f"failed: {', '.join(failed)}" if failed else None,
            )
        ],
        # Downstream goes stale only when a new release appears, not on every re-screen.
        data_version=dg.DataVersion(version),
        metadata={
            "passed": report.passed,
            "newest_release": report.newest_release or "",
            "head_commit": report.head_commit,
            "primary_language": report.primary_language or "",
            "criteria": dg.MetadataValue.md(screening_markdown(report)),
            "path": dg.MetadataValue.path(str(forge_store.repo_dir(spec.key) / "screening.json")),
        },
    )


@dg.asset(
    partitions_def=repo_partitions,
    group_name="plan",
    deps=[repos],
    kinds={"git", "python"},
    description="Milestone chain mined from the repository's releases, changelog and PRs.",
    # Requested with `repos` by the release sensor; on its own when a re-screen finds a new release.
    automation_condition=follows_upstream(),
    check_specs=[
        dg.AssetCheckSpec(
            "plan_is_a_chain",
            asset="milestone_plans",
            blocking=True,
            partitions_def=repo_partitions,
            description="Milestones m01..mNN in order, each starting at the previous one's verify commit, with "
            "test files, and their ground-truth and test patches applying to their base.",
        ),
        dg.AssetCheckSpec(
            "task_texts_read_whole",
            asset="milestone_plans",
            partitions_def=repo_partitions,
            description="Every milestone's task text reads whole (no hole left by removed markup, nothing cut "
            "mid-sentence) and no housekeeping speaks in its title or headings.",
        ),
    ],
)
def milestone_plans(
    context: dg.AssetExecutionContext, store: StoreResource, github: GitHubResource
) -> dg.MaterializeResult:
    forge_store = store.store()
    spec = spec_for_partition(forge_store, context.partition_key)
    result = plan(
        forge_store,
        spec,
        rules_for(context, store),
        github_factory=github.factory(forge_store),
        progress=context.log.info,
    )
    milestone_plan = result.plan
    for warning in milestone_plan.warnings:
        context.log.warning(warning)
    # The milestone dimension of the repo x milestone assets is the union of all plans' ordinal ids.
    ids = [milestone.id for milestone in milestone_plan.milestones]
    context.instance.add_dynamic_partitions(milestone_partitions.name, ids)
    problems = plan_problems(forge_store, spec.key)
    text_problems = task_text_problems(forge_store, spec.key)
    # The plan's content without when it was made or what validation later wrote into it: an unchanged
    # re-plan leaves everything below it in sync.
    unchanged = {"provenance": True, "milestones": {"__all__": {"status"}}}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(model_version(milestone_plan, exclude=unchanged)),
        check_results=[
            dg.AssetCheckResult(
                check_name="plan_is_a_chain",
                passed=not problems,
                metadata={"problems": dg.MetadataValue.json(problems)},
            ),
            dg.AssetCheckResult(
                check_name="task_texts_read_whole",
                passed=not text_problems,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"problems": dg.MetadataValue.json(text_problems)},
            ),
        ],
        metadata={
            "milestones": len(milestone_plan.milestones),
            "milestone_ids": ", ".join(ids),
            "range": f"{milestone_plan.from_ref} → {milestone_plan.to_ref}",
            "traced_tests": sum(len(milestone.acceptance_tests) for milestone in milestone_plan.milestones),
            "type_mix": dg.MetadataValue.json(milestone_plan.report.type_mix),
            "feature_titled": milestone_plan.report.feature_titled,
            "entries_covered": f"{milestone_plan.report.entries_covered}/{milestone_plan.report.entries_citing}",
            "entries_placed": f"{milestone_plan.report.entries_placed}/{milestone_plan.report.entries_in_range}",
            "broken_texts": milestone_plan.report.broken_texts,
            "housekeeping_in_text": milestone_plan.report.housekeeping_in_text,
            "interface_coverage": f"{milestone_plan.report.interface_named}/{milestone_plan.report.interface_names}",
            "size_outliers": dg.MetadataValue.json(milestone_plan.report.size_outliers),
            "notes": dg.MetadataValue.json(milestone_plan.notes),
            "pull_requests": len(milestone_plan.pulls),
            "warnings": len(milestone_plan.warnings),
            "rules_hash": milestone_plan.provenance.rules_hash,
            "plan": dg.MetadataValue.md(plan_markdown(milestone_plan)),
            "path": dg.MetadataValue.path(str(forge_store.plan_file(spec.key))),
        },
    )
