"""`DockerSandbox`: one long-lived, network-less, resource-limited container per milestone run.

Commands run as the unprivileged sandbox user with every capability dropped. `exec` has no
timeout in the Docker API, so the limit is enforced inside (`timeout -k`) and, should that fail,
by killing the container. An engine that stops answering, or a container that is gone (an engine
restart stops it), raises `SandboxLost`: the caller retries in a fresh sandbox, never reads it as
the command's own failure.
"""

from __future__ import annotations

import shlex
import struct
import subprocess
import threading
import time
import uuid

import docker
import requests
from docker.errors import APIError, DockerException

from ..errors import EnvError, SandboxLost
from .engine import LABEL, connect
from .sandbox import Raw, Sandbox, SandboxSpec
from .workspace import SANDBOX_UID, WORKSPACE, file_tar, workspace_tar

KILL_GRACE_S = 5  # `timeout -k`: seconds between TERM and KILL
# `timeout` leads its own process group; once it returns, whatever the command left running in
# that group (background jobs, a fork bomb) is killed: no process outlives its tool call.
# `kill` is a shell builtin, so this works even when the pids limit forbids any new process.
WRAPPER = 'timeout -k "$1" "$2" bash -c "$3" & pid=$!; wait $pid; rc=$?; kill -KILL -- -$pid 2>/dev/null; exit $rc'
WATCHDOG_S = 15  # beyond the kill grace, when we stop trusting the container and kill it
# What an engine that went away raises: API errors (a stopped or removed container, an unknown exec
# instance after a restart) and connection errors (nothing listens on the socket).
ENGINE_ERRORS = (DockerException, requests.RequestException)


def _why(error: BaseException) -> str:
    """An engine error as one short line (requests' messages nest whole exception reprs)."""
    text = (str(error).strip().splitlines() or [""])[0][:200]
    return f"{error.__class__.__name__}: {text}" if text else error.__class__.__name__


