"""The analytics' loop detectors, live: what the Mentor reads to help a Dev that loops without running tests.

The same definitions as `stuck_points` (and the same thresholds, the rules' `analytics` section): one action with
one observation again and again (`repeat_action_observation`), one failing action again and again
(`repeat_action_error`), two actions taking turns (`alternating`), and turns that call no tool
(`turns_without_tool_calls`). An action is its tool and arguments, an observation its text, as the analytics hash
them. Counted since the milestone start or the Mentor's last hint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..models.trajectory import Event
from ..rules import AnalyticsRules

REPEAT_ACTION_OBSERVATION = "repeat_action_observation"
REPEAT_ACTION_ERROR = "repeat_action_error"
ALTERNATING = "alternating"
TURNS_WITHOUT_TOOL_CALLS = "turns_without_tool_calls"
RULES = (REPEAT_ACTION_OBSERVATION, REPEAT_ACTION_ERROR, ALTERNATING, TURNS_WITHOUT_TOOL_CALLS)


@dataclass(frozen=True)
class LoopThresholds:
    repeat_action_observation: int
    repeat_action_error: int
    alternating_steps: int
    turns_without_tool_calls: int

    @classmethod
    def of(cls, rules: AnalyticsRules) -> LoopThresholds:
        return cls(
            rules.repeat_action_observation,
            rules.repeat_action_error,
            rules.alternating_steps,
            rules.turns_without_tool_calls,
        )


@dataclass
class LoopWatch:
    thresholds: LoopThresholds
    calls: list[tuple[str, str, bool]] = field(default_factory=list)  # (action, observation, ok), oldest first
    idle_turns: int = 0  # Dev turns in a row without a tool call

    def take(self, event: Event) -> None:
        """One Dev event: a tool call, or a message (a turn)."""
        if event.action.type == "message":
            self.idle_turns = 0 if event.action.args.get("tool_calls") else self.idle_turns + 1
        elif event.call_id:
            action = f"{event.action.type} {json.dumps(event.action.args, sort_keys=True, default=str)}"
            self.calls.append((action, event.observation, event.ok))

    def reset(self) -> None:
        self.calls, self.idle_turns = [], 0

    def fired(self) -> tuple[str, dict[str, Any]] | None:
        """The first detector over its threshold, with its evidence."""
        limits, calls = self.thresholds, self.calls
        if self.idle_turns >= limits.turns_without_tool_calls:
            return TURNS_WITHOUT_TOOL_CALLS, {"turns": self.idle_turns}
        same = _trailing(calls, lambda now, before: now[:2] == before[:2])
        if same >= limits.repeat_action_observation:
            return REPEAT_ACTION_OBSERVATION, {"action": calls[-1][0][:300], "times": same}
        failing = _trailing(calls, lambda now, before: now[0] == before[0] and not now[2] and not before[2])
        if failing >= limits.repeat_action_error:
            return REPEAT_ACTION_ERROR, {"action": calls[-1][0][:300], "times": failing}
        steps = _alternating(calls)
        if steps >= limits.alternating_steps:
            return ALTERNATING, {"actions": [calls[-1][0][:300], calls[-2][0][:300]], "steps": steps}
        return None


def _trailing(calls: list, same) -> int:
    """How many calls at the end each match the one before (k matches: k + 1 calls; 1 when none)."""
    count = 1 if calls else 0
    for index in range(len(calls) - 1, 0, -1):
        if not same(calls[index], calls[index - 1]):
            break
        count += 1
    return count


def _alternating(calls: list) -> int:
    """How many calls at the end go A-B-A-B (each as two back, unlike the one before)."""
    count = 0
    for index in range(len(calls) - 1, 1, -1):
        if calls[index][:2] != calls[index - 2][:2] or calls[index][0] == calls[index - 1][0]:
            break
        count += 1
    return count + 2 if count else 0
