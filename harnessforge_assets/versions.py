"""Code versions: which rules each asset reads, taken from the one rules file the runs read too.

An asset's code version is a hash of the rules sections it reads (`STAGE_RULES`; the distilled
assets the `distill` rules; each analytics asset its SQL model's hash, `analytics.py`). The code
location computes them when it loads; a run checks that the rules it loads still give the same
version (`rules_for`). So a rule
change marks exactly the materialized partitions of the assets that read it unsynced, and a run can
never record a version its rules do not have: edit the rules, reload the code location, backfill.
"""

import dagster as dg

from harnessforge.analytics import distill_version
from harnessforge.distill.outputs import DISTILLED_OUTPUTS, VERIFIED_TASKS
from harnessforge.rules import Rules
from resources import StoreResource

# asset -> the rules sections it reads
STAGE_RULES: dict[str, tuple[str, ...]] = {
    "repos": ("screening",),
    "milestone_plans": ("planning",),
    "docker_images": ("environments",),
    "validated_milestones": ("environments",),
    "raw_trajectories": ("harness", "environments"),
}


# assets that read the `distill` rules (the analytics rows they read are assets with versions of their own)
DISTILLED = {*(output.asset for output in DISTILLED_OUTPUTS), VERIFIED_TASKS.asset}


def code_version(asset: str, rules: Rules) -> str | None:
    if asset == "training_datasets":  # the rows, and how they are exported
        return f"{distill_version(rules)}-{rules.section_hash('export')}"
    if asset in DISTILLED:
        return distill_version(rules)
    sections = STAGE_RULES.get(asset)
    return rules.section_hash(*sections) if sections else None


def with_code_versions(assets: list, rules: Rules) -> list:
    """`assets` with the code version `rules` give each asset of `STAGE_RULES` (the others keep theirs)."""

    def versioned(spec: dg.AssetSpec) -> dg.AssetSpec:
        version = code_version(spec.key.to_user_string(), rules)
        return spec.replace_attributes(code_version=version) if version else spec

    return dg.map_asset_specs(versioned, assets)


def rules_for(context: dg.AssetExecutionContext, store: StoreResource) -> Rules:
    """The run's rules, refused when they no longer give the code version the code location recorded:
    the rules file changed since it loaded, and what this run writes would be filed under the old version."""
    rules = store.rules()
    for key in context.selected_asset_keys:
        loaded = context.assets_def.code_versions_by_key.get(key)
        now = code_version(key.to_user_string(), rules)
        if loaded and now and loaded != now:
            raise dg.Failure(
                description=f"{key.to_user_string()}: the rules changed since the code location loaded "
                f"(code version {loaded}, the rules now give {now}): reload the code location, then materialize",
                allow_retries=False,
            )
    return rules
