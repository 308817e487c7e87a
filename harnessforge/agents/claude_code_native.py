"""Claude Code with its own tools (Bash, Read, Edit, Write, Grep, Glob, ...), running inside the
milestone's sandbox container, whose network stays off.

- **The CLI in the sandbox.** Its self-contained binary is mounted read-only and started in the
  container (`docker exec -i`) as the sandbox user, in the workspace. Its tools act on the workspace
  itself: the harness runs none of them, it watches each one.
- **The model API through a relay.** The CLI reaches the Messages API only through `ApiRelay` on a
  Unix socket in a mounted directory (`ANTHROPIC_UNIX_SOCKET`, with a placeholder key): the real key
  stays on the host, and the relay lets nothing but `POST /v1/messages` through.
- **Every tool call, held and recorded.** A PreToolUse hook (`drivers/claude_hook.pl`) asks the
  harness before each call, so the harness takes the calls one at a time, as for its own tools (the
  workspace compared around each, a shell test run counted as ours). The harness profile can refuse a
  call there. A PostToolUse (or PostToolUseFailure) hook brings its result.
- **Hints mid-run.** The hook after an answer's last call is held until the harness's next turn: its
  answer carries the Mentor's hint or the Verifier's feedback as `additionalContext`. After the CLI
  ended its turn, they are the prompt of `claude -p --resume` in the same container.
- **Its final answer is its submission** (it has no submit tool): graded by the Verifier, unchanged.

The stream parsing, turns, costs and resumes are `ClaudeCodeAgent`'s (the MCP mode, which stays).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..envs.sandbox import Mount, Sandbox
from ..envs.shell_tests import SHELL_REPORTS, shell_test_env
from ..errors import EnvError, SandboxLost
from ..models.trajectory import Message, ToolCall
from .api_relay import ApiRelay
from .base import function_schemas
from .claude_code_backend import QUIET_ENV, ClaudeCodeAgent
from .errors import AgentError

KIT = "/opt/hf-scaffold"  # in the sandbox: the CLI and the hook, read-only
LINK = "/run/hf"  # in the sandbox: the relay's and the hooks' sockets
CLI = f"{KIT}/claude"
CONFIG = "/tmp/hf-claude"  # the CLI's config and sessions, inside the container (kept for --resume)
MIN_VERSION = "2.1.0"  # PreToolUse/PostToolUse(Failure) hooks with tool_use_id, ANTHROPIC_UNIX_SOCKET
WORKSPACE_PREFIX = re.compile(r"^/workspace/?")
# Claude Code's tools as ours, for the Recorder, the Mentor and the analytics (others keep their names)
NATIVE_TOOLS = {
    "Bash": "bash",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "NotebookEdit": "edit_file",
    "Grep": "search",
    "Glob": "list_dir",
    "LS": "list_dir",
}
UNREACHABLE_TOOLS = "WebFetch,WebSearch"  # the network is off: offering them only wastes turns
NATIVE_NOTE = """You are working in a git repository at {workdir}; the network is off. Implement the feature the
user describes. The test files are given and must not be changed: changes to them are ignored. When the
feature is done and the tests pass, end your turn with a short summary: your work is graded then."""


def cli_version(binary: str) -> str:
    """`claude --version`'s number; one clear line if it cannot run or is older than this mode needs."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise AgentError(f"cannot run the claude CLI at {binary}: {e}") from None
    found = (done.stdout.split() or [""])[0]
    try:
        ok = Version(found) >= Version(MIN_VERSION)
    except InvalidVersion:
        ok = False
    if not ok:
        raise AgentError(
            f"the claude CLI at {binary} is version {found or '?'}; the native mode needs >= {MIN_VERSION} "
            "(its hooks and ANTHROPIC_UNIX_SOCKET): npm install @anthropic-ai/claude-code@latest"
        )
    return found


def self_contained(binary: str) -> str:
    """The real file behind `binary`, which must be a native executable: it is mounted into the sandbox,
    which has no Node.js to run a script with."""
    real = os.path.realpath(binary)
    with open(real, "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise AgentError(
                f"the claude CLI at {real} is not a self-contained binary (a script?); "
                "the native mode mounts it into the sandbox"
            )
    return real


