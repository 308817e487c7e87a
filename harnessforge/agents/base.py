"""The interface every Dev backend implements, whatever model or wire protocol sits behind it."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

from ..models.trajectory import AgentTurn, Message
from .errors import AgentError


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

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing to release
        """Release connections or subprocesses (default: nothing to do)."""

    def __enter__(self) -> "AgentBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sdk_options(
    provider: str, key_var: str, url_var: str, api_key: str | None, base_url: str | None, max_retries: int,
    timeout: float, advice: str = "",
) -> dict[str, Any]:  # fmt: skip
    """The client arguments both vendor SDKs take, with the key and URL falling back to the environment."""
    api_key = api_key or os.environ.get(key_var)
    if not api_key:
        raise AgentError(f"no {provider} API key: pass api_key or set {key_var}{advice}")
    base_url = base_url or os.environ.get(url_var) or None
    return {"api_key": api_key, "base_url": base_url, "max_retries": max_retries, "timeout": timeout}
