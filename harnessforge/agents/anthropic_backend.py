"""A Dev backed by Claude through the Anthropic Messages API, with tool use, prompt caching and
optional extended thinking.

Conversations stay OpenAI-style (the trainers' format); this module converts them on the way out
and converts Claude's content blocks back into an `AgentTurn`.

Usage is reported as OpenAI does, so sums across backends compare: `input` counts every prompt
token (uncached + cache writes + cache reads; Anthropic's `input_tokens` alone excludes both),
`cached` counts cache reads. Cache writes are not a separate field; they are priced (1.25x input)
from the raw response before it is dropped.

Requests are not streamed: the SDK's non-streaming answer gives us malformed tool input as data
instead of a parse error mid-stream. That suits `max_tokens` up to ~20k (the SDK's 10-minute rule).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anthropic

from ..models.trajectory import AgentTurn, Message, ToolCall, Usage
from .base import AgentBackend, parse_tool_args, sampling_policy, sdk_options, tool_results_first
from .errors import AgentError, api_error, bad_answer
from .pricing import cost_usd

CACHE = {"type": "ephemeral"}
_THINKING_BLOCKS = ("thinking", "redacted_thinking")


class AnthropicBackend(AgentBackend):
    """`turn()` is one `POST /v1/messages`; the SDK retries 408/409/429/5xx and timeouts itself.

    Extended thinking (`thinking_budget`) requires passing Claude's signed thinking blocks back
    with the tool results. Our messages keep only the reasoning text, so the backend remembers the
    blocks of the answers it produced and replays them; reasoning it did not produce (another
    backend's, or a resumed run's) is dropped, as an unsigned thinking block would be rejected.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = 8192,
        thinking_budget: int | None = None,
        max_retries: int = 4,
        timeout: float = 600.0,
        max_retry_after_s: float = 60.0,
        temperature: float | None = None,
        top_p: float | None = None,
        extra_body: dict[str, Any] | None = None,
    ):
        max_tokens = max_tokens or 8192  # the Messages API needs a cap
        options = sdk_options(
            "Anthropic",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            api_key,
            base_url,
            max_retries,
            timeout,
            max_retry_after_s,
            anthropic.DefaultHttpxClient,
        )
        if thinking_budget is not None and not 1024 <= thinking_budget < max_tokens:
            raise AgentError(f"thinking_budget must be >= 1024 and < max_tokens ({max_tokens}), got {thinking_budget}")
        self.model, self.max_tokens, self.thinking_budget = model, max_tokens, thinking_budget
        self.max_retries, self.timeout = max_retries, timeout
        self.temperature, self.top_p, self.extra_body = temperature, top_p, extra_body or {}
        self.client = anthropic.Anthropic(**options)
        self.base_url = str(self.client.base_url)
        self._thinking: dict[str, list[dict]] = {}  # answer key -> its signed thinking blocks

    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn:
        start = time.perf_counter()
        try:
            resp = self.client.messages.create(**self.request(messages, tools))
        except anthropic.APIError as e:
            raise api_error("Anthropic API", self.base_url, e, self.max_retries, self.timeout) from e
        try:
            return self._turn_of(resp, time.perf_counter() - start)
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise bad_answer("Anthropic API", self.base_url, resp, e) from e

    def _turn_of(self, resp: anthropic.types.Message, latency: float) -> AgentTurn:
        texts, reasoning, calls, thinking = [], [], [], []
        for block in resp.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                args, error = parse_tool_args(block.input)
                calls.append(ToolCall(id=block.id, name=block.name, args=args, error=error))
            elif block.type in _THINKING_BLOCKS:
                thinking.append(block.model_dump(mode="json", exclude_none=True))
                reasoning.append(getattr(block, "thinking", ""))
        text = "".join(texts)
        if thinking:
            self._remember(calls[0].id if calls else text, thinking)
        usage = resp.usage
        read, write = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
        usage = Usage(input=usage.input_tokens + read + write, cached=read, output=usage.output_tokens)
        return AgentTurn(
            reasoning="\n\n".join(part for part in reasoning if part),
            text=text,
            tool_calls=calls,
            usage=usage,
            latency_s=latency,
            model=resp.model or self.model,
            cost_usd=cost_usd(self.model, usage, cache_write=write),
            stop_reason=resp.stop_reason or "",
        )

    def request(self, messages: list[Message], tools: list[dict]) -> dict[str, Any]:
        """The `messages.create` arguments for an OpenAI-style conversation, cache breakpoints set.

        Breakpoints (at most 4 allowed): the last tool (caches all tools), the system prompt, and the
        newest message, so each call reads the whole conversation the previous call sent.
        """
        system, out = self._convert(messages)
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": out}
        if system:
            system[-1]["cache_control"] = CACHE
            params["system"] = system
        if tools:
            params["tools"] = [_tool(tool) for tool in tools]
            params["tools"][-1]["cache_control"] = CACHE
        # On the newest message: each tool result is billed in full once, then read (one message back, it
        # would also be billed as a cache write on the next call; see benchmarks/prompt_cache.py).
        if out and out[-1]["content"] and out[-1]["content"][-1]["type"] not in _THINKING_BLOCKS:
            out[-1]["content"][-1]["cache_control"] = CACHE
        if self.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        params |= {
            name: value
            for name, value in (("temperature", self.temperature), ("top_p", self.top_p))
            if value is not None
        }
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    def policy(self) -> dict[str, Any]:
        return sampling_policy(self)

    def _convert(self, messages: list[Message]) -> tuple[list[dict], list[dict]]:
        """OpenAI-style messages -> (system blocks, Anthropic messages with content-block lists).

        Leading system messages form the system prompt; a later one becomes user text. Tool results
        and user text that follow each other merge into one user message, tool results first.
        """
        system: list[dict] = []
        out: list[dict] = []
        for message in tool_results_first(messages):
            role = message.get("role")
            if role == "system" and not out:
                system += _text_blocks(message.get("content"))
            elif role == "assistant":
                blocks = self._assistant_blocks(message)
                if blocks:  # the API rejects empty content; skipping it merges the user turns around it
                    out.append({"role": "assistant", "content": blocks})
            elif role == "tool":
                result = {"type": "tool_result", "tool_use_id": _tool_id(message.get("tool_call_id"))}
                result["content"] = _text(message.get("content")) or "(no output)"
                _add_user(out, [result])
            else:
                _add_user(out, _text_blocks(message.get("content")))
        return system, [message for message in out if message["content"]]

    def _assistant_blocks(self, message: Message) -> list[dict]:
        calls = message.get("tool_calls") or []
        text = _text(message.get("content"))
        blocks: list[dict] = []
        if self.thinking_budget:
            key = calls[0].get("id") if calls else text
            blocks += [dict(block) for block in self._thinking.get(key, [])]
        if text.strip():
            blocks.append({"type": "text", "text": text})
        for call in calls:
            function = call.get("function") or {}
            args, _ = parse_tool_args(function.get("arguments"))
            block = {"type": "tool_use", "id": _tool_id(call.get("id")), "name": function.get("name"), "input": args}
            blocks.append(block)
        return blocks

    def _remember(self, key: str, blocks: list[dict]) -> None:
        self._thinking[key] = blocks
        while len(self._thinking) > 512:  # a long run: only recent turns can still need them
            self._thinking.pop(next(iter(self._thinking)))

    def close(self) -> None:
        self.client.close()


