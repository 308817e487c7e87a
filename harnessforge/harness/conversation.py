"""The Dev's conversation, rebuilt from a milestone's event log: what the model saw, in order.

The event log is the source of truth; the message list is derived from it. Resume uses this to
continue a run, distillation to cut slices and pairs. Hints and Verifier feedback are recorded when
they happen (mid-turn) but reach the Dev at the end of the turn, after the tool results, as user
messages: the same order the Navigator delivers them in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..models.plan import Milestone, TestVisibility
from ..models.trajectory import Action, AgentTurn, Event, Message, ToolCall
from .context_budget import compacted

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

    def compact(self, args: dict, seq: int) -> None:
        """The compaction event `seq` describes applied; a message it left keeps its origin, a new one (a summary)
        comes from `seq`."""
        if args.get("policy") == "native":  # the scaffold's view: its messages that were ours keep their origin
            known = {_identity(message): origin for message, origin in zip(self.messages, self.origins, strict=True)}
            self.origins = self.origins[:1] + [known.get(_identity(message), seq) for message in args["view"]]
            self.pending.clear()  # (delivered: in the view)
        elif args.get("summarized"):
            self.origins[2 : 2 + args["summarized"]] = [seq]
        self.messages = compacted(self.messages, args)

    def deliver(self) -> None:
        """End of a turn: held hints and feedback reach the Dev."""
        for text, seq in self.pending:
            self.add({"role": "user", "content": text}, seq)
        self.pending.clear()


def _identity(message: Message) -> tuple:
    """What names a message across formats: a tool result by its call, an answer by its calls, else its text."""
    if message.get("role") == "tool":
        return ("tool", message.get("tool_call_id"))
    calls = tuple(call.get("id") for call in message.get("tool_calls") or [])
    return (message.get("role"), calls or str(message.get("content") or "").strip())


def scaffold_actions(turn: AgentTurn, scaffold: str) -> list[Action]:
    """What a scaffold's own loop did to its model's view before `turn`, as events: its own words (mini-swe-agent's
    format-error feedback, the link's go-on), then its native compaction (the view it left holds those words)."""
    actions = [Action(type="scaffold_message", content=text, args={"scaffold": scaffold}) for text in turn.received]
    if turn.compacted is not None:
        said = f"{scaffold} compacted its conversation to {len(turn.compacted)} messages"
        actions.append(Action(type="compaction", content=said, args={"policy": "native", "view": turn.compacted}))
    return actions


def seen_after(messages: list[Message], action: Action) -> list[Message]:
    """The live conversation after a scaffold's action (`scaffold_actions`), as `rebuild` replays its event."""
    if action.type == "compaction":
        return compacted(messages, action.args)
    return [*messages, {"role": "user", "content": action.content}]


def opening(
    milestone: Milestone,
    visibility: TestVisibility,
    hint: str = "",
    memory: str | None = None,
    carried_from: str | None = None,
    note: str = "",
) -> str:
    """The Dev's first message of a milestone: its task, the first hint (framed), what earlier milestones built
    (`memory`, None in a mode without it), where its own carried work is, and a harness profile's note. `show
    --task` prints the same text a run sends."""
    text = f"{milestone.task(visibility)}\n\n{hint}\n\n" if hint else f"{milestone.task(visibility)}\n\n"
    if memory is not None:
        text += f"Earlier milestones:\n{memory}"
    text = text.rstrip()
    if carried_from:
        text += f"\n\nYour own work on {carried_from} is in the working tree, uncommitted."
    return text + note


def system_prompt(workdir: str = DEFAULT_WORKDIR) -> Message:
    return {"role": "system", "content": SYSTEM.format(workdir=workdir)}


# Events whose text the Dev reads at the end of its turn: hints, and the harness profiles' messages.
DELIVERED = ("hint", "plan_review", "checkpoint")


def assistant_message(turn: AgentTurn) -> Message:
    message: Message = {"role": "assistant", "content": turn.text}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.args)}}
            for call in turn.tool_calls
        ]
    return message


def message_args(turn: AgentTurn, nudged: bool) -> dict:
    """What a Dev `message` event keeps of its turn besides the text (`turn_of` reads it back)."""
    args = {"reasoning": turn.reasoning, "tool_calls": [call.model_dump() for call in turn.tool_calls]}
    args |= {"finish_reason": turn.stop_reason, "nudged": nudged}
    return args | ({"backend": turn.extra} if turn.extra else {})


def turn_of(event: Event) -> AgentTurn:
    """A recorded Dev `message` event as the AgentTurn it came from."""
    calls = [ToolCall.model_validate(call) for call in event.action.args.get("tool_calls", [])]
    return AgentTurn(text=event.action.content, reasoning=event.action.args.get("reasoning", ""), tool_calls=calls)


def rebuild(events: list[Event], workdir: str | None = None, compactions: bool = True) -> Conversation:
    """The conversation the events describe, up to the last recorded event: as the model saw it last, or with
    `compactions` off, every turn with its whole outputs (the trajectory ATIF documents)."""
    conversation = Conversation()
    for event in events:
        if event.role == "navigator" and event.action.type == "milestone_start":
            conversation.messages, conversation.origins = [], []
            conversation.add(system_prompt(workdir or event.action.args.get("workdir") or DEFAULT_WORKDIR), None)
            conversation.add({"role": "user", "content": event.action.content}, event.seq)
        elif event.role == "dev" and event.action.type == "message":
            conversation.deliver()
            turn = turn_of(event)
            conversation.add(assistant_message(turn), event.seq)
            if not turn.tool_calls and event.action.args.get("nudged", True):  # (logs before `nudged`: every one)
                conversation.add({"role": "user", "content": NUDGE}, None)
        elif event.action.type == "scaffold_message":  # a scaffold's own words to its model, before its answer
            conversation.add({"role": "user", "content": event.action.content}, event.seq)
        elif event.action.type == "compaction" and compactions:  # what the model saw instead from here on
            conversation.compact(event.action.args, event.seq)
        elif event.role == "dev" and event.call_id:
            conversation.add({"role": "tool", "tool_call_id": event.call_id, "content": event.observation}, event.seq)
        elif (event.action.type in DELIVERED and event.action.content) or (
            event.role == "verifier" and not event.passed_verification
        ):
            conversation.pending.append((event.action.content, event.seq))
    return conversation


def texts_read(messages: list[Message], start: int = 0) -> list[tuple[str, str]]:
    """The user and assistant texts of `messages[start:]` as a model reads them, to compare a scaffold's request with
    the rebuilt conversation: a list content's text blocks in order, consecutive user texts as one (a scaffold may
    put several in one message); tool messages and formats aside."""
    out: list[tuple[str, str]] = []
    for message in messages[start:]:
        if message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content") or ""
        blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content if "text" in b]
        text = "\n\n".join(block.strip() for block in blocks if block and block.strip())
        if text and out and out[-1][0] == message["role"] == "user":
            out[-1] = ("user", f"{out[-1][1]}\n\n{text}")
        elif text:
            out.append((message["role"], text))
    return out
