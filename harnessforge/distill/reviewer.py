"""The Reviewer: a difficulty (1-5) and an RL value for each milestone run, from its signals.

Difficulty (seed 001 grades runs that finished): 5 needed hints at `hard_hint_level` or higher and changed
direction after them at least `hard_direction_changes` times; 4 needed an L1 hint or more than `long_turns`
turns; 3 passed without hints in at least `meaningful_iterations` edit -> test cycles; 2 in fewer (more
than one); 1 in one. A run that did not pass is never easy: 5 when even a hint at `hard_hint_level` did not
get it there, else 4. Edits and iterations are the harness's one count, whatever tool made the edit.
RL value: `reject` with the reasons when the run shows an environment problem, a flaky acceptance
test, a loop it never left, suspected memorisation, cheating, is too easy (difficulty 1) or did not
pass (`unresolved`: never a positive; its gates let it be a negative only); else `high` from
`high_value_difficulty`, `medium` from `medium_value_difficulty`, `low` below.
Trajectory quality: `poor` for a loop it never left, a run without a tool call, or a share of waste
(undone edits and reads it never used, per tool call) from `poor_waste_share`, `fair` from
`fair_waste_share` or for a run that did not pass, else `good`; the numbers of exploration, direction
changes and waste are its `quality_why`.

`Reviewer` is the interface; `judge.LLMJudge` implements `review` with a model.
"""

from __future__ import annotations

from ..analytics.rows import MilestoneSummaryRow
from ..models.distill import Review
from ..rules import ReviewerRules
from .runs import RunView


class Reviewer:
    name = "rules"

    def __init__(self, rules: ReviewerRules, rules_hash: str):
        self.rules, self.rules_hash = rules, rules_hash

    def review(
        self, summary: MilestoneSummaryRow, flaky: bool = False, env_issue: bool = False, run: RunView | None = None
    ) -> Review:
        """`flaky`: the milestone's validation saw flaky tests; `run`: the whole run (the judge reads it)."""
        rules = self.rules
        difficulty, why = self.difficulty(summary)
        evidence = {
            "env_issue": env_issue,
            "flaky_test": flaky,
            "agent_loop": summary.status != "PASS" and summary.stuck_points > 0,
            "suspected_memorisation": summary.memorisation_flag,
            "cheating": summary.cheating_probes > 0,
            "too_easy": difficulty == 1,
            "unresolved": summary.status != "PASS",
        }
        reasons = [reason for reason, hit in evidence.items() if hit]
        if reasons:
            value = "reject"
        elif difficulty >= rules.high_value_difficulty:
            value = "high"
        elif difficulty >= rules.medium_value_difficulty:
            value = "medium"
        else:
            value = "low"
        identity = summary.model_dump(
            include={
                "repo",
                "run_id",
                "milestone_id",
                "status",
                "max_hint_level",
                "mode",
                "harness_profile",
                "test_visibility",
                "plan_id",
            }
        )
        quality, quality_why = self.quality(summary)
        grade = {"difficulty": difficulty, "rl_value": value, "discard_reasons": reasons, "why": why}
        grade |= {"trajectory_quality": quality, "quality_why": quality_why}
        return Review(
            **identity, **grade, reviewer=self.name, synthetic=bool(summary.synthetic), rules_hash=self.rules_hash
        )

    def difficulty(self, summary: MilestoneSummaryRow) -> tuple[int, str]:
        rules, level, iterations = self.rules, summary.max_hint_level, summary.iterations
        changes = summary.direction_changes
        if summary.status != "PASS":
            hinted = f" with an L{level} hint" if level else " without a hint"
            return (5 if level >= rules.hard_hint_level else 4), f"did not pass ({summary.status}){hinted}"
        if level >= rules.hard_hint_level and changes >= rules.hard_direction_changes:
            return 5, f"needed an L{level} hint and changed direction {changes} times after hints"
        if level >= 1 or summary.turns > rules.long_turns:
            return 4, f"needed an L{level} hint" if level else f"took {summary.turns} turns"
        if iterations >= rules.meaningful_iterations:
            return 3, f"no hint, {iterations} edit -> test cycles"
        if iterations > 1:
            return 2, f"no hint, {iterations} edit -> test cycles"
        return 1, "solved in one go"

    def quality(self, summary: MilestoneSummaryRow) -> tuple[str, str]:
        rules = self.rules
        waste = summary.reverted_edits + summary.unused_reads
        share = waste / max(1, summary.tool_calls)
        why = (
            f"{summary.tool_calls} tool calls, {summary.unused_reads} reads never used, {summary.reverted_edits} "
            f"edits undone ({share:.0%} waste), {summary.direction_changes} direction changes"
        )
        if summary.status != "PASS" and summary.stuck_points > 0:
            return "poor", f"{why}; a loop it never left"
        if summary.tool_calls == 0:
            return "poor", f"{why}; it never acted"
        if share >= rules.poor_waste_share:
            return "poor", why
        if summary.status != "PASS":
            return "fair", f"{why}; it did not pass"
        return ("fair" if share >= rules.fair_waste_share else "good"), why
