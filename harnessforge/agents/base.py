"""The interface every Dev backend implements, whatever model or wire protocol sits behind it."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from ..models.trajectory import AgentTurn, Message
from .errors import AgentError
from .transport import BoundedTransport


class AgentBackend(ABC):
    """Given the conversation so far and the tool specs, return the Dev's next turn.

    `messages` are OpenAI-style chat messages (system, user, assistant with `tool_calls`, tool
    results with `tool_call_id`); `tools` are OpenAI function schemas. A backend converts both to
    its wire format and converts the answer back into an `AgentTurn`. It never runs tools itself.
    """

    name: str = "agent"
    model: str = ""
    synthetic: bool = False  # True for agents that are not a model (the oracle): their data is labelled

    @abstractmethod
    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn: ...

    def begin_milestone(  # noqa: B027 - optional hook, a model needs nothing beyond its messages
        self, milestone_id: str, ground_truth: bytes, final_content: Callable[[str], bytes | None]
    ) -> None:
        """Called before every attempt at a milestone (default: nothing to do). An agent that is not a
        model may take privileged knowledge here: the oracle reads the ground truth patch and, through
        `final_content(path)`, the files as the verify commit has them."""

    def end_conversation(self) -> dict[str, Any]:
        """The harness ended the milestone's conversation. A backend that learns something only then
        (the claude CLI's last invocation states its cost when it ends) returns it, to record with the
        milestone's end (default: nothing)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing to release
        """Release connections or subprocesses (default: nothing to do)."""

    def __enter__(self) -> "AgentBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sdk_options(
    provider: str,
    key_var: str,
    url_var: str,
    api_key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: float,
    max_retry_after_s: float,
    http_client: type,
    advice: str = "",
) -> dict[str, Any]:
    """The client arguments both vendor SDKs take, with the key and URL falling back to the environment;
    `http_client` (the SDK's `DefaultHttpxClient`) gets the transport that bounds what the SDK does not."""
    api_key = api_key or os.environ.get(key_var)
    if not api_key:
        raise AgentError(f"no {provider} API key: pass api_key or set {key_var}{advice}")
    base_url = base_url or os.environ.get(url_var) or None
    if max_retry_after_s < 0:
        raise AgentError(f"max_retry_after_s must be >= 0, got {max_retry_after_s}")
    client = http_client(transport=BoundedTransport(timeout, max_retry_after_s))
    return {
        "api_key": api_key,
        "base_url": base_url,
        "max_retries": max_retries,
        "timeout": timeout,
        "http_client": client,
    }


# ---- helpers both API backends share (both read OpenAI-style messages); no SDK import here --------
def parse_tool_args(raw: Any) -> tuple[dict, str | None]:
    """Tool arguments as a dict, or `({}, reason)`: a model's malformed call must not crash the run."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # some servers send "" for a call without arguments
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            return {}, f"arguments are not valid JSON ({e}): {_clip(raw)}"
        if isinstance(raw, dict):
            return raw, None
    return {}, f"arguments are not a JSON object: {_clip(json.dumps(raw))}"


def tool_results_first(messages: list[Message]) -> list[Message]:
    """Move messages that arrive between an assistant's tool calls and their results (a Mentor hint)
    after the results: both APIs require the results right after the calls."""
    ordered: list[Message] = []
    held: list[Message] = []
    waiting: set[str] = set()
    for message in messages:
        if message.get("role") == "assistant":
            ordered += held
            held = []
            waiting = {call.get("id") for call in message.get("tool_calls") or []}
            ordered.append(message)
        elif message.get("role") == "tool" and waiting:
            ordered.append(message)
            waiting.discard(message.get("tool_call_id"))
            if not waiting:
                ordered += held
                held = []
        elif waiting:
            held.append(message)
        else:
            ordered.append(message)
    return ordered + held


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
