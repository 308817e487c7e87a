"""Where an interrupted milestone stands: read once from its event log, so the run loop has one path.

The event log is the source of truth. A milestone killed (or whose sandbox was lost) part-way is
continued from a `ResumePoint`: the conversation and the counters the events carry, whether it had
already passed or ended, the tool calls of the interrupted turn that have no event yet, a submission
whose grading was cut off, and the workspace snapshot saved before the last recorded edit.
A log without `milestone_start` (nothing, or only a lost sandbox before the start) starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..models.trajectory import AgentTurn, Event, Message, ToolCall, Usage
from ..rules import HarnessRules
from .conversation import rebuild, turn_of


@dataclass
class Counters:
    """Where the Dev stands inside one milestone: the counters its events carry."""

    turn: int = 0
    edits: int = 0
    test_runs: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0

    def spend(self, turn: AgentTurn | None) -> None:
        """A model call's tokens and cost (the Dev's, or a summary's) count against the budgets."""
        if turn is not None:
            self.usage, self.cost = self.usage + turn.usage, self.cost + turn.cost_usd

    def spent(self, budget: HarnessRules, wall_s: float, run_spent_usd: float) -> str | None:
        """The budget rule the milestone has run out of, with the numbers (it ends STUCK), or None."""
        tokens, run_cost = self.usage.input + self.usage.output, run_spent_usd + self.cost
        if self.turn >= budget.max_turns:
            return f"max_turns: {self.turn} turns"
        if wall_s > budget.max_wall_s_per_milestone:
            return f"max_wall_s_per_milestone: {wall_s:.1f} s > {budget.max_wall_s_per_milestone:g} s"
        if self.cost > budget.max_cost_per_milestone_usd:
            return f"max_cost_per_milestone_usd: ${self.cost:.2f} > ${budget.max_cost_per_milestone_usd:g}"
        if run_cost > budget.max_cost_per_run_usd:
            return f"max_cost_per_run_usd: ${run_cost:.2f} spent by the run > ${budget.max_cost_per_run_usd:g}"
        if tokens > budget.max_tokens_per_milestone:
            return f"max_tokens_per_milestone: {tokens} tokens > {budget.max_tokens_per_milestone}"
        return None


@dataclass(frozen=True)
class ResumePoint:
    """An unfinished milestone's state as its log records it (the default: nothing recorded yet)."""

    next_seq: int = 0  # events already recorded
    started: bool = False  # milestone_start is recorded: continue it, else start the milestone
    counters: Counters = field(default_factory=Counters)
    passed: bool = False  # the Verifier passed a submission
    ended: bool = False  # milestone_end is recorded (killed before the summary was written)
    unanswered: list[ToolCall] = field(default_factory=list)  # calls of the last turn with no event yet
    unverified: bool = False  # the last `submit` has no verdict: its grading was cut off
    hints_logged: int = 0  # hint events: the replayed Mentor's decisions after these were never recorded
    snapshot: Path | None = None  # the workspace to restore (None: the start state again)
    messages: list[Message] = field(default_factory=list)  # the conversation up to the last event
    pending: list[str] = field(default_factory=list)  # hints and feedback recorded, not yet delivered

    @classmethod
    def read(cls, events: list[Event], snapshots: list[tuple[int, Path]], workdir: str | None = None) -> ResumePoint:
        """The resume point of a milestone's `events`; `snapshots` are its saved workspaces as (seq, path)
        and `workdir` the new sandbox's (the rebuilt system prompt names it)."""
        return _read(events, snapshots, workdir)


def _read(events: list[Event], snapshots: list[tuple[int, Path]], workdir: str | None) -> ResumePoint:
    if not any(event.action.type == "milestone_start" for event in events):
        return ResumePoint(next_seq=len(events))
    conversation = rebuild(events, workdir)
    counters = Counters()
    last_calls: list[ToolCall] = []
    answered: set[str] = set()
    passed = ended = unverified = False
    for event in events:
        if event.role == "dev" and event.action.type == "submit":
            unverified = True
        elif event.role == "verifier":
            unverified = False
        if event.role == "dev" and event.action.type == "message":
            last_calls, answered = turn_of(event).tool_calls, set()
            counters.turn = event.turn_id
            counters.usage, counters.cost = counters.usage + (event.usage or Usage()), counters.cost + event.cost_usd
        elif event.role == "dev" and event.call_id:
            answered.add(event.call_id)
            counters.edits, counters.test_runs = event.cumulative_edits, event.cumulative_test_runs
        elif event.action.type == "hint":
            counters.cost += event.cost_usd  # a model Mentor's call
        elif event.passed_verification:
            passed = True
        elif event.role == "navigator" and event.action.type == "milestone_end":
            ended = True
    restorable = [path for seq, path in snapshots if seq < len(events)]
    return ResumePoint(
        next_seq=len(events),
        started=True,
        counters=counters,
        passed=passed,
        ended=ended,
        unanswered=[call for call in last_calls if call.id not in answered],
        unverified=unverified,
        hints_logged=sum(event.action.type == "hint" for event in events),
        snapshot=restorable[-1] if restorable else None,
        messages=conversation.messages,
        pending=[text for text, _ in conversation.pending],
    )
