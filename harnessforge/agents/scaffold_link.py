"""A Dev whose agent loop is a Python scaffold's own (mini-swe-agent, OpenHarness), run in that
scaffold's virtualenv as a separate process and linked to the harness over a local socket.

The scaffold keeps its prompts, its tool names and schemas, its message format and its own record;
the harness keeps the sandbox, the Recorder, the Mentor, the budgets and the Verifier. One `turn()`
is one model answer the scaffold reports (`answer`). Its tool calls are then run by the harness in
the milestone's sandbox (through `canonical`, our tools' vocabulary), and on the next `turn()` each
result goes back to the scaffold, which is waiting for it (`tool`). The messages the harness adds
between turns (hints, Verifier feedback) are handed over when the scaffold asks before its next model
call (`next`), or when its own loop ended (`done`). The driver's side is `drivers/link.py`.

A scaffold is found at `$HARNESSFORGE_<NAME>_PYTHON`, else `.tools/scaffolds/<name>/bin/python`
(`scripts/install.sh`); its package version must be one this backend was written against.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ..envs.sandbox import Sandbox
from ..models.trajectory import AgentTurn, Message, ToolCall, Usage
from ..store import RunFiles
from .base import AgentBackend, function_schemas, transcript
from .errors import AgentError
from .pricing import cost_usd

PROJECT_SCAFFOLDS = Path(__file__).resolve().parents[2] / ".tools" / "scaffolds"
DRIVERS = Path(__file__).resolve().parent / "drivers"
PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
}
EXIT_CODE = re.compile(r"\n\[exit code (-?\d+)( \(timed out\))?\]$")  # the trailer of our bash tool's output
GO_ON = "The milestone is not done yet: keep working, then finish as before."
HTTP_STATUS = re.compile(r"\b(?:HTTP|[Ee]rror code:?|status(?: code)?:?) ?(4\d\d|5\d\d)\b")  # in a scaffold's words
STOP_GRACE_S = 5.0  # how long a stopped scaffold may take to save its record and exit


def scaffold_python(name: str, explicit: str | None = None) -> str:
    """The Python of the scaffold's virtualenv: the argument, `$HARNESSFORGE_<NAME>_PYTHON`, the project's."""
    variable = f"HARNESSFORGE_{name.upper().replace('-', '_')}_PYTHON"
    for candidate in (explicit, os.environ.get(variable)):
        if candidate:
            return candidate
    python = PROJECT_SCAFFOLDS / name / "bin" / "python"
    if python.exists():
        return str(python)
    raise AgentError(
        f"the {name} scaffold is not installed: run scripts/install.sh (it makes {python}) or set {variable}"
    )


def installed_version(python: str, package: str, supported: str) -> str:
    """The scaffold package's version in its virtualenv; one clear line if it is missing or not `supported`."""
    probe = f"import importlib.metadata as m; print(m.version({package!r}))"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise AgentError(f"cannot run {python} for {package}: {e}") from None
    if done.returncode != 0:
        raise AgentError(f"{package} is not installed in {python}: pip install '{package}{supported}' there")
    version = done.stdout.strip()
    try:
        ok = Version(version) in SpecifierSet(supported)
    except InvalidVersion:
        ok = False
    if not ok:
        raise AgentError(
            f"{package} {version} in {python} is not a supported version ({supported}): "
            f"pip install '{package}{supported}'"
        )
    return version


