"""Chat messages in each trainer's dialect.

Recorded messages are OpenAI-style: tool arguments as JSON strings, reasoning as
`reasoning_content`. TRL's and OpenRLHF's Hugging Face chat templates want the arguments as objects
(a JSON string is encoded twice by templates that `tojson` them, and breaks those that iterate them
as a mapping); TRL passes a `tools` column to the template, OpenRLHF passes none, so there the tool
schemas go into the system message. ms-swift keeps only `role`, `content` and `loss` of a message
(its preprocessor drops every other key), so reasoning goes into the content as `<think>...</think>`,
as its docs show, and tool calls stay OpenAI `tool_calls` with JSON-string arguments, which it
converts to its own `tool_call` messages.
"""

from __future__ import annotations

import copy
import json

from ..models.trajectory import Message

TOOLS_PREAMBLE = "You can call these tools (OpenAI function schemas):\n"
THINK = "<think>\n{reasoning}\n</think>\n"  # ms-swift's documented reasoning prefix of an assistant content


def trl(messages: list[Message]) -> list[Message]:
    """Tool-call arguments as objects; reasoning kept as `reasoning_content`; tool results named."""
    out = []
    names: dict[str, str] = {}
    for message in copy.deepcopy(messages):
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
            call["function"]["arguments"] = _as_object(call["function"]["arguments"])
        if message["role"] == "tool" and message.get("tool_call_id") in names:
            message["name"] = names[message["tool_call_id"]]
        out.append(message)
    return out


def openrlhf(messages: list[Message], tools: list[dict]) -> list[Message]:
    """TRL's messages with the tool schemas appended to the system message (OpenRLHF passes no `tools`)."""
    out = trl(messages)
    text = TOOLS_PREAMBLE + json.dumps(tools)
    if out and out[0]["role"] == "system":
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{text}"}
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


def swift(messages: list[Message], train_from: int | None = None) -> list[Message]:
    """ms-swift's messages: reasoning as a `<think>` prefix of the content, JSON-string arguments, and
    with `train_from`, a per-message `loss` (assistant messages before it are context only)."""
    out = copy.deepcopy(messages)
    for index, message in enumerate(out):
        reasoning = message.pop("reasoning_content", None)
        if reasoning:
            message["content"] = THINK.format(reasoning=reasoning) + (message.get("content") or "")
        for call in message.get("tool_calls") or []:
            if not isinstance(call["function"]["arguments"], str):
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
        if train_from is not None and message["role"] == "assistant":
            message["loss"] = index >= train_from
    return out


def as_objects(messages: list[Message]) -> list[Message]:
    """Any dialect's messages with tool arguments as objects, for a Hugging Face chat template."""
    out = copy.deepcopy(messages)
    for message in out:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = _as_object(call["function"]["arguments"])
    return out


def _as_object(arguments: str | dict | None) -> dict:
    return json.loads(arguments) if isinstance(arguments, str) and arguments else (arguments or {})
