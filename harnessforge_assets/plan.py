"""Stage 1 assets: screened repositories and their milestone plans, one partition per repo."""

import dagster as dg

from harnessforge.checks import plan_problems
from harnessforge.mining.planner import plan
from harnessforge.mining.screening import screen
from harnessforge.models import MilestonePlan, ScreeningReport
from harnessforge.repos import spec_for_partition
from resources import GitHubResource, StoreResource

from .partitions import milestone_partitions, repo_partitions


def screening_markdown(report: ScreeningReport) -> str:
    rows = ["| criterion | measured | threshold | result | reason |", "|---|---|---|---|---|"]
    for c in report.criteria:
        measured = ", ".join(map(str, c.measured)) if isinstance(c.measured, list) else c.measured
        result = {True: "pass", False: "**fail**", None: "unknown"}[c.passed]
        rows.append(f"| {c.name} | {measured} | {c.threshold} | {result} | {c.reason} |")
    return "\n".join(rows)


def plan_markdown(p: MilestonePlan) -> str:
    rows = ["| id | title | type | release | PRs | +/- | test files | difficulty |", "|---" * 8 + "|"]
    for m in p.milestones:
        prs = ", ".join(f"#{n}" for n in m.source_prs)
        rows.append(
            f"| {m.id} | {m.title} | {m.type or ''} | {m.release or ''} | {prs} | +{m.lines_added}/-{m.lines_deleted} "
            f"| {len(m.test_files)} | {m.difficulty} |"
        )
    return "\n".join(rows)


@dg.asset(
    partitions_def=repo_partitions,
    group_name="plan",
    kinds={"git", "python"},
    description="Screening report of a repository: every criterion with measured value, threshold and reason.",
)
def repos(context: dg.AssetExecutionContext, store: StoreResource, github: GitHubResource) -> dg.MaterializeResult:
    s = store.store()
    spec = spec_for_partition(s, context.partition_key)
    report = screen(s, spec, store.rules(), github_factory=github.factory(s))
    version = report.newest_release or report.head_commit
    return dg.MaterializeResult(
        # Downstream goes stale only when a new release appears, not on every re-screen.
        data_version=dg.DataVersion(version),
        metadata={
            "passed": report.passed,
            "newest_release": report.newest_release or "",
            "head_commit": report.head_commit,
            "primary_language": report.primary_language or "",
            "criteria": dg.MetadataValue.md(screening_markdown(report)),
            "path": dg.MetadataValue.path(str(s.repo_dir(spec.key) / "screening.json")),
        },
    )


@dg.asset(
    partitions_def=repo_partitions,
    group_name="plan",
    deps=[repos],
    kinds={"git", "python"},
    description="Milestone chain mined from the repository's releases, changelog and PRs.",
    check_specs=[
        dg.AssetCheckSpec(
            "plan_is_a_chain",
            asset="milestone_plans",
            blocking=True,
            description="Milestones m01..mNN in order, each starting at the previous one's verify commit, with "
            "test files, and their ground-truth and test patches applying to their base.",
        )
    ],  # fmt: skip
)
def milestone_plans(
    context: dg.AssetExecutionContext, store: StoreResource, github: GitHubResource
) -> dg.MaterializeResult:
    s = store.store()
    spec = spec_for_partition(s, context.partition_key)
    result = plan(s, spec, store.rules(), github_factory=github.factory(s), progress=lambda msg: context.log.info(msg))
    p = result.plan
    for w in p.warnings:
        context.log.warning(w)
    # The milestone dimension of the repo x milestone assets is the union of all plans' ordinal ids.
    ids = [m.id for m in p.milestones]
    context.instance.add_dynamic_partitions(milestone_partitions.name, ids)
    problems = plan_problems(s, spec.key)
    return dg.MaterializeResult(
        check_results=[
            dg.AssetCheckResult(
                check_name="plan_is_a_chain",
                passed=not problems,
                metadata={"problems": dg.MetadataValue.json(problems)},
            )
        ],  # fmt: skip
        metadata={
            "milestones": len(p.milestones),
            "milestone_ids": ", ".join(ids),
            "range": f"{p.from_ref} → {p.to_ref}",
            "traced_tests": sum(len(m.acceptance_tests) for m in p.milestones),
            "type_mix": dg.MetadataValue.json(p.report.type_mix),
            "feature_titled": p.report.feature_titled,
            "entries_covered": f"{p.report.entries_covered}/{p.report.entries_citing}",
            "size_outliers": dg.MetadataValue.json(p.report.size_outliers),
            "notes": dg.MetadataValue.json(p.notes),
            "pull_requests": len(p.pulls),
            "warnings": len(p.warnings),
            "rules_hash": p.provenance.rules_hash,
            "plan": dg.MetadataValue.md(plan_markdown(p)),
            "path": dg.MetadataValue.path(str(s.plan_file(spec.key))),
        },
    )