class ScaffoldLink(AgentBackend):
    """The harness's end of the link; a scaffold names its package, driver and tool mapping."""

    scaffold = ""
    package = ""  # its PyPI distribution
    supported = ""  # the versions this backend was written against (a specifier)
    driver = ""  # the driver script in drivers/
    native_tools: dict[str, str] = {}  # the scaffold's tool name -> ours; arguments by `arguments`

    def __init__(
        self,
        model: str,
        provider: str,
        api_key: str | None = None,
        base_url: str | None = None,
        python: str | None = None,
        timeout: float = 600.0,
        max_output_tokens: int | None = None,
        context_window: int | None = None,
    ):
        if provider not in PROVIDER_KEYS:
            raise AgentError(f"{self.scaffold}: provider must be one of {', '.join(PROVIDER_KEYS)}, got {provider!r}")
        key_var, url_var = PROVIDER_KEYS[provider]
        self.api_key = api_key or os.environ.get(key_var)
        if not self.api_key:
            raise AgentError(f"no {provider} API key for {self.scaffold}: pass api_key or set {key_var}")
        self.model, self.provider, self.timeout = model, provider, timeout
        self.max_output_tokens = max_output_tokens  # an answer's cap, sent by the scaffold's own client
        self.context_window = context_window  # where a scaffold that compacts itself does (the rules' window)
        self.base_url = base_url or os.environ.get(url_var) or ""
        self.python = scaffold_python(self.scaffold, python)
        self.version = installed_version(self.python, self.package, self.supported)
        self.name = self.scaffold
        self.home = Path(tempfile.mkdtemp(prefix=f"hf-{self.scaffold}-"))
        self.authkey = secrets.token_hex(32).encode()
        self.listener = Listener(str(self.home / "link.sock"), family="AF_UNIX", authkey=self.authkey)
        self.proc: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.tools: list[dict] | None = None  # the scaffold's own schemas, from its hello
        self.workdir, self.record_dir = "/workspace", None
        self._reset()

    def _reset(self) -> None:
        self.opening: str | None = None
        self.compacted: list[Message] | None = None  # the view its own compaction left, reported with its answer
        self.results: dict[str, str] = {}
        self.outbox: list[str] = []
        self.went_on: list[str] = []  # what the link said to the model on its own (GO_ON) since the last answer
        self.loop_ended: list[str] = []  # why the scaffold's own loop ended since the last answer (its exit status)
        self.request: dict | None = None  # the driver's request not answered yet

    # ---- what the harness asks ------------------------------------------------------------------
    def scaffold_info(self) -> dict[str, Any]:
        info = {"name": self.scaffold, "version": self.version}
        return info | ({"tools": self.tools} if self.tools else {})

    def enter(self, sandbox: Sandbox, record_dir: Path) -> None:
        self.workdir, self.record_dir = sandbox.workdir, record_dir

    def canonical(self, call: ToolCall) -> ToolCall:
        ours = self.native_tools.get(call.name)
        if ours is None:
            return call
        return call.model_copy(update={"name": ours, "args": self.arguments(call.name, call.args)})

    def arguments(self, tool: str, args: dict) -> dict:
        """The scaffold's arguments as our tool's (default: the same names)."""
        return dict(args)

    def turn(self, messages: list[Message], tools: list[dict]) -> AgentTurn:
        opening = next((message["content"] for message in messages if message["role"] == "user"), "")
        if opening != self.opening or self.proc is None:
            self._stop()
            self._reset()
            self.opening = opening
            resumed = any(message["role"] == "assistant" for message in messages)
            self._start(transcript(messages) if resumed else opening)
            return self._serve()
        # new since its last answer: the results of its calls and the harness's messages (before the answer: the
        # scaffold's own words, recorded, not sent back to it)
        answered = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages))
        for message in messages[answered + 1 :]:
            if message["role"] == "tool":
                self.results[message["tool_call_id"]] = message["content"]
            elif message["role"] == "user" and message["content"]:
                self.outbox.append(message["content"])
        return self._serve()

    def end_conversation(self) -> dict:
        self._stop()
        self.opening = None
        record = self.record_dir and self.record_dir / RunFiles.SCAFFOLD_TRAJECTORY
        return {"scaffold_trajectory": RunFiles.SCAFFOLD_TRAJECTORY} if record and record.exists() else {}

    # ---- the link -------------------------------------------------------------------------------
    def _start(self, task: str) -> None:
        task_file = self.home / "task.md"
        task_file.write_text(task)
        env = {k: os.environ[k] for k in ("PATH", "LANG", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE") if k in os.environ}
        env |= {
            "HOME": str(self.home),
            "HF_LINK_SOCKET": str(self.listener.address),
            "HF_LINK_KEY": self.authkey.decode(),
            "HF_PROVIDER": self.provider,
            "HF_MODEL": self.model,
            "HF_BASE_URL": self.base_url,
            "HF_API_KEY": self.api_key,
            "HF_TASK_FILE": str(task_file),
            "HF_WORKDIR": self.workdir,
            "HF_TRAJECTORY": str(self.record_dir / RunFiles.SCAFFOLD_TRAJECTORY) if self.record_dir else "",
            "HF_MAX_TOKENS": str(self.max_output_tokens or ""),
            "HF_CONTEXT_WINDOW": str(self.context_window or ""),
            **self.driver_env(),
        }
        self.stderr: list[str] = []
        self.proc = subprocess.Popen(
            [self.python, str(DRIVERS / self.driver)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.home,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=lambda proc=self.proc: self.stderr.extend(proc.stderr), daemon=True).start()
        self.conn = self._accept()

    def driver_env(self) -> dict[str, str]:
        """What the scaffold's own settings need (its config and data directories under our temp home)."""
        return {}

    def _accept(self) -> Connection:
        """The driver's connection, or the reason it never came (it exited first: a missing import...)."""
        found: list = []

        def accept() -> None:
            try:
                found.append(self.listener.accept())
            except (OSError, EOFError, AuthenticationError) as e:
                found.append(e)

        waiter = threading.Thread(target=accept, daemon=True)
        waiter.start()
        deadline = time.monotonic() + self.timeout
        while waiter.is_alive() and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                time.sleep(0.5)  # its stderr
                raise AgentError(self._exit_message())
            waiter.join(0.2)
        if not found or not isinstance(found[0], Connection):
            self._stop()
            raise AgentError(f"{self.scaffold} did not connect within {self.timeout:g} s")
        return found[0]

    def _serve(self) -> AgentTurn:
        """Answer the driver until it reports its next model answer."""
        deadline = time.monotonic() + self.timeout
        while True:
            request = self.request or self._receive(deadline)
            self.request = None
            op = request.get("op")
            if op == "answer":
                self.conn.send({})
                turn = self._turn(request)
                self.went_on, self.loop_ended = [], []
                return turn
            if op == "hello":
                self.tools = function_schemas(request.get("tools") or []) or None
                self.conn.send({})
            elif op == "tool":
                self.conn.send(self._result(request))
            elif op == "compacted":  # its own compaction, before the call it is about to make
                self.compacted = request.get("view") or []
                self.conn.send({})
            elif op == "next":
                self.conn.send({"messages": self.outbox})
                self.outbox = []
            elif op == "done":  # its own loop ended; the harness wants more (else it would not ask for a turn)
                self.loop_ended.append(request.get("reason") or "its loop ended")
                self.went_on += [] if self.outbox else [GO_ON]
                self.conn.send({"messages": self.outbox or [GO_ON]})
                self.outbox = []
            elif op == "error":  # the scaffold gave up on the model call (its own retries spent)
                self.conn.send({})
                said = request.get("message") or "an error it did not describe"
                status = request.get("status_code") or next(map(int, HTTP_STATUS.findall(said)), None)
                raise AgentError(f"{self.scaffold}: {said}", status)
            else:
                raise AgentError(f"{self.scaffold} sent an unknown request {op!r}")

    def _receive(self, deadline: float) -> dict:
        while True:
            try:
                if self.conn.poll(0.2):
                    return self.conn.recv()
            except (EOFError, OSError):
                time.sleep(0.5)
                raise AgentError(self._exit_message()) from None
            if self.proc.poll() is not None and not self.conn.poll(0):
                time.sleep(0.5)
                raise AgentError(self._exit_message())
            if time.monotonic() > deadline:
                self._stop()
                said = "".join(self.stderr[-5:]).strip()[-300:]
                raise AgentError(
                    f"{self.scaffold} gave no answer within {self.timeout:g} s" + (f": {said}" if said else "")
                )

    def _result(self, request: dict) -> dict:
        """The harness's result of a call, as the scaffold's tool returns it: output, ok, exit code."""
        text = self.results.pop(request.get("id") or "", None)
        if text is None:
            return {
                "output": f"error: no result from the harness for {request.get('name')}",
                "ok": False,
                "exit_code": 1,
            }
        match = EXIT_CODE.search(text)
        if match:
            code = int(match.group(1))
            return {"output": text[: match.start()], "ok": code == 0, "exit_code": code}
        return {"output": text, "ok": not text.startswith("error:"), "exit_code": None}

    def _turn(self, answer: dict) -> AgentTurn:
        usage = Usage(
            **{k: int(v or 0) for k, v in (answer.get("usage") or {}).items() if k in ("input", "output", "cached")}
        )
        model = answer.get("model") or self.model
        calls = [
            ToolCall(id=call["id"], name=call["name"], args=call.get("args") or {})
            for call in answer.get("calls") or []
        ]
        return AgentTurn(
            reasoning=answer.get("reasoning") or "",
            text=answer.get("text") or "",
            tool_calls=calls,
            usage=usage,
            latency_s=float(answer.get("latency_s") or 0.0),
            model=self.model,
            stop_reason=answer.get("stop_reason") or "",
            received=[*(answer.get("received") or []), *self.went_on],
            compacted=self._compaction(),
            cost_usd=cost_usd(model.split("/")[-1], usage),
            extra={
                "scaffold": self.scaffold,
                **({"served_by": model} if model != self.model else {}),
                **({"loop_ended": self.loop_ended} if self.loop_ended else {}),  # (the model never read why)
            },
        )

    def _compaction(self) -> list[Message] | None:
        """The view its own compaction left (once): the harness's conversation opens with it from now on."""
        view, self.compacted = self.compacted, None
        if view is not None:
            self.opening = next((m["content"] for m in view if m.get("role") == "user"), self.opening)
        return view

    def _exit_message(self) -> str:
        code = self.proc.poll() if self.proc else None
        detail = "".join(self.stderr[-30:]).strip().splitlines()
        last = next((line for line in reversed(detail) if line.strip()), "no output")
        return f"{self.scaffold} exited (code {code}) before answering: {last.strip()}"

    def _stop(self) -> None:
        """Close the link, which the driver takes as the end (it saves its record and exits); killed if it has
        not exited within STOP_GRACE_S (a model call under way). Its record is written atomically either way."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        self._stop()
        self.listener.close()
        shutil.rmtree(self.home, ignore_errors=True)
