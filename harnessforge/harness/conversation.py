"""The Dev's conversation, rebuilt from a milestone's event log: what the model saw, in order.

The event log is the source of truth; the message list is derived from it. Resume uses this to
continue a run, distillation to cut slices and pairs. Hints and Verifier feedback are recorded when
they happen (mid-turn) but reach the Dev at the end of the turn, after the tool results, as user
messages: the same order the Navigator delivers them in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..models.trajectory import AgentTurn, Event, Message, ToolCall

SYSTEM = """You are a software engineer working in a git repository at {workdir}.
Implement the feature described by the user. Use the tools to explore, edit and run the tests;
the network is off. Test files are given and must not be changed: changes to them are ignored.
When the feature is done and the tests pass, call `submit`. If you are stuck, call `request_hint`."""
NUDGE = "Continue: use a tool, or call `submit` when done."
DEFAULT_WORKDIR = "/workspace"


@dataclass
class Conversation:
    """`messages[i]` came from the event with seq `origins[i]` (None for the system prompt and
    nudges); `pending` are user messages recorded but not yet delivered (the turn had not ended)."""

    messages: list[Message] = field(default_factory=list)
    origins: list[int | None] = field(default_factory=list)
    pending: list[tuple[str, int]] = field(default_factory=list)

    def add(self, message: Message, origin: int | None) -> None:
        self.messages.append(message)
        self.origins.append(origin)

    def deliver(self) -> None:
        """End of a turn: held hints and feedback reach the Dev."""
        for text, seq in self.pending:
            self.add({"role": "user", "content": text}, seq)
        self.pending.clear()


def system_prompt(workdir: str = DEFAULT_WORKDIR) -> Message:
    return {"role": "system", "content": SYSTEM.format(workdir=workdir)}


def assistant_message(t: AgentTurn) -> Message:
    msg: Message = {"role": "assistant", "content": t.text}
    if t.reasoning:
        msg["reasoning_content"] = t.reasoning
    if t.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
            for c in t.tool_calls
        ]
    return msg


def turn_of(e: Event) -> AgentTurn:
    """A recorded Dev `message` event as the AgentTurn it came from."""
    calls = [ToolCall.model_validate(c) for c in e.action.args.get("tool_calls", [])]
    return AgentTurn(text=e.action.content, reasoning=e.action.args.get("reasoning", ""), tool_calls=calls)


def rebuild(events: list[Event], workdir: str | None = None) -> Conversation:
    """The conversation the events describe, up to the last recorded event."""
    c = Conversation()
    for e in events:
        if e.role == "navigator" and e.action.type == "milestone_start":
            c.messages, c.origins = [], []
            c.add(system_prompt(workdir or e.action.args.get("workdir") or DEFAULT_WORKDIR), None)
            c.add({"role": "user", "content": e.action.content}, e.seq)
        elif e.role == "dev" and e.action.type == "message":
            c.deliver()
            t = turn_of(e)
            c.add(assistant_message(t), e.seq)
            if not t.tool_calls:
                c.add({"role": "user", "content": NUDGE}, None)
        elif e.role == "dev" and e.call_id:
            c.add({"role": "tool", "tool_call_id": e.call_id, "content": e.observation}, e.seq)
        elif e.role == "mentor" or (e.role == "verifier" and not e.passed_verification):
            c.pending.append((e.action.content, e.seq))
    return c
