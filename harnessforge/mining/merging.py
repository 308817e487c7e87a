"""Chains without dead links: a milestone that validation finds untested merges into the next one.

A milestone validated with no FAIL_TO_PASS test (`environments.merge_untested` lists the verdicts) is no
task: nothing can grade it, and a Dev skipping it would start the next one from code it never wrote. Its
work becomes part of the next milestone's task instead: the plan is mined again with the two as one (the
next one starts from the merged one's base and carries its release notes, hints and tests) and the next
one is validated again. The merged milestone stays in the plan, marked `merged`, with its own files and
verdict for the record. The last milestone has no successor: untested, it stays out of the chain as is.

A merge that costs a task is undone: when the next milestone was valid alone and is not with the untested work
in it (typeguard's m11 and m12 introduced the bug m13 fixes: from m11's base, m13's test passes), the plan and
files go back as they were and the untested milestone is flagged `kept_apart`: the chain skips it (its reference
applied), and m13 stays a task instead of merging on into a bigger one graded on a fraction of its parts.
"""

from __future__ import annotations

from typing import Callable

from ..errors import PlanningError
from ..models import Milestone, MilestonePlan, Validation
from ..repos import open_repo, spec_for
from ..rules import Rules
from ..store import Store
from .planner import build_plan, mine_history

Revalidate = Callable[[str], Validation]  # milestone id -> its new validation (written to the store)


def merge_untested(
    store: Store, arg: str, rules: Rules, revalidate: Revalidate, github=None, log=print
) -> list[Validation]:
    """Merge every untested milestone of the repo's plan into its successor and validate the successor again,
    until no untested milestone but the last is left; the successors' new validations, in order."""
    statuses = set(rules.environments.merge_untested)
    spec = spec_for(store, arg)
    key = spec.key
    validations: list[Validation] = []
    while True:
        plan = store.load_plan(key)
        targets = {m.id: m.status for m in plan.milestones[:-1] if m.status in statuses and KEPT_APART not in m.flags}
        if not targets:
            return validations
        with store.plan_lock(key):
            plan = store.load_plan(key)  # again, under the lock: a parallel validation may have written it
            saved = store.milestone_snapshot(key, [m.id for m in plan.milestones])
            carriers = _merge(store, spec, plan, targets, rules, github)
        merged_into = {m.id: m.merged_into for m in store.load_plan(key).milestones if m.id in targets}
        for milestone_id, into in merged_into.items():
            log(f"{milestone_id}: {targets[milestone_id]}, no FAIL_TO_PASS test: merged into {into}, validated again")
        lost, round_validations = [], []
        for carrier in carriers:
            validation = revalidate(carrier)
            round_validations.append(validation)
            kept = rules.environments.keep_valid_carriers and plan.milestone(carrier).status == "valid"
            if kept and validation.status != "valid":
                lost.append(carrier)
        if not lost:
            validations += round_validations
            continue
        # undo the round (its other merges happen again next round); the ones these carriers took stay apart
        apart = [target for target, into in merged_into.items() if into in lost]
        undone = sorted(set(targets) | set(carriers))
        with store.plan_lock(key):
            now = store.load_plan(key)
            milestones = [plan.milestone(m.id) if m.id in undone else m for m in now.milestones]
            report = now.report.model_copy(update={"merged": _merges(milestones)})
            restored = now.model_copy(update={"milestones": milestones, "report": report, "changelog": plan.changelog})
            store.restore_milestones(key, {mid: saved[mid] for mid in undone}, restored)
        for target in apart:
            flagged = plan.milestone(target).model_copy(update={"flags": [*plan.milestone(target).flags, KEPT_APART]})
            store.update_milestone(key, flagged)
        log(f"{', '.join(apart)}: kept apart: merged, {', '.join(lost)} lost its FAIL_TO_PASS tests; undone")


KEPT_APART = "kept_apart"  # merging it cost the next milestone its tests: the chain skips it instead


def _merge(store: Store, spec, plan: MilestonePlan, targets: dict[str, str], rules: Rules, github) -> list[str]:
    """Rewrite the plan with `targets` merged (under the plan lock); the ids of the milestones to validate again."""
    key = spec.key
    merged = {part.id: part.status for milestone in plan.milestones for part in milestone.merged} | targets
    repo = open_repo(store, spec)
    mined = mine_history(repo, spec, rules, plan.from_ref, plan.to_ref, github, granularity=plan.granularity)
    cut_ends = [cut.units[-1].sha for cut in mined.segments]
    if cut_ends != [milestone.verify_commit for milestone in plan.milestones]:
        raise PlanningError(
            f"{key}: the plan's milestones are not what the rules cut today (were they changed since `plan`?); "
            "plan the repository again before its untested milestones can merge"
        )
    result = build_plan(mined, spec, merged=merged)
    old = {milestone.id: milestone for milestone in plan.milestones}
    carriers = {milestone.merged_into for milestone in result.plan.milestones if milestone.id in targets}
    carriers.discard(None)
    milestones: list[Milestone] = []
    for milestone in result.plan.milestones:
        if milestone.status == "merged":  # merged now or before: its own record and files; its verdict stays
            milestones.append(milestone)
        elif milestone.id in carriers:
            milestones.append(milestone)  # a new task: not validated yet
            store.validation_file(key, milestone.id).unlink(missing_ok=True)
        else:
            milestones.append(old[milestone.id])
    report = result.plan.report.model_copy(update={"merged": _merges(milestones)})
    rewritten = plan.model_copy(update={"milestones": milestones, "report": report, "changelog": result.plan.changelog})
    store.save_plan(MilestonePlan.model_validate(rewritten.model_dump()), result.patches, result.hints)
    return sorted(carriers)


def _merges(milestones: list[Milestone]) -> list[str]:
    return [f"{part.id} into {milestone.id} ({part.status})" for milestone in milestones for part in milestone.merged]


__all__ = ["merge_untested"]
