"""OpenHarness as a HarnessForge Dev: its `QueryEngine` (the agent loop behind `oh`), its system
prompt and its coding tools' names and schemas, each tool forwarded to the harness, which runs it in
the milestone's sandbox. Run by the harness with OpenHarness' own Python: `python openharness_driver.py`.

- The tools are OpenHarness' own input models (bash, read_file, write_file, edit_file, grep) with an
  `execute` that asks the harness (`tool`); read_file shows the lines as OpenHarness' does.
- Every model answer is reported (`AssistantTurnComplete`, before its tools run); before each model
  call the API client takes the messages the harness holds (hints, feedback) into the last user
  message, after the tool results (`next`). OpenHarness compacts its own conversation when it grows
  (native): its summary call (no tools) passes through, and the harness's messages wait for the next turn; after a
  compaction the next call's messages are reported (`compacted`), so the log holds what the model read.
- A final answer (no tool calls) ends `submit_message`; the harness grades it and, if it wants more,
  its feedback starts the next `submit_message` of the same conversation (`done`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import tempfile
import threading
import time

home = tempfile.mkdtemp(prefix="openharness-")
os.environ.setdefault("OPENHARNESS_CONFIG_DIR", os.path.join(home, "config"))
os.environ.setdefault("OPENHARNESS_DATA_DIR", os.path.join(home, "data"))
os.environ.setdefault("OPENHARNESS_TOOL_OUTPUT_INLINE_CHARS", "1000000")  # never offload an output to a local file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib.metadata import version  # noqa: E402

from link import Link, save_atomically, settings  # noqa: E402
from openharness.api.client import AnthropicApiClient, ApiMessageCompleteEvent  # noqa: E402
from openharness.api.openai_client import OpenAICompatibleClient, _convert_messages_to_openai  # noqa: E402
from openharness.config.settings import PermissionSettings  # noqa: E402
from openharness.engine.messages import TextBlock, sanitize_conversation_messages  # noqa: E402
from openharness.engine.query import MaxTurnsExceeded  # noqa: E402
from openharness.engine.query_engine import QueryEngine  # noqa: E402
from openharness.engine.stream_events import AssistantTurnComplete, ErrorEvent  # noqa: E402
from openharness.permissions.checker import PermissionChecker  # noqa: E402
from openharness.permissions.modes import PermissionMode  # noqa: E402
from openharness.prompts.system_prompt import build_system_prompt  # noqa: E402
from openharness.services.token_estimation import estimate_tokens  # noqa: E402
from openharness.tools.base import BaseTool, ToolRegistry, ToolResult  # noqa: E402
from openharness.tools.bash_tool import BashToolInput  # noqa: E402
from openharness.tools.file_edit_tool import FileEditToolInput  # noqa: E402
from openharness.tools.file_read_tool import FileReadToolInput  # noqa: E402
from openharness.tools.file_write_tool import FileWriteToolInput  # noqa: E402
from openharness.tools.grep_tool import GrepToolInput  # noqa: E402

link = Link()
lock = threading.Lock()  # OpenHarness runs one answer's tools concurrently: one question to the harness at a time
pending: list[dict] = []  # the last answer's tool calls not run yet: an `execute` finds its own id here
CODING_TOOLS = {  # OpenHarness' own tools, each with the description its class gives it
    "bash": (BashToolInput, "openharness.tools.bash_tool", "BashTool"),
    "read_file": (FileReadToolInput, "openharness.tools.file_read_tool", "FileReadTool"),
    "write_file": (FileWriteToolInput, "openharness.tools.file_write_tool", "FileWriteTool"),
    "edit_file": (FileEditToolInput, "openharness.tools.file_edit_tool", "FileEditTool"),
    "grep": (GrepToolInput, "openharness.tools.grep_tool", "GrepTool"),
}


def ask(op: str, **fields) -> dict:
    with lock:
        return link.ask(op, **fields)


def forwarding_tool(name: str, input_model, module: str, cls: str) -> BaseTool:
    import importlib

    own = getattr(importlib.import_module(module), cls)

    class Forwarded(BaseTool):
        description = own.description

        def is_read_only(self, arguments) -> bool:
            return own.is_read_only(own, arguments)

        async def execute(self, arguments, context) -> ToolResult:
            args = arguments.model_dump(exclude_none=True)
            call = next((c for c in pending if c["name"] == name and c["args"] == args), None)
            call = call or next((c for c in pending if c["name"] == name), {"id": ""})
            if call in pending:
                pending.remove(call)
            reply = await asyncio.to_thread(ask, "tool", id=call["id"], name=name, args=args)
            output = reply["output"]
            if name == "read_file" and reply["ok"]:  # as FileReadTool shows a file: numbered lines, a window
                lines = output.splitlines()[arguments.offset : arguments.offset + arguments.limit]
                output = "\n".join(f"{arguments.offset + i + 1:>6}\t{line}" for i, line in enumerate(lines))
            elif name == "bash" and reply.get("exit_code") not in (None, 0):
                output = f"{output}\n(exit code {reply['exit_code']})"
            return ToolResult(output=output or "(no output)", is_error=not reply["ok"])

    Forwarded.name, Forwarded.input_model = name, input_model
    return Forwarded()


class HarnessClient:
    """The model client, taking the harness's messages into the last user message before each call; a conversation
    that did not only grow since the last call was compacted by OpenHarness: the view it left is reported first."""

    def __init__(self, inner, cap: int | None):
        self.inner, self.cap = inner, cap
        self.sent: list[dict] = []  # the last call's messages (OpenAI chat format)

    async def stream_message(self, request):
        if self.cap:  # the rules' cap holds for every call, its summary's too (OpenHarness asks 20,000 for it)
            request = dataclasses.replace(request, max_tokens=min(request.max_tokens or self.cap, self.cap))
        if not request.tools:  # its own compaction's summary call, not a turn: the harness's messages wait
            async for event in self.inner.stream_message(request):
                yield event
            return
        held = _convert_messages_to_openai(request.messages, None)  # (its own conversion: what the model reads)
        texts = (await asyncio.to_thread(ask, "next"))["messages"]
        if texts and request.messages and request.messages[-1].role == "user":
            request.messages[-1].content.extend(TextBlock(text=text) for text in texts)
        sending = _convert_messages_to_openai(request.messages, None)
        if held[: len(self.sent)] != self.sent:  # compacted: what the model reads now, the harness's messages in it
            await asyncio.to_thread(ask, "compacted", view=sending)
        self.sent = sending
        self.started, self.stop_reason = time.monotonic(), None
        async for event in self.inner.stream_message(request):
            if isinstance(event, ApiMessageCompleteEvent):  # the API's own reason (`length`: cut at the cap)
                self.stop_reason = event.stop_reason
            yield event


def client(run: dict):
    if run["provider"] == "anthropic":
        return AnthropicApiClient(api_key=run["api_key"], base_url=run["base_url"])
    return OpenAICompatibleClient(run["api_key"], base_url=run["base_url"])


def threshold(window: int | None, cap: int | None, fixed: str) -> int | None:
    """Where OpenHarness compacts in a window the rules give (its own rule keeps 33,000 tokens free: every turn of a
    small window compacted): at 60% of what an answer's cap leaves, less what goes with every request and its
    estimate leaves out (system prompt, tool schemas); its estimate is 4 characters a token, code is nearer 3."""
    if not window:
        return None
    return max(1, int(0.6 * (window - (cap or window // 4))) - estimate_tokens(fixed))


async def main() -> None:
    run = settings()
    window, system = run["context_window"], build_system_prompt(cwd=run["workdir"])
    registry = ToolRegistry()
    for name, (input_model, module, cls) in CODING_TOOLS.items():
        registry.register(forwarding_tool(name, input_model, module, cls))
    model_client = HarnessClient(client(run), run["max_tokens"])
    engine = QueryEngine(
        api_client=model_client,
        tool_registry=registry,
        permission_checker=PermissionChecker(PermissionSettings(mode=PermissionMode.FULL_AUTO)),
        cwd=run["workdir"],
        model=run["model"],
        system_prompt=system,
        max_tokens=run["max_tokens"] or 16384,  # the rules' cap (OpenHarness' own default otherwise)
        max_turns=100_000,  # the harness keeps the budgets
        context_window_tokens=window,  # the rules' window of the model, if they list it
        auto_compact_threshold_tokens=threshold(
            window, run["max_tokens"], system + json.dumps(registry.to_api_schema())
        ),
    )
    ask("hello", scaffold="openharness", version=version("openharness-ai"), tools=registry.to_api_schema())
    prompt = run["task"]
    while True:
        try:
            async for event in engine.submit_message(prompt):
                if isinstance(event, AssistantTurnComplete):
                    report(event, model_client, run)
                elif isinstance(event, ErrorEvent):
                    ask("error", message=event.message)
                    return
        except MaxTurnsExceeded:
            engine.load_messages(sanitize_conversation_messages(engine.messages))
        save(engine, run)
        reply = ask("done", reason="final answer")
        if reply.get("stop"):
            return
        prompt = "\n\n".join(reply["messages"])


def report(event: AssistantTurnComplete, model_client: HarnessClient, run: dict) -> None:
    message = event.message
    calls = [{"id": use.id, "name": use.name, "args": dict(use.input)} for use in message.tool_uses]
    pending[:] = list(calls)
    text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
    usage = {"input": event.usage.input_tokens, "output": event.usage.output_tokens}
    latency = time.monotonic() - getattr(model_client, "started", time.monotonic())
    stop = getattr(model_client, "stop_reason", None) or ("tool_use" if calls else "end_turn")
    ask(
        "answer",
        text=text,
        reasoning="",
        calls=calls,
        usage=usage,
        model=run["model"],
        stop_reason=stop,
        latency_s=latency,
    )


def save(engine: QueryEngine, run: dict) -> None:
    """OpenHarness keeps its conversation in memory: written as its messages, in its own model."""
    if run["trajectory"]:
        record = {
            "format": "openharness-messages",
            "version": version("openharness-ai"),
            "messages": [message.model_dump(mode="json") for message in engine.messages],
        }
        save_atomically(run["trajectory"], record, indent=1)  # a kill mid-save leaves the last complete one


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (EOFError, OSError):  # the harness closed the link (a budget ended): stop quietly
        pass
