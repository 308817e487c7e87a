"""`LocalSandbox`: the no-Docker backend — a workspace in a temp dir, commands in bubblewrap.

bubblewrap gives a private network namespace (loopback up), a read-only view of the host with only
the workspace and a scratch dir writable, a private /tmp, hidden home directories, no capabilities
and an empty environment. Without bubblewrap, `unshare -n` still cuts the network but not the
filesystem; `isolation` says which one ran. Memory and process-count limits need cgroups and are
left to the Docker backend. A timeout kills the command's whole process group; with bubblewrap's
own pid namespace, nothing a command started survives it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..errors import EnvError
from .sandbox import Raw, Sandbox, SandboxSpec
from .workspace import make_workspace

PLUGINS = Path(__file__).parent / "plugins"
# Our package: pytest loads its `hf_results` entry point (an editable install points into the checkout), so a
# checkout under a hidden directory is bound back read-only: the package only, never the store beside it.
PACKAGE = Path(__file__).resolve().parents[1]

TIMEOUT_EXIT = 124
# Coarse per-process rlimits (util-linux `prlimit`): no core dumps, no file over 2 GiB. Address-space
# limits break JVMs and Node, so memory is left to cgroups (the Docker backend).
RLIMITS = ["--core=0", f"--fsize={2 << 30}"]
# Replaced by empty dirs inside (homes hold tokens and keys; /tmp is private); a toolchain installed
# below one of them (pyenv, a venv in /tmp) is bound back read-only.
MASKED = ("/tmp", "/root", "/home")


# Not bound into the sandbox at all: bubblewrap makes /dev and /proc, the MASKED dirs and /run are empty
# tmpfs inside, and a container engine's state holds mounts that come and go while containers start and stop.
LEFT_OUT = ("/dev", "/proc", *MASKED, "/run", "/var/lib/docker", "/var/lib/containerd")


def root_binds(left_out: tuple[str, ...] = LEFT_OUT) -> list[str]:
    """bubblewrap arguments that rebuild / read-only entry by entry, without `left_out`. A recursive bind of
    the whole / would take in the engine's container mounts, and one vanishing while bubblewrap remounts
    the bind read-only fails the sandbox's start ("Unable to apply mount flags"): a sporadic no_tests_ran."""
    args: list[str] = []

    def walk(directory: str) -> None:
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if path in left_out:
                continue
            if os.path.islink(path):
                args.extend(["--symlink", os.readlink(path), path])
            elif os.path.isdir(path) and any(other.startswith(path + "/") for other in left_out):
                args.extend(["--dir", path])
                walk(path)
            else:
                args.extend(["--ro-bind", path, path])

    walk("/")
    return args


def isolation_available() -> str | None:
    if shutil.which("bwrap"):
        return "bwrap"
    if shutil.which("unshare"):
        return "unshare"
    return None


class LocalSandbox(Sandbox):
    def __init__(self, spec: SandboxSpec, isolation: str | None = None, masked: tuple[str, ...] = MASKED):
        """`masked`: the host directories that are empty inside (besides `spec.hidden`)."""
        super().__init__(spec)
        self.masked = masked
        self.isolation = isolation or isolation_available()
        if self.isolation is None:
            raise EnvError("neither bubblewrap nor unshare is installed: no network isolation here", "sandbox_error")
        self.root = Path(tempfile.mkdtemp(prefix="hf-sandbox-"))
        self.workdir = str(self.root / "workspace")
        self.scratch = str(self.root / "scratch")
        self.results_dir = f"{self.scratch}/out"
        self.plugin_dir = str(PLUGINS)
        (self.root / "scratch" / "home").mkdir(parents=True)
        default_path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        env = {"PATH": default_path, **self.env, "HOME": f"{self.scratch}/home", "TMPDIR": self.scratch}
        self.env = {name: value.replace("{workspace}", self.workdir) for name, value in env.items()}
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _argv(self, cmd: str, env: dict[str, str]) -> list[str]:
        limits = ["prlimit", *RLIMITS, "--"] if shutil.which("prlimit") else []
        return limits + self._isolated(cmd, env)

    def _isolated(self, cmd: str, env: dict[str, str]) -> list[str]:
        if self.isolation == "bwrap":
            argv = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
            left_out = tuple(dict.fromkeys((*LEFT_OUT, *self.masked)))
            argv += ["--new-session", "--cap-drop", "ALL", *root_binds(left_out), "--dev", "/dev", "--proc", "/proc"]
            for directory in (*self.masked, "/run", *self._hidden()):
                argv += ["--tmpfs", directory]
            argv += ["--tmpfs", "/var/run"] if not os.path.islink("/var/run") else []
            for directory in self._toolchain_dirs(env):  # an interpreter installed under a hidden home stays usable
                argv += ["--ro-bind", directory, directory]
            argv += ["--bind", str(self.root), str(self.root), "--chdir", self.workdir, "--clearenv"]
            for name, value in env.items():
                argv += ["--setenv", name, value]
            return [*argv, "--", "bash", "-c", cmd]
        prefix = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
        return [*prefix, "bash", "-c", f"ip link set lo up 2>/dev/null; cd {self.workdir} && {cmd}"]

    def _hidden(self) -> list[str]:
        """`spec.hidden`'s directories that the sandbox would otherwise show (not under a masked directory)."""
        paths = {os.path.realpath(path) for path in self.spec.hidden}
        paths = {path for path in paths if os.path.isdir(path) and not _under(path, self.masked)}
        return sorted(path for path in paths if not _under(path, paths - {path}))  # the store holds the clone

    def _toolchain_dirs(self, env: dict[str, str]) -> list[str]:
        """The interpreter, PATH entries, our package and its pytest plugin, when a hidden directory holds them."""
        dirs = {os.path.realpath(path) for path in (sys.prefix, sys.base_prefix, PACKAGE, self.plugin_dir)}
        dirs |= {os.path.realpath(path) for path in env.get("PATH", "").split(":") if path}
        hidden = (*self.masked, *self._hidden())
        return sorted(directory for directory in dirs if _under(directory, hidden) and os.path.isdir(directory))

    def _run(self, cmd: str, timeout: int, env: dict[str, str]) -> Raw:
        start = time.monotonic()
        proc = subprocess.Popen(
            self._argv(cmd, env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            env=env if self.isolation != "bwrap" else {"PATH": "/usr/bin:/bin"},
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            return Raw(proc.returncode, out, err, time.monotonic() - start)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return Raw(TIMEOUT_EXIT, out, err, time.monotonic() - start, timed_out=True)

    def _inside(self, path: str) -> Path:
        """`path` resolved through symlinks; refused unless it stays in the workspace or scratch dir."""
        real = Path(os.path.realpath(path))
        if not any(
            real == Path(directory) or Path(directory) in real.parents for directory in (self.workdir, self.scratch)
        ):
            raise EnvError(f"path {path} resolves outside the sandbox ({real})")
        return real

    def _put_file(self, path: str, data: bytes) -> None:
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def _load_workspace(self, commit: str) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        make_workspace(self.spec.source, commit, Path(self.workdir))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _under(path: str, directories) -> bool:
    return any(path == directory or path.startswith(directory.rstrip("/") + "/") for directory in directories)
