"""Concurrent distill runs against one DuckDB file: the second waits for the first, or fails with one
clear line after its wait; the database is never damaged."""

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from harnessforge.store import Store
from tests.test_analytics import craft


@pytest.fixture
def crafted(tmp_path) -> Store:
    store = Store(tmp_path / "store")
    craft(store)
    return store


def hold_lock(store: Store, seconds: float) -> subprocess.Popen:
    """Another process writing the analytics database for `seconds` (returns once it holds the lock)."""
    store.analytics_database().parent.mkdir(parents=True, exist_ok=True)
    code = (
        f"import duckdb, time; c = duckdb.connect({str(store.analytics_database())!r}); "
        f"print('locked', flush=True); time.sleep({seconds})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def models_readable(store: Store) -> int:
    with duckdb.connect(str(store.analytics_database()), read_only=True) as con:
        return con.execute("SELECT count(*) FROM milestone_summary").fetchone()[0]


def test_a_second_distill_waits_for_the_first_writer(crafted, run_cli):
    holder = hold_lock(crafted, 3)
    proc = run_cli("distill", store=crafted.root)  # starts while the lock is held
    holder.wait()
    assert proc.returncode == 0, proc.stderr
    assert "loaded 8 trajectories" in proc.stdout
    assert models_readable(crafted) == 8


def test_after_its_wait_a_distill_fails_with_one_line_and_the_database_stays_whole(crafted, run_cli):
    assert run_cli("distill", store=crafted.root).returncode == 0
    holder = hold_lock(crafted, 30)
    try:
        proc = run_cli("distill", store=crafted.root, env={"HARNESSFORGE_DB_WAIT_S": "0.5"})
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert f"process {holder.pid} is writing the analytics database (another distill?); waited 0.5 s" in line
    assert "HARNESSFORGE_DB_WAIT_S" in line and "Traceback" not in proc.stderr
    assert models_readable(crafted) == 8  # the killed writer and the refused one left it whole
    assert run_cli("distill", store=crafted.root).returncode == 0


def test_two_distills_at_once_both_finish(crafted):
    cmd = [str(Path(sys.executable).parent / "harnessforge"), "--store", str(crafted.root), "distill"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [process.communicate(timeout=300) for process in procs]
    assert [process.returncode for process in procs] == [0, 0], results
    assert models_readable(crafted) == 8
    assert (crafted.root / "distilled" / "manifest.json").exists()
