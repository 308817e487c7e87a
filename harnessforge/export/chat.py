"""Chat messages in each trainer's dialect.

Recorded messages are OpenAI-style with tool arguments as JSON strings. TRL's templates want the
arguments as dicts and a `tools` column. ms-swift and OpenRLHF take JSON-string arguments; OpenRLHF
passes no `tools` to the chat template, so there the tool schemas go into the system message.
"""

from __future__ import annotations

import copy
import json

from ..models.trajectory import Message

TOOLS_PREAMBLE = "You can call these tools (OpenAI function schemas):\n"


def trl(messages: list[Message]) -> list[Message]:
    """Tool-call arguments as dicts; reasoning kept as `reasoning_content`; tool results named."""
    out = []
    names: dict[str, str] = {}
    for message in copy.deepcopy(messages):
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
            arguments = call["function"]["arguments"]
            parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else (arguments or {})
            call["function"]["arguments"] = parsed
        if message["role"] == "tool" and message.get("tool_call_id") in names:
            message["name"] = names[message["tool_call_id"]]
        out.append(message)
    return out


def json_args(messages: list[Message]) -> list[Message]:
    """Tool-call arguments as JSON strings (ms-swift, OpenRLHF, published trajectory datasets)."""
    out = copy.deepcopy(messages)
    for message in out:
        for call in message.get("tool_calls") or []:
            if not isinstance(call["function"]["arguments"], str):
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return out


def tools_in_system(messages: list[Message], tools: list[dict]) -> list[Message]:
    """For trainers without a `tools` column: the schemas appended to the system message."""
    out = json_args(messages)
    text = TOOLS_PREAMBLE + json.dumps(tools)
    if out and out[0]["role"] == "system":
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{text}"}
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


def swift_loss(messages: list[Message], train_from: int) -> list[Message]:
    """ms-swift's per-message `loss`: assistant messages before `train_from` are context only."""
    out = json_args(messages)
    for index, message in enumerate(out):
        if message["role"] == "assistant":
            message["loss"] = index >= train_from
    return out
