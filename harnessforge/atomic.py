"""Files written whole: readers never see half a file, a full disk leaves the old one (and says so in one
line), and locks say who holds them. The store writes through these; so do exporters and the analytics."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, TypeVar

from .errors import ArtifactError

E = TypeVar("E", bound=Exception)


def no_space(e: BaseException) -> bool:
    """A full disk or quota: by its errno, or by the message alone (DuckDB's and git's errors carry no errno)."""
    code = getattr(e, "errno", None)
    return code in (errno.ENOSPC, errno.EDQUOT) or (
        code is None and any(phrase in str(e) for phrase in ("No space left on device", "Disk quota exceeded"))
    )


def disk_full(path: Path, e: E) -> E | ArtifactError:
    """A full disk (or quota) as one clear line that the CLI prints; any other error unchanged."""
    if not no_space(e):
        return e
    try:
        free = f"{shutil.disk_usage(path.parent).free // 1024} KiB free"
    except OSError:
        free = "no free space"
    return ArtifactError(f"{path}: no space left on the device ({free}); nothing was written. Free space and re-run")


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same directory + rename: readers never see half a file, and a
    failed write (a full disk) leaves the old file as it was and no temp file behind."""
    write_together({path: data})


def write_together(files: dict[Path, bytes]) -> None:
    """Every file written to a temp beside it first, then all renamed into place: a failure while writing (a full
    disk) leaves every old file as it was and no temp behind, so readers see the old generation or the new one,
    never half of each (renames need no space)."""
    temps: dict[Path, str] = {}
    try:
        for path, data in files.items():
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, temps[path] = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # named by the artifact's path, not the temp file's
                raise disk_full(path, type(e)(e.errno, e.strerror, str(path))) from None
        for path, temp in temps.items():
            try:
                os.replace(temp, path)
            except OSError as e:  # named by the artifact's path, not the temp file's
                raise disk_full(path, type(e)(e.errno, e.strerror, str(path))) from None
    finally:
        for temp in temps.values():
            Path(temp).unlink(missing_ok=True)


@contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[None]:
    """An exclusive lock on `path` (created with its folder) for the block: one process or thread at a
    time, across Dagster steps and parallel chains; the kernel drops it if the holder dies. The holder writes
    its pid and start time into the file; `wait=False`: a held lock is an ArtifactError saying who holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise ArtifactError(f"{path} is held by {holder}") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()} since {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC\n")
        lock.flush()
        yield


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temp path beside `path` for writers that want a file name (pyarrow, datasets): renamed over
    `path` when the block succeeds, removed when it fails, so `path` is never half written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
    except OSError as e:
        raise disk_full(path, e) from None
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise disk_full(path, e) from None
        raise