def _tool(spec: dict) -> dict:
    """OpenAI function schema -> Anthropic tool."""
    function = spec.get("function", spec)
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    tool = {"name": function["name"], "input_schema": schema}
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def _add_user(out: list[dict], blocks: list[dict]) -> None:
    """Append to the trailing user message (tool results kept first), or start one."""
    if not out or out[-1]["role"] != "user":
        out.append({"role": "user", "content": []})
    content = out[-1]["content"]
    content += blocks
    content.sort(key=lambda block: block["type"] != "tool_result")  # stable: order within each kind is kept


def chat_messages(messages: list[dict]) -> list[Message]:
    """Messages API messages as the chat messages the harness records (the reverse of `_convert`): text blocks
    joined, a tool result as a tool message, a tool use as a tool call, thinking as reasoning."""
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [block["text"] for block in blocks if block.get("type") == "text" and block.get("text")]
        if message.get("role") == "assistant":
            said: Message = {"role": "assistant", "content": "\n\n".join(texts)}
            thinking = [block.get("thinking", "") for block in blocks if block.get("type") == "thinking"]
            said |= {"reasoning_content": "\n".join(thinking)} if any(thinking) else {}
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.append(said | ({"tool_calls": calls} if calls else {}))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append(
                    {"role": "tool", "tool_call_id": block["tool_use_id"], "content": _text(block.get("content"))}
                )
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def _text_blocks(content: Any) -> list[dict]:
    text = _text(content)
    return [{"type": "text", "text": text}] if text.strip() else []


def _tool_id(id: Any) -> str:
    """Anthropic accepts tool ids of `[A-Za-z0-9_-]` only; other backends' ids may not be."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(id or "call"))
