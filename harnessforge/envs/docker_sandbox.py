"""`DockerSandbox`: one long-lived, network-less, resource-limited container per milestone run.

Commands run as the unprivileged sandbox user with every capability dropped. `exec` has no
timeout in the Docker API, so the limit is enforced inside (`timeout -k`) and, should that fail,
by killing the container.
"""

from __future__ import annotations

import shlex
import threading
import time
import uuid

import docker
from docker.errors import APIError, NotFound

from ..errors import EnvError
from .engine import LABEL, connect
from .sandbox import Raw, Sandbox, SandboxSpec
from .workspace import SANDBOX_UID, WORKSPACE, file_tar, workspace_tar

KILL_GRACE_S = 5  # `timeout -k`: seconds between TERM and KILL
# `timeout` leads its own process group; once it returns, whatever the command left running in
# that group (background jobs, a fork bomb) is killed: no process outlives its tool call.
# `kill` is a shell builtin, so this works even when the pids limit forbids any new process.
WRAPPER = 'timeout -k "$1" "$2" bash -c "$3" & pid=$!; wait $pid; rc=$?; kill -KILL -- -$pid 2>/dev/null; exit $rc'
WATCHDOG_S = 15  # beyond the kill grace, when we stop trusting the container and kill it


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
            )
        except docker.errors.ImageNotFound:
            raise EnvError(f"image {image} not found: run `harnessforge env build`", "sandbox_error") from None
        except APIError as e:
            raise EnvError(f"cannot start a container from {image}: {e.explanation}", "sandbox_error") from None
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
            ex = self.api.exec_create(
                self.container.id, argv, user=f"{SANDBOX_UID}:{SANDBOX_UID}", workdir=WORKSPACE, environment=env
            )
        except (APIError, NotFound) as e:
            raise EnvError(f"sandbox container is gone: {e}", "sandbox_error") from None
        out: dict = {}
        oom_before = self._oom_kills()
        start = time.monotonic()
        worker = threading.Thread(target=lambda: out.update(res=self.api.exec_start(ex["Id"], demux=True)), daemon=True)
        worker.start()
        worker.join(timeout + KILL_GRACE_S + WATCHDOG_S)
        elapsed = time.monotonic() - start
        if worker.is_alive():  # `timeout` itself did not end it: the container cannot be trusted
            self.container.kill()
            return Raw(137, b"", b"killed: command outlived its timeout", elapsed, timed_out=True)
        stdout, stderr = out["res"] if out.get("res") else (b"", b"")
        code = self.api.exec_inspect(ex["Id"])["ExitCode"]
        code = -1 if code is None else code
        timed_out = code in (124, 137) and elapsed >= timeout - 0.05
        oom = code == 137 and not timed_out and self._oom_killed(oom_before)
        return Raw(code, stdout or b"", stderr or b"", elapsed, timed_out=timed_out, oom_killed=oom)

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
        except APIError:
            return False

    def _put_file(self, path: str, data: bytes) -> None:
        tmp = f"/tmp/hf-upload-{uuid.uuid4().hex}"
        self.container.put_archive("/", file_tar({tmp: data}, mode=0o600))
        # Moved into place by the sandbox user, so file permissions and symlinks are respected.
        q = shlex.quote(path)
        r = self._run(f'mkdir -p -- "$(dirname -- {q})" && cat {tmp} > {q}; rc=$?; rm -f {tmp}; exit $rc', 60, self.env)
        if r.exit_code != 0:
            raise EnvError(f"cannot write {path}: {r.stderr.decode(errors='replace').strip()}")

    def _load_workspace(self, commit: str) -> None:
        data = workspace_tar(self.spec.source, commit)
        if self._loaded:  # a fresh container's workspace is already empty
            r = self._run(f"find {WORKSPACE} -mindepth 1 -delete", 120, self.env)
            if r.exit_code != 0:
                raise EnvError(f"cannot empty the workspace: {r.stderr.decode(errors='replace')}", "checkout_failed")
        self.container.put_archive("/", data)
        self._loaded = True

    def close(self) -> None:
        try:
            self.container.remove(force=True)
        except (APIError, NotFound):
            pass
