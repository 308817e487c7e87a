"""The interface every Dev backend implements, whatever model or wire protocol sits behind it."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..models.trajectory import AgentTurn, Message


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
