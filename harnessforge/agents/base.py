"""The interface every Dev backend implements, whatever model or wire protocol sits behind it."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..envs.sandbox import Mount, Sandbox
from ..models.trajectory import AgentTurn, Message, ToolCall
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
    # Whose agent loop, prompts and tools the Dev works in: "harnessforge" (ours: the harness asks for each
    # turn and runs our nine tools) or a scaffold's own (claude-code's native tools, mini-swe-agent,
    # openharness), which keeps its loop and tool names while every call still runs in our sandbox.
    scaffold: str = "harnessforge"
    # The scaffold has no submit tool: an answer without tool calls is its submission (graded by the Verifier).
    ends_with_answer: bool = False

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

    def policy(self) -> dict[str, Any]:
        """What besides its name and model decides this agent's moves (a seed, per-milestone profiles), so a
        resume under another policy is refused (default: nothing; a model is its name and model)."""
        return {}

    # ---- scaffolds: what a backend with its own agent loop and tools adds (defaults: ours) ------------
    def scaffold_info(self) -> dict[str, Any]:
        """The scaffold's name and version, for the run's metadata and every exported row; a scaffold
        with its own tools adds their schemas (`tools`), which exported rows then carry instead of ours."""
        from harnessforge import __version__

        return {"name": self.scaffold, "version": __version__}

    def sandbox_mounts(self) -> list[Mount]:
        """Host paths the scaffold needs inside the milestone's sandbox (a CLI that runs in it)."""
        return []

    def enter(self, sandbox: Sandbox, record_dir: Path) -> None:  # noqa: B027 - optional hook
        """A milestone attempt's sandbox is open; `record_dir` is its run directory, where a scaffold
        keeps its own trajectory file beside our events (default: nothing to do)."""

    def canonical(self, call: ToolCall) -> ToolCall:
        """The call in our tools' vocabulary, which the Recorder, the Mentor and the analytics read: a
        scaffold maps its tool names and arguments onto ours (the event keeps the native name in `args["tool"]`);
        a name with no counterpart stays as it is (recorded as an unknown tool). Default: ours already."""
        return call

    def executes(self, call: ToolCall) -> bool:
        """True if the scaffold runs this call itself (inside the sandbox) and the harness only watches
        (`execute`); False: the harness's ToolBox runs `canonical(call)` in the sandbox."""
        return False

    def execute(self, call: ToolCall, refusal: str | None) -> tuple[str, bool]:
        """Let the scaffold run one of its own calls (or refuse it with `refusal`) and return what it
        saw: (observation, ok). Only called when `executes(call)`."""
        raise AgentError(f"{self.name} runs no tool itself")

    def submitted(self, call: ToolCall, observation: str) -> bool:
        """True if this call, with this result, is the Dev's submission (ours: the `submit` tool)."""
        return call.name == "submit"

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


def transcript(messages: list[Message]) -> str:
    """The conversation so far as text, for a new session of a scaffold that continues a lost one (the
    harness resumed after a crash: the scaffold's own session is gone)."""
    return f"(The session was restarted. The conversation so far:)\n\n{rendered(messages)}\n\n(Continue from here.)"


def rendered(messages: list[Message]) -> str:
    """Messages as plain text (system prompts left out): each with its role, tool calls as `name(arguments)`."""
    lines = []
    for message in messages:
        if message["role"] == "system":
            continue
        if message["role"] == "tool":
            lines.append(f"[tool result {message['tool_call_id']}]\n{message['content']}")
            continue
        functions = [call["function"] for call in message.get("tool_calls") or []]
        calls = [f"{function['name']}({function['arguments']})" for function in functions]
        lines.append(f"[{message['role']}]\n{message['content']}" + "".join(f"\n-> {call}" for call in calls))
    return "\n\n".join(lines)


def function_schemas(tools: list[dict]) -> list[dict]:
    """Tool schemas as OpenAI functions (the shape exported rows carry), from either API's shape
    (Anthropic's `{name, description, input_schema}`)."""
    out = []
    for tool in tools:
        if tool.get("type") == "function" and "function" in tool:
            out.append(tool)
        elif "name" in tool:
            function = {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema") or {},
            }
            out.append({"type": "function", "function": function})
    return out


def sampling_policy(backend: Any) -> dict[str, Any]:
    """A model backend's settings that change its answers (a resume under others is refused)."""
    names = ("temperature", "top_p", "max_tokens", "extra_body")
    return {"sampling": {name: getattr(backend, name) for name in names if getattr(backend, name, None)}}
