"""`Sandbox`: the one interface agent tools, the verifier and validation use to touch a repo.

A sandbox holds a workspace with history only up to its current commit (`workspace.py`), runs
commands with the network off, and can be reset to another commit by rebuilding that workspace.
Backends: `DockerSandbox` (a long-lived container) and `LocalSandbox` (bubblewrap / unshare).
"""

from __future__ import annotations

import shlex
import subprocess
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import EnvError
from ..models.env import ExecResult
from .runner_spec import PLUGIN_DIR, RESULTS_DIR

# What every command sees: no variable from the host, a fixed locale and clock zone (fewer flakes).
BASE_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "HOME": "/home/hf", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class FileChange:
    """A file that differs from the workspace's commit: git blob hashes, 40 zeros for "absent"."""

    before: str
    after: str


@dataclass
class Raw:
    """A command's outcome with its output still as bytes (files and patches are not text)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    oom_killed: bool = False

    def result(self) -> ExecResult:
        return ExecResult(
            exit_code=self.exit_code,
            stdout=self.stdout.decode(errors="replace"),
            stderr=self.stderr.decode(errors="replace"),
            duration_s=round(self.duration_s, 4),
            timed_out=self.timed_out,
            oom_killed=self.oom_killed,
        )


@dataclass
class Limits:
    memory: str = "4g"
    cpus: float = 2.0
    pids: int = 512
    exec_timeout_s: int = 600

    @property
    def memory_bytes(self) -> int:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
        spelled = self.memory.lower()
        return int(spelled[:-1]) * units[spelled[-1]] if spelled[-1] in units else int(spelled)

    @classmethod
    def from_rules(cls, env_rules) -> "Limits":
        return cls(env_rules.memory, env_rules.cpus, env_rules.pids_limit, env_rules.exec_timeout_s)


@dataclass(frozen=True)
class Mount:
    """A host path seen inside the sandbox: what a scaffold that runs in it brings (its binary, read-only;
    the directory of its relay socket)."""

    source: str
    target: str
    read_only: bool = True


@dataclass
class SandboxSpec:
    """What to open: a repo's bare clone at one commit, with the env of its recipe."""

    source: Path
    commit: str
    env: dict[str, str] = field(default_factory=dict)
    prepare: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    labels: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    # host paths the Dev must never see: the store (ground truth, plans), the clone cache and the repository added
    # (every future commit). The local sandbox hides them; a container sees nothing of the host anyway.
    hidden: list[str] = field(default_factory=list)


