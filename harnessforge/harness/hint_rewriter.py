"""The optional model Mentor (seed 000's `fallback_model`): it rewrites the next repo-native hint into the
Dev's situation, so the hint answers what the Dev is stuck on rather than restating an issue.

The rule-based Mentor still decides when and which level; the model only words it, from the raw hint and
the Dev's last messages. It may not add names the hint does not have (files, paths, code): a rewrite that
does is refused and the raw hint goes out, as it does when the model fails. The hint event records both
texts, the model and the call's cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..agents.base import AgentBackend
from ..agents.errors import AgentError
from ..mining.describe import find_leaks
from ..models.trajectory import MentorDecision, Message, Usage

SYSTEM = """You are the mentor of a software engineer who is stuck on a task. You are given the hint the
project itself offers at this point and the engineer's last steps. Rewrite the hint so it speaks to what the
engineer is doing and where they are stuck, in a few sentences. Use only facts the hint contains: never add
file names, paths, functions or code it does not name, and do not solve the task."""
RECENT_MESSAGES = 6  # the Dev's situation: its last few messages and tool results
RECENT_CHARS = 1500  # of each


@dataclass
class RewrittenHint:
    text: str  # what the Dev reads (the raw hint when refused)
    accepted: bool
    model: str
    cost_usd: float = 0.0
    usage: Usage | None = None
    reason: str = ""  # why a rewrite was refused


class HintRewriter:
    def __init__(self, agent: AgentBackend, log=print):
        self.agent, self.log = agent, log

    def rewrite(self, decision: MentorDecision, title: str, messages: list[Message], files: list[str]) -> RewrittenHint:
        """`files`: the milestone's changed files, which a rewrite may name only where the raw hint does."""
        raw = decision.hint
        prompt = (
            f"# Task: {title}\n\n## The hint (level {decision.level}, released because: {decision.rule})\n{raw}\n\n"
            f"## The engineer's last steps\n{_recent(messages)}"
        )
        try:
            turn = self.agent.turn([{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}], [])
        except AgentError as e:
            self.log(f"{decision.milestone_id}: the model Mentor failed ({e}); the L{decision.level} hint goes out raw")
            return RewrittenHint(raw, False, self.agent.model, reason=str(e))
        text, model = turn.text.strip(), turn.model or self.agent.model
        added = sorted(set(find_leaks(text, files)) - set(find_leaks(raw, files)))
        if not text or added:
            reason = f"it names {', '.join(added[:5])}, which the hint does not" if added else "the answer was empty"
            self.log(f"{decision.milestone_id}: L{decision.level} rewrite refused ({reason}); the raw hint goes out")
            return RewrittenHint(raw, False, model, turn.cost_usd, turn.usage, reason)
        return RewrittenHint(text, True, model, turn.cost_usd, turn.usage)


def _recent(messages: list[Message]) -> str:
    """The last messages as plain text (system prompt and task left out: the title says what the task is)."""
    lines = []
    for message in messages[2:][-RECENT_MESSAGES:]:
        content = message.get("content")
        text = content if isinstance(content, str) else str(content or "")
        calls = [call["function"]["name"] for call in message.get("tool_calls") or [] if "function" in call]
        detail = text[-RECENT_CHARS:] + (f" [calls: {', '.join(calls)}]" if calls else "")
        lines.append(f"{message.get('role')}: {detail.strip()}")
    return "\n".join(lines) or "(nothing yet)"