class DockerSandbox(Sandbox):
    workdir = WORKSPACE

    def __init__(self, spec: SandboxSpec, image: str, client: docker.DockerClient | None = None):
        super().__init__(spec)
        self.client = client or connect()
        self.image = image
        lim = spec.limits
        try:
            self.container = self.client.containers.run(
                image,
                ["sleep", "infinity"],
                detach=True,
                network_mode="none",
                mem_limit=lim.memory_bytes,
                memswap_limit=lim.memory_bytes,  # equal: no swap, so a memory hog is OOM-killed
                nano_cpus=int(lim.cpus * 1e9),
                pids_limit=lim.pids,
                init=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                shm_size="256m",
                working_dir=WORKSPACE,
                labels={LABEL: "sandbox", **spec.labels},
                volumes={m.source: {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in spec.mounts},
            )
        except docker.errors.ImageNotFound:
            raise EnvError(f"image {image} not found: run `harnessforge env build`", "sandbox_error") from None
        except APIError as e:
            raise EnvError(f"cannot start a container from {image}: {e.explanation}", "sandbox_error") from None
        except ENGINE_ERRORS as e:
            raise SandboxLost(f"the Docker engine did not answer when starting a sandbox ({_why(e)})") from None
        self.api = self.client.api
        self._loaded = False
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # ---- backend primitives -------------------------------------------------------------------
    def _run(self, cmd: str, timeout: int, env: dict[str, str]) -> Raw:
        argv = ["bash", "-c", WRAPPER, "hf-exec", str(KILL_GRACE_S), str(timeout), cmd]
        try:
            created = self.api.exec_create(
                self.container.id, argv, user=f"{SANDBOX_UID}:{SANDBOX_UID}", workdir=WORKSPACE, environment=env
            )
        except ENGINE_ERRORS as e:
            raise self._lost(e) from None
        out: dict = {}
        oom_before = self._oom_kills()
        start = time.monotonic()

        def stream() -> None:
            try:
                out["res"] = exec_output(self.api, created["Id"])
            except Exception as e:  # the engine went away mid-command (HTTP, socket or protocol error)
                out["error"] = e

        worker = threading.Thread(target=stream, daemon=True)
        worker.start()
        worker.join(timeout + KILL_GRACE_S + WATCHDOG_S)
        elapsed = time.monotonic() - start
        if worker.is_alive():  # `timeout` itself did not end it: the container cannot be trusted
            self._engine(self.container.kill)
            return Raw(137, b"", b"killed: command outlived its timeout", elapsed, timed_out=True)
        stdout, stderr = out["res"] if out.get("res") else (b"", b"")
        code = self._engine(lambda: self.api.exec_inspect(created["Id"])["ExitCode"])
        if "error" in out or (code is None or code >= 128) and not self._running():
            raise self._lost(out.get("error"))  # killed with its container (an engine stop), not by itself
        code = -1 if code is None else code
        timed_out = code in (124, 137) and elapsed >= timeout - 0.05
        oom = code == 137 and not timed_out and self._oom_killed(oom_before)
        return Raw(code, stdout or b"", stderr or b"", elapsed, timed_out=timed_out, oom_killed=oom)

    def _engine(self, call):
        """`call()` against the engine; its going away is `SandboxLost`."""
        try:
            return call()
        except ENGINE_ERRORS as e:
            raise self._lost(e) from None

    def _running(self) -> bool:
        self._engine(self.container.reload)
        return self.container.status == "running"

    def _lost(self, error: BaseException | None) -> SandboxLost:
        cause = f" ({_why(error)})" if error is not None else ""
        return SandboxLost(f"sandbox container {self.container.short_id} of {self.image} was lost{cause}")

    def _oom_kills(self) -> int | None:
        """The kernel's count of OOM kills in this container's memory cgroup (v1 or v2), if readable.

        Counting before and after each command tells its own OOM kill from an earlier one.
        """
        cid = self.container.id
        for path in (
            f"/sys/fs/cgroup/memory/docker/{cid}/memory.oom_control",  # v1, cgroupfs driver
            f"/sys/fs/cgroup/docker/{cid}/memory.events",  # v2, cgroupfs driver
            f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/memory.events",  # v2, systemd driver
        ):
            try:
                with open(path) as f:
                    for line in f:
                        if line.startswith("oom_kill "):
                            return int(line.split()[1])
            except OSError:
                continue
        return None

    def _oom_killed(self, before: int | None) -> bool:
        after = self._oom_kills()
        if before is not None and after is not None:
            return after > before
        try:  # a remote engine: its sticky flag is the best there is
            self.container.reload()
            return bool(self.container.attrs["State"].get("OOMKilled"))
        except ENGINE_ERRORS:
            return False

    def _put_file(self, path: str, data: bytes) -> None:
        tmp = f"/tmp/hf-upload-{uuid.uuid4().hex}"
        self._engine(lambda: self.container.put_archive("/", file_tar({tmp: data}, mode=0o600)))
        # Moved into place by the sandbox user, so file permissions and symlinks are respected.
        quoted = shlex.quote(path)
        result = self._run(
            f'mkdir -p -- "$(dirname -- {quoted})" && cat {tmp} > {quoted}; rc=$?; rm -f {tmp}; exit $rc', 60, self.env
        )
        if result.exit_code != 0:
            raise EnvError(f"cannot write {path}: {result.stderr.decode(errors='replace').strip()}")

    def _load_workspace(self, commit: str) -> None:
        data = workspace_tar(self.spec.source, commit)
        if self._loaded:  # a fresh container's workspace is already empty
            result = self._run(f"find {WORKSPACE} -mindepth 1 -delete", 120, self.env)
            if result.exit_code != 0:
                raise EnvError(
                    f"cannot empty the workspace: {result.stderr.decode(errors='replace')}", "checkout_failed"
                )
        self._engine(lambda: self.container.put_archive("/", data))
        self._loaded = True

    def spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        """A long-running program in the container (a scaffold's CLI), as the sandbox user in the workspace,
        its stdin and stdout piped to us (`docker exec -i`): the one way a process talks to us."""
        flags = ["-i", "-u", f"{SANDBOX_UID}:{SANDBOX_UID}", "-w", WORKSPACE]
        for name, value in {**self.env, **env}.items():
            flags += ["-e", f"{name}={value}"]
        return subprocess.Popen(
            ["docker", "exec", *flags, self.container.id, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def close(self) -> None:
        try:
            self.container.remove(force=True)
        except ENGINE_ERRORS:  # already gone, or the engine is away: `Environment.recover` removes it later
            pass


def exec_output(api, exec_id: str) -> tuple[bytes, bytes]:
    """An exec's (stdout, stderr), as `api.exec_start(exec_id, demux=True)` but read through http.client's buffer:
    docker-py reads the socket under it, so output that came with the upgrade response's headers was skipped and the
    frames misaligned ("41 is not a valid stream", docker/docker-py#3160): a command that ran seemed a lost sandbox."""
    headers = {"Connection": "Upgrade", "Upgrade": "tcp"}
    response = api._post_json(
        api._url("/exec/{0}/start", exec_id), headers=headers, data={"Tty": False, "Detach": False}, stream=True
    )
    try:
        api._disable_socket_timeout(api._get_raw_response_socket(response))  # (a long command: no read timeout)
        buffered = response.raw._fp.fp
        out, err = bytearray(), bytearray()
        while len(header := buffered.read(8)) == 8:
            stream, size = struct.unpack(">BxxxL", header)
            (err if stream == 2 else out).extend(buffered.read(size))
        return bytes(out), bytes(err)
    finally:
        response.close()