class Sandbox(ABC):
    workdir: str
    scratch: str = "/tmp"  # writable, outside the workspace: patches and temp indexes go here
    results_dir: str = RESULTS_DIR  # where test runners write their structured reports
    plugin_dir: str = PLUGIN_DIR  # our pytest plugin (read-only for the sandbox user)

    def __init__(self, spec: SandboxSpec):
        self.spec = spec
        self.commit = spec.commit
        self.env = {**BASE_ENV, **spec.env}
        self._index_id = uuid.uuid4().hex  # the working-tree index `_indexed` keeps (see there)
        self._index_commit: str | None = None

    # ---- what each backend provides -----------------------------------------------------------
    @abstractmethod
    def _run(self, cmd: str, timeout: int, env: dict[str, str]) -> Raw:
        """Run `cmd` with bash in the workspace as the sandbox user, killing it after `timeout`."""

    @abstractmethod
    def _load_workspace(self, commit: str) -> None:
        """Replace the workspace by the history up to `commit`."""

    @abstractmethod
    def _put_file(self, path: str, data: bytes) -> None:
        """Place `data` at the absolute `path` as the sandbox user would."""

    @abstractmethod
    def close(self) -> None: ...

    # ---- shared behaviour -----------------------------------------------------------------------
    def exec(self, cmd: str, timeout: int | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """Run `cmd` with bash in the workspace; never raises for the command's own failure."""
        raw = self._run(cmd, timeout or self.spec.limits.exec_timeout_s, {**self.env, **(env or {})})
        return raw.result()

    def spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        """A long-running program inside the sandbox with piped stdin/stdout (a scaffold's CLI). Only the
        Docker sandbox has one: its container outlives a command."""
        raise EnvError(f"{type(self).__name__} cannot run a program inside it; use the Docker sandbox")

    def _start(self) -> None:
        self._load_workspace(self.commit)
        self.prepare()

    def prepare(self) -> None:
        """Run the recipe's per-checkout steps (e.g. the editable install of the workspace); again after a
        patch that may change the project's metadata (entry points, packages), so the tests see it."""
        for cmd in self.spec.prepare:
            result = self.exec(cmd)
            if result.exit_code != 0:
                raise EnvError(
                    f"prepare step {cmd!r} failed: {(result.stderr or result.stdout)[-500:]}", reason="install_failed"
                )

    def path(self, rel: str) -> str:
        """An absolute path inside the workspace; paths that climb out of it are refused."""
        joined = PurePosixPath(self.workdir, rel)
        parts: list[str] = []
        for part in joined.parts[1:]:
            if part == "..":
                if not parts:
                    raise EnvError(f"path {rel!r} leaves the workspace")
                parts.pop()
            elif part != ".":
                parts.append(part)
        out = "/" + "/".join(parts)
        if out != self.workdir and not out.startswith(self.workdir + "/"):
            raise EnvError(f"path {rel!r} is outside the workspace {self.workdir}")
        return out

    def read_file(self, rel: str) -> bytes:
        result = self._run(f"cat -- {shlex.quote(self.path(rel))}", self.spec.limits.exec_timeout_s, self.env)
        if result.exit_code != 0:
            raise EnvError(f"cannot read {rel}: {result.stderr.decode(errors='replace').strip()}")
        return result.stdout

    def write_file(self, rel: str, data: bytes | str) -> None:
        self._put_file(self.path(rel), data.encode() if isinstance(data, str) else data)

    def list_dir(self, rel: str = ".") -> list[str]:
        """Entries of a directory, directories with a trailing slash."""
        where = shlex.quote(self.path(rel))  # a pipeline's status is its last command's: the path is tested first
        result = self.exec(f"test -d {where} && find {where} -mindepth 1 -maxdepth 1 -printf '%P%y\\n' | sort")
        if result.exit_code != 0:
            raise EnvError(f"cannot list {rel}: {result.stderr.strip() or 'no such directory'}")
        return [line[:-1] + ("/" if line[-1] == "d" else "") for line in result.stdout.splitlines() if line]

    def apply_patch(self, patch: bytes, *, check: bool = True) -> ExecResult:
        """`git apply` a patch to the working tree (nothing is committed)."""
        if not patch.strip():
            return ExecResult(exit_code=0, stdout="", duration_s=0.0)
        tmp = f"{self.scratch}/hf-{uuid.uuid4().hex}.patch"
        self._put_file(tmp, patch)
        result = self.exec(f"git apply --whitespace=nowarn --binary {tmp}; rc=$?; rm -f {tmp}; exit $rc")
        if check and result.exit_code != 0:
            raise EnvError(
                f"patch does not apply at {self.commit[:10]}: {result.stderr.strip()[-500:]}", "patch_failed"
            )
        return result

    def diff(self) -> bytes:
        """Everything changed since the workspace's commit (untracked files included), as a patch."""
        result = self._indexed(f"git diff --cached --binary --no-renames --no-color {self.commit}")
        if result.exit_code != 0:
            raise EnvError(f"git diff failed: {result.stderr.decode(errors='replace').strip()[-500:]}")
        return result.stdout

    def changes(self) -> dict[str, FileChange]:
        """Every file that differs from the workspace's commit (untracked ones included), with the git blob
        hash of its content at the commit and now: what a tool call changed is the difference of two calls."""
        result = self._indexed(f"git diff --cached --raw --no-abbrev --no-renames -z {self.commit}")
        if result.exit_code != 0:
            raise EnvError(f"git diff failed: {result.stderr.decode(errors='replace').strip()[-500:]}")
        fields = result.stdout.decode(errors="replace").split("\0")
        changes = {}
        for header, path in zip(fields[0::2], fields[1::2], strict=False):
            parts = header.lstrip(":").split()
            if len(parts) >= 4:
                changes[path] = FileChange(before=parts[2], after=parts[3])
        return changes

    def _indexed(self, git_command: str) -> Raw:
        """Run `git_command` against an index of the whole working tree that this sandbox keeps in scratch
        between calls: `git add -A` then re-hashes only the files whose stat changed, so watching the
        workspace after every tool call stays cheap. The Dev's own staging area is never touched; an index
        the Dev removed or broke is rebuilt."""
        index = f"{self.scratch}/hf-index-{self._index_id}"
        fresh = f"rm -f {index}; git read-tree {self.commit} && git add -A ."
        refresh = "git add -A ." if self._index_commit == self.commit else fresh
        self._index_commit = self.commit
        return self._run(
            f"export GIT_INDEX_FILE={index}; {{ [ -f {index} ] && {refresh}; }} || {{ {fresh}; }} && {git_command}",
            self.spec.limits.exec_timeout_s,
            self.env,
        )

    def read_results(self) -> dict[str, str]:
        """The files test runners wrote into `results_dir` (name -> text)."""
        files = {}
        listing = self._run(f"ls -1 {self.results_dir}", 60, self.env).stdout.decode(errors="replace")
        for name in listing.split():
            result = self._run(f"cat {self.results_dir}/{shlex.quote(name)}", 120, self.env)
            files[name] = result.stdout.decode(errors="replace")
        return files

    def clear_results(self) -> None:
        self._run(f"mkdir -p {self.results_dir} && find {self.results_dir} -mindepth 1 -delete", 60, self.env)

    def reset(self, commit: str) -> None:
        """Make the workspace the history up to `commit` (a later commit brings its history in)."""
        self.commit = commit
        self._load_workspace(commit)
        self.prepare()

    def clean(self) -> None:
        """Undo changes to tracked files and remove untracked ones; ignored files (caches) stay."""
        result = self.exec(f"git checkout -q -f {self.commit} -- . && git clean -q -fd")
        if result.exit_code != 0:
            raise EnvError(f"cannot clean the workspace: {result.stderr.strip()}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
