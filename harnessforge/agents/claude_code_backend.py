"""A Dev backed by the `claude` CLI (Claude Code): its own agent loop, our tools, our records.

The CLI runs the conversation itself; the harness still runs every tool. The CLI gets no built-in
tools (`--tools ""`), only ours, served over MCP by `mcp_bridge`, which forwards each call back to
this backend over a local socket. One `turn()` is one model answer, read from the CLI's
`stream-json` output (`--include-partial-messages` marks where an answer ends). The harness then
runs the answer's tool calls in the sandbox and calls `turn()` again with the results, which this
backend hands to the waiting CLI.

Messages the harness adds between turns (Mentor hints, Verifier feedback) reach the model:
- while the CLI waits for tool results, as extra text blocks of the last tool result;
- after the CLI ended its turn (an answer without tool calls), as the prompt of
  `claude -p ... --resume <session>`, the same session continued.

What the CLI spent: each CLI invocation ends with a `result` line stating its cost; the turn recorded
after that line carries it as `cli_cost_usd` (the invocation's own calls, not the session's running
`total_cost_usd`). The harness ends a conversation with `end_conversation()`: the CLI, still waiting
for tool results, is interrupted (SIGINT: it writes its result without another model call), so the
last invocation's cost is recorded too, with the milestone's end.

The CLI reaches the Messages API only through an `ApiRelay` on a socket in its home (the real key stays
here), which keeps each turn's request: when the CLI compacts its own conversation (its `compact_boundary`
stream line), the request of the next answer is the view the harness records (a native compaction event).

A new conversation (the next milestone) starts a new session. A backend that meets a
conversation it did not hold (a harness resumed after a crash) starts a new session whose first
prompt carries the conversation so far as a transcript: the CLI's own session was lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from multiprocessing import AuthenticationError
from multiprocessing.connection import Listener
from pathlib import Path

from ..models.trajectory import AgentTurn, Message, ToolCall, Usage
from .anthropic_backend import chat_messages
from .api_relay import ApiRelay
from .base import AgentBackend, transcript
from .errors import AgentError
from .mcp_bridge import PREFIX, SERVER
from .pricing import cost_usd

PROJECT_TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "node_modules" / ".bin" / "claude"
PASSED_ENV = (
    "PATH",
    "LANG",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "NODE_EXTRA_CA_CERTS",
)
QUIET_ENV = {  # no telemetry, updates or other traffic: the CLI talks to the Messages API only
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def find_claude(explicit: str | None = None) -> str:
    """The `claude` binary: the argument, `$HARNESSFORGE_CLAUDE_BIN`, `PATH`, then the project's
    `.tools/` (where `scripts/install.sh` puts it)."""
    for candidate in (explicit, os.environ.get("HARNESSFORGE_CLAUDE_BIN"), shutil.which("claude")):
        if candidate:
            return candidate
    if PROJECT_TOOLS.exists():
        return str(PROJECT_TOOLS)
    raise AgentError(
        "the claude CLI was not found: run `npm install @anthropic-ai/claude-code` (scripts/install.sh puts it in "
        ".tools/) or set HARNESSFORGE_CLAUDE_BIN"
    )


class ClaudeCodeAgent(AgentBackend):
    name = "claude-code"

    def __init__(
        self,
        model: str,
        claude_bin: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 4,
        effort: str | None = None,
        context_window: int | None = None,
    ):
        """`timeout` bounds one model answer, the CLI's own API retries (`max_retries`) included; `context_window`
        (the rules' window of the model) is where the CLI compacts its own conversation."""
        self.model, self.timeout, self.max_retries, self.effort = model, timeout, max_retries, effort
        self.window_env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(context_window)} if context_window else {}
        self.compacting = False  # the CLI said it compacted its conversation: the next answer read what it left
        self.bin = find_claude(claude_bin)
        if not self._has_key():
            raise AgentError("no Anthropic API key for the claude CLI: set ANTHROPIC_API_KEY")
        self.home = Path(tempfile.mkdtemp(prefix="hf-claude-"))  # CLI config, sessions, cwd
        self.authkey = secrets.token_hex(32).encode()  # the bridge gets it as text in its environment
        sock = str(self.home / "bridge.sock")
        self.listener = Listener(sock, family="AF_UNIX", authkey=self.authkey)
        self.inbox: queue.Queue = queue.Queue()  # ("call", conn, request) | ("line", obj) | ("exit", proc)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()
        self.mcp_config = self.home / "mcp.json"
        self.tools_path = self.home / "tools.json"
        self.proc: subprocess.Popen | None = None
        self.session: str | None = None
        self.opening: str | None = None  # the conversation's first user message: tells a new one apart
        self.waiting: list[ToolCall] = []  # our tool calls the CLI will ask the bridge for
        self.answers: dict[str, list[str]] = {}
        self.held: list[tuple] = []  # (conn, request): bridge calls made before their answer ended
        self.stream: list[dict] = []  # the CLI's non-partial stream lines since the last turn
        self.reported_total = 0.0  # the session's last `total_cost_usd` (see `invocation_cost`)
        self.relay = self._open_relay()  # the CLI's API calls pass it: what each turn's request held

    # ---- the turn -------------------------------------------------------------------------------
    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn:
        opening = next((message["content"] for message in messages if message["role"] == "user"), "")
        if opening != self.opening:  # a new conversation: end the old session, if any
            self._stop()
            self.opening, self.session, self.waiting = opening, None, []
            self.stream = []  # an ended conversation's lines are not this one's
            self.tools_path.write_text(json.dumps(tools))
            self._write_mcp_config()
            new = messages
        else:  # new since its last answer: the results of its calls, the harness's messages
            new = messages[max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1) + 1 :]
        results = {message["tool_call_id"]: message["content"] for message in new if message["role"] == "tool"}
        texts = [message["content"] for message in new if message["role"] == "user" and message["content"]]
        if not self._deliver(results, texts):
            self._wait_exit()
            self._launch(messages, new, texts)
        return self._next_answer()

    def _deliver(self, results: dict[str, str], texts: list[str]) -> bool:
        """Hand the tool results and the new user texts to the CLI still waiting for them; False if it
        is not waiting (it ended its turn): they become the prompt of `--resume`."""
        if not (self.waiting and self.proc and self.proc.poll() is None):
            return False
        self.answers = {call.id: [results.get(call.id, "(no result)")] for call in self.waiting}
        self.answers[self.waiting[-1].id] += texts  # hints and feedback ride on the last result
        held, self.held = self.held, []
        for conn, request in held:
            self._answer(conn, request, hold=False)
        return True

    def _open_relay(self) -> ApiRelay:
        """The Messages API for the CLI: a relay on a socket in its home, with our key and base URL."""
        key, token = os.environ.get("ANTHROPIC_API_KEY") or "", os.environ.get("ANTHROPIC_AUTH_TOKEN")
        return ApiRelay(self.home / "api.sock", os.environ.get("ANTHROPIC_BASE_URL"), key, token)

    def _has_key(self) -> bool:
        """The CLI reads its key from the environment (ours is passed on)."""
        return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))

    def _system(self, messages: list[Message]) -> str:
        """What the CLI appends to its own system prompt: ours, which names our tools."""
        return "\n\n".join(message["content"] for message in messages if message["role"] == "system")

    def _tool_flags(self) -> list[str]:
        """No built-in tool, ours over MCP."""
        return [
            "--mcp-config",
            str(self.mcp_config),
            "--strict-mcp-config",
            "--tools",
            "",
            "--allowedTools",
            f"mcp__{SERVER}",
        ]

    def _launch(self, messages: list[Message], new: list[Message], texts: list[str]) -> None:
        cmd = [self.bin, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
        cmd += ["--model", self.model, *self._tool_flags()]
        if self.effort:
            cmd += ["--effort", self.effort]
        if self.session:
            cmd += ["--resume", self.session]
            prompt = "\n\n".join(texts)
        else:
            self.session, self.reported_total = str(uuid.uuid4()), 0.0
            cmd += ["--session-id", self.session, "--append-system-prompt", self._system(messages)]
            resumed = any(message["role"] == "assistant" for message in messages)
            prompt = transcript(messages) if resumed else "\n\n".join(texts)
        self.waiting, self.held = [], []
        self.proc = self._spawn(cmd)
        self.proc.stdin.write(prompt or "Continue.")  # the prompt on stdin: no argv length limit
        self.proc.stdin.close()
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self.reader.start()
        threading.Thread(target=lambda process=self.proc: self.stderr.extend(process.stderr), daemon=True).start()

    def _spawn(self, cmd: list[str]) -> subprocess.Popen:
        """The CLI on this host, with its own home and only the environment it needs."""
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env |= (
            QUIET_ENV
            | self.window_env
            | {
                "HOME": str(self.home),
                "CLAUDE_CONFIG_DIR": str(self.home / "config"),
                "CLAUDE_CODE_MAX_RETRIES": str(self.max_retries),
                "ANTHROPIC_UNIX_SOCKET": str(self.relay.socket_path),
                "ANTHROPIC_API_KEY": "placeholder",  # the relay puts the real key on each request
                "ANTHROPIC_BASE_URL": "http://localhost",
            }
        )
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.home,
            env=env,
            text=True,
            start_new_session=True,
        )

    def _next_answer(self) -> AgentTurn:
        """Serve the CLI's tool calls from `answers` until its next model answer is complete."""
        blocks: list[dict] = []
        usage, write, stop, model, started = Usage(), 0, "", self.model, time.monotonic()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                kind, *payload = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                self._stop()
                raise AgentError(f"the claude CLI gave no answer within {self.timeout:g} s") from None
            if kind == "call":
                self._answer(*payload)
            elif kind == "hook":
                self._hook(*payload)
            elif kind == "exit":
                if payload[0] is self.proc:
                    raise AgentError(self._exit_message(self.proc.returncode))
            elif (obj := payload[0])["type"] == "stream_event":
                event = obj["event"]
                if event["type"] == "message_start":
                    blocks, started = [], time.monotonic()
                    reported = event["message"].get("usage") or {}
                    model = event["message"].get("model") or self.model
                    read = reported.get("cache_read_input_tokens") or 0
                    write = reported.get("cache_creation_input_tokens") or 0
                    usage = Usage(input=(reported.get("input_tokens") or 0) + read + write, cached=read)
                elif event["type"] == "message_delta":
                    stop = event["delta"].get("stop_reason") or ""
                    output = (event.get("usage") or {}).get("output_tokens") or 0
                    usage = usage.model_copy(update={"output": output})
                elif event["type"] == "message_stop" and not stop:  # the API always sends a stop reason first
                    self._stop()
                    raise AgentError(
                        "the claude CLI's answer stream ended before its stop reason (cut off mid-answer); "
                        "the CLI does not retry that, so the turn is not recorded: run the same command again"
                    )
                elif event["type"] == "message_stop":
                    return self._turn(blocks, usage, write, stop, model, time.monotonic() - started)
            else:
                if obj["type"] == "assistant" and not obj.get("parent_tool_use_id"):
                    blocks += obj["message"]["content"]
                self.compacting |= obj.get("subtype") == "compact_boundary"
                if obj["type"] == "user":  # tool results: the harness has them already (ours) or takes them here
                    self._tool_results(obj)
                else:
                    self.stream.append(obj)

    def _turn(self, blocks: list[dict], usage: Usage, write: int, stop: str, model: str, latency: float) -> AgentTurn:
        calls = [
            ToolCall(id=block["id"], name=block["name"].removeprefix(PREFIX), args=block.get("input") or {})
            for block in blocks
            if block["type"] == "tool_use"
        ]
        self.waiting = [
            call
            for block, call in zip([block for block in blocks if block["type"] == "tool_use"], calls, strict=True)
            if block["name"].startswith(PREFIX)
        ]
        return AgentTurn(
            reasoning="\n".join(block.get("thinking", "") for block in blocks if block["type"] == "thinking"),
            text="\n".join(block["text"] for block in blocks if block["type"] == "text"),
            tool_calls=calls,
            usage=usage,
            latency_s=latency,
            model=self.model,
            stop_reason=stop,
            cost_usd=cost_usd(model, usage, cache_write=write),
            compacted=self._compacted(),
            extra=self._extra(),
        )

    def _compacted(self) -> list[Message] | None:
        """The view the CLI's own compaction left: the request of the first answer after it, as the relay saw it
        (the harness's messages of that turn in it); the conversation opens with it from now on."""
        if not self.compacting:
            return None
        self.compacting = False
        view = chat_messages(self.relay.messages)
        self.opening = next((message["content"] for message in view if message["role"] == "user"), self.opening)
        return view

    def _signal(self, sig: int) -> None:
        """Signal the CLI (SIGINT: write your result and exit; SIGKILL: its whole process group)."""
        if sig == signal.SIGKILL:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)

    def _hook(self, conn, payload: dict) -> None:
        """A Claude Code hook call (the native mode); this mode sets none."""
        conn.close()

    def _tool_results(self, line: dict) -> None:
        """A `user` line of the stream: the results of the CLI's tool calls (the native mode reads them)."""

    def end_conversation(self) -> dict:
        """The harness is done with this conversation: interrupt the CLI (SIGINT: it writes its result,
        with what this invocation cost, and exits without another model call) and return its last lines,
        to record with the milestone's end."""
        if self.proc is not None and self.proc.poll() is None:
            self._signal(signal.SIGINT)
        self._drain(timeout=10)
        self._stop()
        self.opening = None  # a turn after this one starts a new session
        return self._extra() if self.stream else {}

    def _extra(self) -> dict:
        """The CLI's lines since the last turn, as recorded: the session, each line in brief, and what
        the invocations whose results are among them cost by the CLI's account (`cli_cost_usd`)."""
        extra = {"session_id": self.session, "cli_events": [_brief(item) for item in self.stream]}
        results = [item for item in self.stream if item.get("type") == "result"]
        if results:
            cost = 0.0
            for result in results:
                cost += invocation_cost(result, self.reported_total)
                self.reported_total = result.get("total_cost_usd") or 0.0
            extra["cli_cost_usd"] = round(cost, 8)
        self.stream = []
        return extra

    def _answer(self, conn, request: dict, hold: bool = True) -> None:
        """Answer a bridge call with the result of the waiting call of that tool and those arguments.
        The CLI runs a tool as soon as the model has written the call, while the answer may still
        stream: a call that has no result yet is held (`hold`) until the harness has run it."""
        name, args = request["name"], request.get("arguments") or {}
        ready = [call for call in self.waiting if call.name == name and call.id in self.answers]
        # parallel calls of one tool: told apart by their arguments
        call = next((call for call in ready if call.args == args), ready[0] if ready else None)
        if call is None and hold:
            self.held.append((conn, request))
            return
        if call is None:
            conn.send({"content": [f"tool {name}: no result from the harness"], "is_error": True})
            return
        self.waiting.remove(call)
        conn.send({"content": self.answers.pop(call.id), "is_error": False})

    # ---- plumbing -------------------------------------------------------------------------------
    def _write_mcp_config(self) -> None:
        server = {
            "type": "stdio",
            "command": sys.executable,
            "args": ["-m", "harnessforge.agents.mcp_bridge", str(self.tools_path), self.listener.address],
            "env": {"HF_BRIDGE_KEY": self.authkey.decode()},
        }
        self.mcp_config.write_text(json.dumps({"mcpServers": {SERVER: server}}))

    def _accept(self) -> None:
        while True:
            try:
                conn = self.listener.accept()
            except (OSError, EOFError, AuthenticationError):  # closed, or a client without the key
                if self.closed:
                    return
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        while True:
            try:
                self.inbox.put(("call", conn, conn.recv()))
            except (EOFError, OSError):
                return

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            try:
                self.inbox.put(("line", json.loads(line)))
            except ValueError:
                self.stream.append({"type": "text", "text": line.rstrip()})
        proc.wait()
        self.inbox.put(("exit", proc))

    def _wait_exit(self) -> None:
        """Let a CLI that ended its turn exit (its session file is complete then); drain its lines."""
        proc = self.proc
        error = self._drain(timeout=30)
        if error is not None:
            raise AgentError(self._exit_message(proc.returncode, error))

    def _drain(self, timeout: float) -> dict | None:
        """Wait for the CLI to exit and move its last lines to `stream` (a CLI still running after
        `timeout` is stopped); its error result, if it wrote one."""
        if self.proc is None:
            return None
        self.reader.join(timeout=timeout)  # the reader ends after the CLI's last line
        if self.reader.is_alive():
            self._stop()
            return None
        self.proc, error = None, None
        while not self.inbox.empty():
            kind, *payload = self.inbox.get_nowait()
            if kind == "line" and payload[0]["type"] not in ("event", "user"):  # user: tool results echoed
                self.stream.append(payload[0])
                if payload[0]["type"] == "result" and payload[0].get("is_error"):
                    error = error or payload[0]
        return error

    def _exit_message(self, returncode: int, result: dict | None = None) -> str:
        result = result or next((item for item in reversed(self.stream) if item.get("type") == "result"), {})
        detail = result.get("result") or "".join(self.stderr[-20:]).strip() or "no output"
        retry = next((item for item in reversed(self.stream) if item.get("subtype") == "api_retry"), None)
        if retry:
            status, error, tries = retry.get("error_status"), retry.get("error", ""), retry.get("attempt")
            detail += f" (the API answered HTTP {status} {error}; {tries} retries)"
        return f"the claude CLI exited (code {returncode}) before answering: {detail}"

    def _stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self._signal(signal.SIGKILL)
            self.proc.wait()
        if self.proc:
            self.reader.join(timeout=5)  # its last lines must not reach the next session
        self.proc = None
        while not self.inbox.empty():
            self.inbox.get_nowait()

    def close(self) -> None:
        self.closed = True
        self._stop()
        # closing a socket does not wake a thread blocked in its accept(): a knock does (the thread
        # sees `closed` and returns), else each agent would leave its thread behind
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as knock:
            knock.connect(self.listener.address)
        self.listener.close()
        self.relay.close()
        shutil.rmtree(self.home, ignore_errors=True)


def invocation_cost(result: dict, session_total: float) -> float:
    """What one CLI invocation's own calls cost, by its `result` line. Its `total_cost_usd` is the
    session's running total (a `--resume` carries it on from `session_total`, the last one), so the
    per-result `model_usage_since_last_result` is summed; a CLI that lacks it: what the total grew by
    (all of it, if the total started again from 0)."""
    since = result.get("model_usage_since_last_result")
    if since is not None:
        return sum(usage.get("costUSD") or 0.0 for usage in since.values())
    total = result.get("total_cost_usd") or 0.0
    return total - session_total if total >= session_total else total


def _brief(obj: dict) -> dict:
    """A CLI stream line as recorded with the turn: its kind and the facts worth keeping."""
    keep = (
        "type",
        "subtype",
        "session_id",
        "model",
        "tools",
        "is_error",
        "result",
        "stop_reason",
        "num_turns",
        "total_cost_usd",
        "status",
    )
    out = {k: obj[k] for k in keep if k in obj}
    if obj.get("type") == "assistant":
        out["content"] = [block.get("type") for block in obj["message"]["content"]]
    return out