def observation(payload: dict) -> tuple[str, bool]:
    """A PostToolUse(Failure) hook's payload as the text the harness records, and whether the call succeeded."""
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return str(payload.get("error") or "the tool failed"), False
    response = payload.get("tool_response")
    if isinstance(response, str):
        return response, True
    if isinstance(response, dict):
        if "stdout" in response or "stderr" in response:
            out = str(response.get("stdout") or "")
            err = str(response.get("stderr") or "")
            return out + (f"\n[stderr]\n{err}" if err else ""), not response.get("interrupted")
        file = response.get("file")
        if isinstance(file, dict) and "content" in file:
            return str(file["content"]), True
    return json.dumps(response), True


class _HookServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class ClaudeCodeNative(ClaudeCodeAgent):
    name = "claude-code-native"
    scaffold = "claude-code"
    ends_with_answer = True

    def __init__(
        self,
        model: str,
        claude_bin: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
        **options: Any,
    ):
        self.real_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        auth_token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not self.real_key and not auth_token:
            raise AgentError("no Anthropic API key for the claude CLI: set ANTHROPIC_API_KEY (it stays on the host)")
        self.base_url, self.auth_token = base_url or os.environ.get("ANTHROPIC_BASE_URL"), auth_token
        self.link = Path(tempfile.mkdtemp(prefix="hf-claude-link-"))
        os.chmod(self.link, 0o777)  # the sandbox user connects to the sockets in it
        super().__init__(model, claude_bin=claude_bin, timeout=timeout, **options)
        self.binary = self_contained(self.bin)
        self.version = cli_version(self.binary)
        self.hooks = _HookServer(str(self.link / "hooks.sock"), self._hook_handler())
        os.chmod(self.link / "hooks.sock", 0o777)
        threading.Thread(target=self.hooks.serve_forever, daemon=True).start()
        self.sandbox: Sandbox | None = None
        self.pre: dict[str, Any] = {}  # tool_use_id -> the PreToolUse hook's connection, waiting
        self.post: dict[str, tuple] = {}  # tool_use_id -> (connection, payload) of its PostToolUse(Failure)
        self.results: dict[str, tuple[str, bool]] = {}  # tool_use_id -> the stream's tool_result
        self.held_post = None  # the last call's PostToolUse connection: its answer carries the next hints
        self.last_call: str | None = None
        self.expected: set[str] = set()  # the ids of the calls the Dev's answers made

    # ---- what the harness asks ------------------------------------------------------------------
    def scaffold_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.scaffold, "version": self.version}
        if self.relay.tools:  # what the CLI offered the model, as the relay saw it
            info["tools"] = function_schemas(self.relay.tools)
        return info

    def sandbox_mounts(self) -> list[Mount]:
        hook = Path(__file__).resolve().parent / "drivers" / "claude_hook.pl"
        return [
            Mount(self.binary, CLI),
            Mount(str(hook), f"{KIT}/hook.pl"),
            Mount(str(self.link), LINK),
        ]  # read-only: the Dev cannot remove or replace the sockets

    def enter(self, sandbox: Sandbox, record_dir: Path) -> None:
        if self.sandbox is not sandbox:
            self._stop()
            self.opening = None  # a new container holds no session to resume
        self.sandbox = sandbox

    def canonical(self, call: ToolCall) -> ToolCall:
        ours = NATIVE_TOOLS.get(call.name)
        if ours is None:
            return call
        args = call.args
        path = (
            WORKSPACE_PREFIX.sub("", str(args.get("file_path") or args.get("notebook_path") or args.get("path") or ""))
            or "."
        )
        mapped: dict[str, Any] = {"path": path}
        if ours == "bash":
            mapped = {"command": args.get("command", "")}
        elif call.name == "Write":
            mapped["content"] = args.get("content", "")
        elif call.name == "Edit":
            mapped |= {"old": args.get("old_string", ""), "new": args.get("new_string", "")}
        elif ours in ("search", "list_dir") and args.get("pattern"):
            mapped["pattern"] = args["pattern"]
        return call.model_copy(update={"name": ours, "args": mapped})

    def executes(self, call: ToolCall) -> bool:
        return True  # the CLI runs every one of its calls itself

    def execute(self, call: ToolCall, refusal: str | None) -> tuple[str, bool]:
        """Let the CLI run the call (answer its PreToolUse hook), then wait for its result."""
        deadline = time.monotonic() + self.timeout
        while call.id not in self.pre and call.id not in self.post and call.id not in self.results:
            self._pump(call, deadline)
        if call.id in self.pre:
            conn = self.pre.pop(call.id)
            if refusal:
                decision = {"permissionDecision": "deny", "permissionDecisionReason": refusal}
                self._reply(conn, {"hookSpecificOutput": {"hookEventName": "PreToolUse", **decision}})
                return refusal, False
            self._reply(conn, {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
        while call.id not in self.post and call.id not in self.results:
            self._pump(call, deadline)
        if call.id not in self.post:  # the CLI answered it without running it (bad input): its own words
            return self.results.pop(call.id)
        conn, payload = self.post.pop(call.id)
        self.results.pop(call.id, None)
        if call.id == self.last_call:
            self.held_post = (conn, payload["hook_event_name"])  # answered at the next turn, with its hints
        else:
            self._reply(conn, {})
        return observation(payload)

    # ---- ClaudeCodeAgent's seams ----------------------------------------------------------------
    def _has_key(self) -> bool:
        return True  # checked above: the key is the relay's, the CLI gets a placeholder

    def _open_relay(self) -> ApiRelay:
        """In the folder the sandbox mounts: the CLI inside reaches the model only through it."""
        return ApiRelay(self.link / "api.sock", self.base_url, self.real_key or "", self.auth_token)

    def _system(self, messages: list[Message]) -> str:
        """Claude Code's own prompt stays; the note says what ours would, in its terms (no submit tool)."""
        return NATIVE_NOTE.format(workdir=self.sandbox.workdir if self.sandbox else "/workspace")

    def _tool_flags(self) -> list[str]:
        settings = {
            "hooks": {
                event: [
                    {
                        "matcher": "",
                        "hooks": [
                            {
                                "type": "command",
                                "command": f"perl {KIT}/hook.pl {LINK}/hooks.sock",
                                "timeout": int(self.timeout),
                            }
                        ],
                    }
                ]
                for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
            }
        }
        return [
            "--settings",
            json.dumps(settings),
            "--permission-mode",
            "bypassPermissions",
            "--disallowedTools",
            UNREACHABLE_TOOLS,
        ]

    def _spawn(self, cmd: list[str]) -> subprocess.Popen:
        if self.sandbox is None:
            raise AgentError("the claude CLI runs inside the milestone's sandbox, and none is open")
        if not (self.link / "api.sock").exists():
            raise AgentError(
                f"the API relay's socket {self.link / 'api.sock'} is gone: "
                "the CLI in the sandbox cannot reach the model"
            )
        env = (
            QUIET_ENV
            | shell_test_env(f"{self.sandbox.results_dir}/{SHELL_REPORTS}")
            | {
                "HOME": f"{CONFIG}/home",
                "CLAUDE_CONFIG_DIR": CONFIG,
                "CLAUDE_CODE_MAX_RETRIES": str(self.max_retries),
                "ANTHROPIC_UNIX_SOCKET": f"{LINK}/api.sock",
                "ANTHROPIC_API_KEY": "ssh-placeholder",  # the relay puts the real key on each request
                "ANTHROPIC_BASE_URL": "http://localhost",
                **self.window_env,
                "BASH_DEFAULT_TIMEOUT_MS": str(self.sandbox.spec.limits.exec_timeout_s * 1000),
                "BASH_MAX_TIMEOUT_MS": str(self.sandbox.spec.limits.exec_timeout_s * 1000),
            }
        )
        return self.sandbox.spawn(["sh", "-c", f'mkdir -p {CONFIG}/home && exec {CLI} "$@"', "claude", *cmd[1:]], env)

    def _deliver(self, results: dict[str, str], texts: list[str]) -> bool:
        """The held hook of the last call carries the new texts into the CLI's context."""
        if self.held_post is None or not (self.proc and self.proc.poll() is None):
            self.held_post = None
            return False
        conn, event = self.held_post
        self.held_post = None
        output = (
            {"hookSpecificOutput": {"hookEventName": event, "additionalContext": "\n\n".join(texts)}} if texts else {}
        )
        self._reply(conn, output)
        return True

    def _turn(self, *args, **kwargs):
        answer = super()._turn(*args, **kwargs)
        self.last_call = answer.tool_calls[-1].id if answer.tool_calls else None
        self.expected |= {call.id for call in answer.tool_calls}
        return answer

    def _hook(self, conn, payload: dict) -> None:
        event, tool_id = payload.get("hook_event_name"), payload.get("tool_use_id") or ""
        if tool_id and tool_id not in self.expected and self._answered_before(tool_id):
            # not a call of the Dev's answers: a subagent's, inside an Agent call (recorded as that call)
            self._reply(conn, {})
        elif event == "PreToolUse":
            self.pre[tool_id] = conn
        elif event in ("PostToolUse", "PostToolUseFailure"):
            self.post[tool_id] = (conn, payload)
        else:
            self._reply(conn, {})

    def _answered_before(self, tool_id: str) -> bool:
        """A hook may come before its answer's message_stop (the CLI starts a tool as soon as its block is
        written): a call of the answer still streaming is one whose block the stream already showed."""
        return not any(
            block.get("id") == tool_id
            for line in self.stream
            if line.get("type") == "assistant" and not line.get("parent_tool_use_id")
            for block in line["message"]["content"]
            if isinstance(block, dict)
        )

    def _tool_results(self, line: dict) -> None:
        for block in line.get("message", {}).get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                text = (
                    content
                    if isinstance(content, str)
                    else "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
                )
                self.results[block.get("tool_use_id") or ""] = (text, not block.get("is_error"))

    def _pump(self, call: ToolCall, deadline: float) -> None:
        """One item of the CLI's output or hooks, while a tool call waits for it."""
        try:
            kind, *payload = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            self._stop()
            raise AgentError(f"the claude CLI did not run {call.name} ({call.id}) within {self.timeout:g} s") from None
        if kind == "hook":
            self._hook(*payload)
        elif kind == "exit":
            raise AgentError(self._exit_message(payload[0].returncode))
        elif kind == "line" and payload[0].get("type") == "user":
            self._tool_results(payload[0])
        elif kind == "line":
            self.stream.append(payload[0])

    def _hook_handler(self):
        inbox = lambda: self.inbox  # noqa: E731 - read when a hook arrives (set by the base __init__)

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                chunks = []
                while chunk := self.request.recv(65536):
                    chunks.append(chunk)
                try:
                    payload = json.loads(b"".join(chunks) or b"{}")
                except ValueError:
                    payload = {}
                answered = threading.Event()
                inbox().put(("hook", _Reply(self.request, answered), payload))
                answered.wait()  # the connection stays open until the harness answers

        return Handler

    @staticmethod
    def _reply(conn, output: dict) -> None:
        conn.send(output)

    def _signal(self, sig: int) -> None:
        """The CLI runs in the container: signal it there (the `docker exec` client forwards nothing)."""
        if self.sandbox is not None and self.proc is not None and self.proc.poll() is None:
            number = int(sig)
            each = f'grep -qa "{CLI}" "$p/cmdline" 2>/dev/null && kill -{number} "${{p#/proc/}}"'
            script = f"for p in /proc/[0-9]*; do {each}; done; true"
            try:
                self.sandbox.exec(script, timeout=30)
            except (EnvError, SandboxLost):  # the container is gone, and the CLI with it
                pass
        if sig == signal.SIGKILL and self.proc and self.proc.poll() is None:
            self.proc.kill()

    def _exit_message(self, returncode: int, result: dict | None = None) -> str:
        message = super()._exit_message(returncode, result)
        if not (self.link / "api.sock").exists():
            message += f" (the API relay's socket {self.link / 'api.sock'} is gone)"
        return message

    def _stop(self) -> None:
        for conn in list(self.pre.values()) + [c for c, _ in self.post.values()]:
            self._reply(conn, {})
        if self.held_post:
            self._reply(self.held_post[0], {})
        self.pre, self.post, self.results, self.held_post = {}, {}, {}, None
        super()._stop()

    def close(self) -> None:
        super().close()
        self.hooks.shutdown()
        self.hooks.server_close()
        shutil.rmtree(self.link, ignore_errors=True)


class _Reply:
    """A hook's connection: `send` writes the harness's answer and lets the hook's handler finish."""

    def __init__(self, sock: socket.socket, answered: threading.Event):
        self.sock, self.answered = sock, answered

    def send(self, output: dict) -> None:
        if self.answered.is_set():
            return
        try:
            self.sock.sendall(json.dumps(output).encode())
        except OSError:
            pass
        self.answered.set()

    def close(self) -> None:
        self.send({})
