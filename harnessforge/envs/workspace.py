"""The working copy an agent or a test run sees: a repository holding history only up to one commit.

A checkout of the store's full clone would let `git log --all` read the answer from the future. So
each workspace is a fresh `git init` given one pack of exactly the objects reachable from its
commit: no later commit, no tags, no remotes, no reflog naming the host.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ..errors import RepoError

SANDBOX_UID = 1000
SANDBOX_USER = "hf"
WORKSPACE = "/workspace"
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}
_IDENTITY = [("user.name", "HarnessForge Dev"), ("user.email", "dev@harnessforge.invalid")]


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> None:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=_GIT_ENV, input=stdin)
    if proc.returncode != 0:
        raise RepoError(f"git {' '.join(args[:2])} failed in workspace: {proc.stderr.decode(errors='replace')[-500:]}")


def make_workspace(source: Path, commit: str, dest: Path) -> Path:
    """Create at `dest` a repo whose only branch `main` is `commit`, with nothing after it."""
    dest.mkdir(parents=True, exist_ok=True)
    _git(dest, "init", "-q", "-b", "main")
    _copy_objects(Path(source), commit, dest)
    _git(dest, "update-ref", "refs/heads/main", commit)
    _git(dest, "reset", "-q", "--hard")
    for key, value in _IDENTITY:
        _git(dest, "config", key, value)
    _git(dest, "config", "core.fileMode", "false")
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)  # the reflog names the host's clone
    return dest


def _copy_objects(source: Path, commit: str, dest: Path) -> None:
    """One pack of exactly the objects reachable from `commit`. On one filesystem the source writes it straight
    into the new repo (nothing re-indexed); git writes the pack beside the source's objects and renames it, so
    across filesystems (a store on a data disk, a tmpfs /tmp) or from a read-only store it is streamed and the
    new repo indexes it."""
    revs = f"{commit}\n".encode()
    if _same_filesystem(source, dest) and os.access(source, os.W_OK):
        pack = dest / ".git" / "objects" / "pack" / "pack"
        _git(source, "pack-objects", "-q", "--revs", "--delta-base-offset", "--use-bitmap-index", str(pack), stdin=revs)
        return
    with tempfile.TemporaryFile() as errors:
        producer = subprocess.Popen(
            ["git", "pack-objects", "-q", "--revs", "--stdout", "--delta-base-offset"],
            cwd=source,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=_GIT_ENV,
        )
        producer.stdin.write(revs)
        producer.stdin.close()
        consumer = subprocess.run(
            ["git", "index-pack", "--stdin"], cwd=dest, stdin=producer.stdout, capture_output=True, env=_GIT_ENV
        )
        producer.stdout.close()
        if producer.wait() != 0 or consumer.returncode != 0:
            errors.seek(0)
            said = (errors.read() + consumer.stderr).decode(errors="replace")[-500:]
            raise RepoError(f"git pack-objects | index-pack failed in workspace: {said}")


def _same_filesystem(source: Path, dest: Path) -> bool:
    return os.stat(source).st_dev == os.stat(dest).st_dev


def workspace_tar(source: Path, commit: str, prefix: str = WORKSPACE.strip("/")) -> bytes:
    """The workspace for `commit` as a tar (owned by the sandbox user), for `put_archive`."""
    with tempfile.TemporaryDirectory(prefix="hf-ws-") as tmp:
        root = make_workspace(source, commit, Path(tmp) / "ws")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root, arcname=prefix, filter=_owned_by_sandbox_user)
        return buf.getvalue()


def _owned_by_sandbox_user(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = SANDBOX_UID
    info.uname = info.gname = SANDBOX_USER
    return info


def file_tar(files: dict[str, bytes], mode: int = 0o644, uid: int = SANDBOX_UID) -> bytes:
    """A tar of `path -> content` (paths relative to the extraction directory)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.uid, info.gid = len(data), mode, uid, uid
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
