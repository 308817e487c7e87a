"""Planning granularity: a milestone per feature (the long chain) or one per PR (the short-task baseline).

With `pr`, the same range, roles and downstream machinery apply, but every unit of work (a PR, or a
commit of work that arrived without one) seeds a milestone of its own and is a feature group of its
own, described by the release-note entries that cite it (those reaching it only through a shared
issue when none does). Housekeeping and backports still ride along; the size rules are `per_pr`'s.
"""

from __future__ import annotations

from ..errors import ArtifactError, PlanningError
from ..models import Granularity, MilestonePlan
from ..rules import PlanningRules
from ..store import Store
from .segment import MilestoneCut, UnitInfo

SEVERAL_PRS = "several_prs"  # a per-PR milestone holding more than one unit of work (the smaller joined)


def effective_rules(planning: PlanningRules, granularity: Granularity) -> PlanningRules:
    """The planning rules a granularity cuts by: `per_pr`'s size rules and turn target for `pr` (where a small
    PR joins the next one, related or not)."""
    if granularity == "feature":
        return planning
    per_pr = planning.per_pr
    return planning.model_copy(
        update={
            "min_source_files": per_pr.min_source_files,
            "min_lines": per_pr.min_lines,
            "require_tests": per_pr.require_tests,
            "max_files": per_pr.max_files,
            "max_lines": per_pr.max_lines,
            "related_features_only": False,  # a PR under the minimum joins the next one, whatever it touches
            "expected_turns": planning.expected_turns.model_copy(update={"target": per_pr.expected_turns_target}),
        }
    )


def _cites(entry, info: UnitInfo) -> bool:
    unit = info.unit
    return (unit.pr is not None and unit.pr in entry.prs) or unit.sha in entry.commits


def one_per_unit(infos: list[UnitInfo]) -> list[UnitInfo]:
    """Re-seed feature-grouped units so that each unit of work opens its own milestone and is its own
    feature (in place; returns `infos`)."""
    for position, info in enumerate(infos):
        own = [entry for entry in info.entries if _cites(entry, info)]
        info.entries = own or info.entries
        info.seed = info.role == "feature"
        info.groups = {position} if info.described else set()
    return infos


def flag_several(segments: list[MilestoneCut], infos: list[UnitInfo]) -> list[MilestoneCut]:
    """Flag the per-PR milestones that hold more than one unit of work (one under `per_pr`'s minimum joined)."""
    seeds = {info.unit.sha for info in infos if info.seed}
    for cut in segments:
        if sum(unit.sha in seeds for unit in cut.units) > 1:
            cut.flags = [*cut.flags, SEVERAL_PRS]
    return segments


def require_granularity(plan: MilestonePlan, wanted: Granularity, needed_by: str) -> MilestonePlan:
    """`plan` if it was made with `wanted` granularity, else one PlanningError line saying how to re-plan
    (e.g. `require_granularity(plan, "pr", "--mode per-pr")` before a per-PR run)."""
    if plan.granularity != wanted:
        raise PlanningError(
            f"{needed_by} needs a plan made with granularity {wanted}, but {plan.repo.key}'s plan has granularity "
            f"{plan.granularity}: re-plan with `harnessforge plan {plan.repo.key} --from {plan.from_ref} "
            f"--to {plan.to_ref} --granularity {wanted}` "
            f"(or set planning.granularity: {wanted})"
        )
    return plan


def replaced_granularity(store: Store, key: str, granularity: Granularity) -> Granularity | None:
    """The granularity of the plan stored for `key` when it differs from `granularity` (None otherwise):
    a repository holds one plan, so planning the other kind replaces it."""
    if not store.plan_file(key).exists():
        return None
    try:
        previous = store.load_plan(key).granularity
    except ArtifactError:
        return None  # a damaged plan is replaced whatever it was
    return previous if previous != granularity else None
