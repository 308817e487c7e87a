"""The Reviewer: a difficulty (1-5) and an RL value for each milestone run, from its signals.

Difficulty: 5 needed hints at `hard_hint_level` or higher and changed direction after one; 4
needed an L1 hint or more than `long_turns` turns; 3 passed without hints in at least
`meaningful_iterations` edit -> test cycles; 2 in fewer (more than one); 1 in one.
RL value: `reject` with the reasons when the run shows an environment problem, a flaky acceptance
test, a loop it never left, suspected memorisation, cheating, or is too easy (difficulty 1); else
`high` from `high_value_difficulty` on a pass, `medium` from `medium_value_difficulty`, `low` below.

`Reviewer` is the interface; `judge.LLMJudge` implements `review` with a model.
"""

from __future__ import annotations

from typing import Any

from ..models.distill import Review
from ..rules import ReviewerRules


class Reviewer:
    name = "rules"

    def __init__(self, rules: ReviewerRules, rules_hash: str):
        self.rules, self.rules_hash = rules, rules_hash

    def review(self, s: dict[str, Any], flaky: bool = False, env_issue: bool = False) -> Review:
        """`s` is a `milestone_summary` row; `flaky`: the milestone's validation saw flaky tests."""
        r = self.rules
        difficulty, why = self.difficulty(s)
        reasons = [name for name, hit in (
            ("env_issue", env_issue), ("flaky_test", flaky),
            ("agent_loop", s["status"] != "PASS" and s["stuck_points"] > 0),
            ("suspected_memorisation", bool(s["memorisation_flag"])), ("cheating", s["cheating_probes"] > 0),
            ("too_easy", difficulty == 1),
        ) if hit]  # fmt: skip
        if reasons:
            value = "reject"
        elif difficulty >= r.high_value_difficulty and s["status"] == "PASS":
            value = "high"
        elif difficulty >= r.medium_value_difficulty:
            value = "medium"
        else:
            value = "low"
        return Review(
            repo=s["repo"], run_id=s["run_id"], milestone_id=s["milestone_id"], status=s["status"],
            difficulty=difficulty, max_hint_level=s["max_hint_level"], rl_value=value, discard_reasons=reasons,
            why=why, reviewer=self.name,
            synthetic=bool(s["synthetic"]), rules_hash=self.rules_hash,
        )  # fmt: skip

    def difficulty(self, s: dict[str, Any]) -> tuple[int, str]:
        r = self.rules
        if s["max_hint_level"] >= r.hard_hint_level and s["direction_changes"] > 0:
            return 5, f"needed an L{s['max_hint_level']} hint and changed direction after a hint"
        if s["max_hint_level"] >= 1 or s["turns"] > r.long_turns:
            return 4, f"needed an L{s['max_hint_level']} hint" if s["max_hint_level"] else f"took {s['turns']} turns"
        if s["iterations"] >= r.meaningful_iterations:
            return 3, f"no hint, {s['iterations']} edit -> test cycles"
        if s["iterations"] > 1:
            return 2, f"no hint, {s['iterations']} edit -> test cycles"
        return 1, "solved in one go"
