"""A Dev backed by any OpenAI-compatible chat-completions endpoint: OpenAI itself, or an in-house
model served by vLLM / SGLang (`base_url=http://host:8000/v1`, `api_key="EMPTY"`).

Our messages already are chat-completions messages, so the work here is at the edges: sending only
fields every server accepts, parsing tool arguments without trusting them, and reading the
reasoning and cache fields that vLLM and OpenAI add to the answer.
"""

from __future__ import annotations

import json
import time
from typing import Any

import openai

from ..models.trajectory import AgentTurn, Message, ToolCall, Usage
from .base import AgentBackend, parse_tool_args, sampling_policy, sdk_options, tool_results_first
from .errors import AgentError, api_error, bad_answer
from .pricing import cost_usd

_WIRE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name"}


class OpenAIBackend(AgentBackend):
    """`turn()` is one `POST /chat/completions`; the SDK retries 408/409/429/5xx and timeouts itself.

    `send_reasoning` keeps `reasoning_content` on earlier assistant messages, for chat templates
    that replay it (interleaved thinking); by default it is dropped: it is no field of OpenAI's API.
    `extra_body` passes server-specific fields (vLLM: `top_k`, `chat_template_kwargs`, ...).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout: float = 600.0,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        send_reasoning: bool = False,
        extra_body: dict[str, Any] | None = None,
        max_retry_after_s: float = 60.0,
    ):
        advice = " (any value, e.g. EMPTY, for a vLLM server started without --api-key)"
        options = sdk_options(
            "OpenAI",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            api_key,
            base_url,
            max_retries,
            timeout,
            max_retry_after_s,
            openai.DefaultHttpxClient,
            advice,
        )
        self.model, self.max_retries, self.timeout = model, max_retries, timeout
        self.temperature, self.max_tokens, self.send_reasoning = temperature, max_tokens, send_reasoning
        self.top_p = top_p
        self.extra_body = extra_body or {}
        self.client = openai.OpenAI(**options)
        self.base_url = str(self.client.base_url)

    def policy(self) -> dict[str, Any]:
        return sampling_policy(self)

    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn:
        params: dict[str, Any] = {"model": self.model, "messages": self.wire_messages(messages)}
        if tools:
            params["tools"] = tools
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.max_tokens is not None:
            params["max_completion_tokens"] = self.max_tokens
        if self.extra_body:
            params["extra_body"] = self.extra_body
        start = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(**params)
        except openai.APIError as e:
            raise api_error("OpenAI-compatible API", self.base_url, e, self.max_retries, self.timeout) from e
        try:
            return self._turn_of(resp, time.perf_counter() - start)
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise bad_answer("OpenAI-compatible API", self.base_url, resp, e) from e

    def _turn_of(self, resp: Any, latency: float) -> AgentTurn:
        if not resp.choices:
            raise AgentError(f"OpenAI-compatible API at {self.base_url} answered without choices (model {self.model})")
        choice, msg = resp.choices[0], resp.choices[0].message
        usage = _usage(resp.usage)
        return AgentTurn(
            reasoning=getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None) or "",
            text=msg.content or "",
            tool_calls=[_tool_call(call) for call in msg.tool_calls or []],
            usage=usage,
            latency_s=latency,
            model=resp.model or self.model,
            cost_usd=cost_usd(self.model, usage),
            stop_reason=choice.finish_reason or "",
        )

    def wire_messages(self, messages: list[Message]) -> list[Message]:
        """Copies holding only portable fields, tool arguments as valid JSON, tool results first."""
        out = []
        for message in tool_results_first(messages):
            wire = {k: value for k, value in message.items() if k in _WIRE_KEYS}
            if self.send_reasoning and message.get("reasoning_content"):
                wire["reasoning_content"] = message["reasoning_content"]
            if message.get("tool_calls"):
                wire["tool_calls"] = [_wire_call(call) for call in message["tool_calls"]]
            out.append(wire)
        return out

    def close(self) -> None:
        self.client.close()


def _tool_call(call: Any) -> ToolCall:
    function = getattr(call, "function", None)
    if function is None:  # e.g. a "custom" (free-form) tool call: not one of our function tools
        return ToolCall(id=call.id, name=getattr(call, "type", "unknown"), error="not a function tool call")
    args, error = parse_tool_args(function.arguments)
    return ToolCall(id=call.id, name=function.name, args=args, error=error)


def _wire_call(call: dict) -> dict:
    """vLLM json-loads earlier calls' arguments for its chat templates: send `{}` for malformed ones."""
    function = call.get("function") or {}
    args, error = parse_tool_args(function.get("arguments"))
    arguments = "{}" if error else function.get("arguments") or "{}"
    if not isinstance(arguments, str):
        arguments = json.dumps(args)
    wire_function = {"name": function.get("name"), "arguments": arguments}
    return {"id": call.get("id"), "type": "function", "function": wire_function}


def _usage(usage: Any) -> Usage:
    if usage is None:  # some servers omit usage
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(input=usage.prompt_tokens or 0, cached=cached, output=usage.completion_tokens or 0)
