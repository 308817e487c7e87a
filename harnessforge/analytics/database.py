"""The analytics database, `analytics/harnessforge.duckdb`: opened for writing by one process at a
time (others wait, then fail with one line) or read-only by the report and the viewer."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..atomic import disk_full
from ..errors import ArtifactError
from ..store import Store

WAIT_ENV = "HARNESSFORGE_DB_WAIT_S"  # how long to wait for another process's write (default 300 s)


def connect(
    store: Store, wait_s: float | None = None, log: Callable[[str], None] | None = None
) -> duckdb.DuckDBPyConnection:
    """The analytics database for writing. DuckDB allows one writing process per file: a second
    `distill` waits for the first, then fails with one clear line (see `_open`). A damaged file is moved
    aside, said (`log`, default stderr), and started anew: everything in it is rebuilt from the store."""
    path = store.analytics_database()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        _create(path)
    try:
        return _open(path, read_only=False, wait_s=wait_s)
    except DamagedDatabase as e:
        aside = path.with_name(f"{path.name}.damaged")
        for damaged, target in ((path, aside), (Path(f"{path}.wal"), Path(f"{aside}.wal"))):
            if damaged.exists():
                damaged.replace(target)
        (log or _stderr)(f"warning: {e}; moved to {aside.name} and rebuilt from the store's runs")
        _create(path)
        return _open(path, read_only=False, wait_s=wait_s)


def connect_read_only(store: Store, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """For readers (the report, the viewer): never creates or changes the database (a damaged one is
    rebuilt by the next `distill`)."""
    path = store.analytics_database()
    if not path.exists():
        raise ArtifactError(f"{path}: no analytics database; run `harnessforge distill` first")
    try:
        return _open(path, read_only=True, wait_s=wait_s)
    except DamagedDatabase as e:
        raise ArtifactError(f"{e}; run `harnessforge distill` to rebuild it from the store") from None


class DamagedDatabase(ArtifactError):
    """The file is not a readable DuckDB database (truncated, overwritten, a bad checksum)."""


DAMAGE = re.compile(r"not a valid DuckDB database|Could not read enough bytes|Corrupt database|checksum", re.I)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


@contextmanager
def writing(store: Store) -> Iterator[None]:
    """DuckDB says a full disk only in its message: turn it into the store's one-line error (the
    failed statement was rolled back, so the database stays as it was)."""
    try:
        yield
    except duckdb.Error as e:
        raise disk_full(store.analytics_database(), e) from None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The block's statements as one transaction: all of them or none, and one commit (a commit per
    statement is most of what a small slice build costs)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _create(path: Path) -> None:
    """A new database is initialised beside `path`, then linked in whole: a full disk cannot leave a
    half-initialised file there, which DuckDB would refuse to open ever after."""
    fresh = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        duckdb.connect(str(fresh)).close()
        os.link(fresh, path)  # not a rename: a database another process created meanwhile stays
    except FileExistsError:
        pass
    except (OSError, duckdb.Error) as e:
        raise disk_full(path, ArtifactError(f"{path}: cannot create the analytics database ({e})")) from None
    finally:
        for leftover in (fresh, Path(f"{fresh}.wal")):
            leftover.unlink(missing_ok=True)


def _open(path: Path, read_only: bool, wait_s: float | None) -> duckdb.DuckDBPyConnection:
    """Open `path`, waiting while another process holds its lock (up to `wait_s`, default
    $HARNESSFORGE_DB_WAIT_S or 300 s), then an ArtifactError naming the holder. The file is only ever
    opened through DuckDB's own locking, so concurrent runs cannot corrupt it."""
    wait_s = float(os.environ.get(WAIT_ENV, 300)) if wait_s is None else wait_s
    deadline, delay = time.monotonic() + wait_s, 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as e:
            if DAMAGE.search(str(e)):
                raise DamagedDatabase(f"{path}: the analytics database is damaged ({e})") from None
            if "lock" not in str(e).lower():
                raise disk_full(path, ArtifactError(f"{path}: cannot open the analytics database ({e})")) from None
            if time.monotonic() + delay > deadline:
                holder = re.search(r"\(PID (\d+)\)", str(e))
                who = f"process {holder[1]}" if holder else "another process"
                raise ArtifactError(
                    f"{path}: {who} is writing the analytics database (another distill?); waited {wait_s:g} s. "
                    f"Run one at a time, or wait longer with {WAIT_ENV}"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        except duckdb.Error as e:
            if DAMAGE.search(str(e)):
                raise DamagedDatabase(f"{path}: the analytics database is damaged ({e})") from None
            raise disk_full(path, ArtifactError(f"{path}: cannot open the analytics database ({e})")) from None
