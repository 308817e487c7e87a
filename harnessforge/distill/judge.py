"""The optional LLM judge: a model grades each milestone run with the Reviewer's rubric.

It implements `Reviewer.review`, so it drops in where the rule-based Reviewer is used. It sees
the task statement, a digest of the trajectory (`reviewer.judge_digest_chars`), the run's signals
(the `milestone_summary` row) and the rule-based grade, and answers with JSON.
Evidence the rules hold stays binding: the rule-based discard reasons (cheating, memorisation,
loops, flaky tests, environment) always stand, whatever the model says; `too_easy` follows the
judge's difficulty, as it follows the rules' own. An unusable answer or an
API failure loses nothing: the rule-based review is kept, and says why.
"""

from __future__ import annotations

import json
from typing import Literal, get_args

from pydantic import Field, ValidationError

from ..agents.base import AgentBackend
from ..agents.errors import AgentError
from ..agents.pricing import priced, unpriced_warning
from ..analytics.rows import MilestoneSummaryRow
from ..models.common import Model, first_error
from ..models.distill import Review
from ..rules import DiscardReason, ReviewerRules
from .moments import digest
from .reviewer import Reviewer
from .runs import RunView

DISCARD_REASONS = get_args(DiscardReason)
SYSTEM = (
    """You review runs of a coding agent for a training-data team. Grade one milestone run from
its task statement, a digest of its trajectory and its signals. Difficulty: 5 needed L2+ hints and
changed direction more than once after them; 4 needed an L1 hint or many turns; 3 no hints but
several meaningful edit-test iterations; 2 solved within two iterations; 1 one-shot. Trajectory
quality: good, fair or poor, by its exploration, its changes of direction and its wasted steps. RL
value: high, medium, low, or reject (then give discard reasons from: """
    + ", ".join(DISCARD_REASONS)
    + """). Answer with one JSON object only:
{"difficulty": 1-5, "rl_value": "...", "discard_reasons": [...], "trajectory_quality": "...", "why": "one sentence"}"""
)


class Verdict(Model):
    difficulty: int = Field(ge=1, le=5)
    rl_value: Literal["high", "medium", "low", "reject"]
    discard_reasons: list[Literal[DISCARD_REASONS]] = []  # type: ignore[valid-type]
    trajectory_quality: Literal["good", "fair", "poor"] | None = None  # None: the rules' grade stands
    why: str = Field(min_length=1)


class LLMJudge(Reviewer):
    def __init__(self, rules: ReviewerRules, rules_hash: str, agent: AgentBackend, log=print):
        super().__init__(rules, rules_hash)
        self.agent, self.log = agent, log
        if not priced(agent.model):
            log(unpriced_warning(agent.model))

    def review(
        self, summary: MilestoneSummaryRow, flaky: bool = False, env_issue: bool = False, run: RunView | None = None
    ) -> Review:
        base = super().review(summary, flaky, env_issue, run)
        signals = summary.model_dump(exclude={"repo", "run_id", "milestone_id"})
        reasons = f", discard reasons {', '.join(base.discard_reasons)}" if base.discard_reasons else ""
        seen = ""
        if run is not None:
            statement = run.events[0].action.content if run.events else ""
            seen = (
                f"The task statement:\n{statement}\n\n"
                f"The trajectory, one line per step:\n{digest(run, self.rules.judge_digest_chars)}\n\n"
            )
        prompt = (
            f"{seen}Signals of run {summary.run_id}, milestone {summary.milestone_id}:\n"
            f"{json.dumps(signals, default=str)}\n\n"
            f"The rule-based grade: difficulty {base.difficulty} ({base.why}), rl_value {base.rl_value}{reasons}, "
            f"trajectory quality {base.trajectory_quality} ({base.quality_why})"
        )
        where = f"{summary.run_id}/{summary.milestone_id}"
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        try:
            turn = self.agent.turn(messages, [])
        except AgentError as e:
            return self._keep(base, where, f"the judge failed: {e}")
        base = base.model_copy(update={"judge_cost_usd": turn.cost_usd})  # spent, whatever the answer
        try:
            verdict = Verdict.model_validate_json(_json_object(turn.text))
        except ValidationError as e:
            return self._keep(base, where, f"the judge's answer was unusable: {first_error(e)}")
        evidence = set(base.discard_reasons) - {"too_easy"}
        too_easy = {"too_easy"} if verdict.difficulty == 1 else set()
        reasons = sorted(evidence | set(verdict.discard_reasons) | too_easy)
        if verdict.rl_value == "reject" and not reasons:
            return self._keep(base, where, "the judge rejected without a reason")
        update = {
            "difficulty": verdict.difficulty,
            "rl_value": "reject" if reasons else verdict.rl_value,
            "discard_reasons": reasons,
            "why": verdict.why,
            "trajectory_quality": verdict.trajectory_quality or base.trajectory_quality,
            "reviewer": f"llm:{turn.model or self.agent.model}",
        }
        return base.model_copy(update=update)

    def _keep(self, base: Review, where: str, problem: str) -> Review:
        self.log(f"{where}: {problem}; the rule-based review is kept")
        return base.model_copy(update={"why": f"{base.why} ({problem})"})


def _json_object(text: str) -> str:
    """The JSON object in a model's answer (it may come inside a code fence or after a sentence)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text
