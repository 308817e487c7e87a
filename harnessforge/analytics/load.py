"""Trajectories into Parquet and DuckDB, incrementally.

A run's `trajectory.jsonl` files (one per milestone) become one Parquet file,
`analytics/events/<key>/<run_id>.parquet` (written with pyarrow); `raw_events` in
`analytics/harnessforge.duckdb` is a view over those files (the models read them, nothing is copied).
A run is (re)loaded only when one of its files appeared, vanished or changed size or mtime since
the last load; a run that vanished is removed. Runs' `metadata.json` and milestones'
`summary.json` / `test_results.json` go to `raw_runs` and `raw_milestones`, rebuilt whole each
time (they are small). Parsing the events is `events.read_events`.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ArtifactError
from ..store import RUN_METADATA, RunFiles, Store, atomic_file
from .database import connect
from .events import ALL_COLUMNS, BadLine, read_events
from .sqlmodels import literal

# A run's Parquet file holds its test runs first, then its other tool calls, then everything else
# (each in milestone-run order: the sort is stable), in row groups of ROW_GROUP rows: a model
# reading only tool calls or test runs skips the other row groups by their statistics.
CLUSTER = [("is_test_run", "descending"), ("is_tool", "descending")]
ROW_GROUP = 122_880  # DuckDB's own row group size
LOADS = ("path", "size", "mtime_ns", "events", "bad_lines")

Sources = dict[str, tuple[int, int]]  # trajectory file (relative to the store) -> (size, mtime)


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)  # sources (re)loaded this time
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    events: int = 0  # rows loaded this time
    bad_lines: list[BadLine] = field(default_factory=list)


def load(store: Store, con: duckdb.DuckDBPyConnection | None = None, progress=None) -> LoadReport:
    """Bring `raw_events`, `raw_runs` and `raw_milestones` up to date with the store's trajectories.
    `progress(done, total)` is called per changed source."""
    own = con is None
    con = con or connect(store)
    try:
        return _load(store, con, progress)
    finally:
        if own:
            con.close()


def _load(store: Store, con: duckdb.DuckDBPyConnection, progress) -> LoadReport:
    _ensure_tables(con)
    current: dict[str, Sources] = defaultdict(dict)  # run dir -> its sources now
    for files in store.milestone_runs():
        status = files.trajectory.stat()
        source = store.relative(files.trajectory)
        current[_run_of(source)][source] = (status.st_size, status.st_mtime_ns)
    known: dict[str, Sources] = defaultdict(dict)  # run dir -> its sources at the last load
    for path, size, mtime in con.execute("SELECT path, size, mtime_ns FROM hf_loads").fetchall():
        known[_run_of(path)][path] = (size, mtime)
    report = LoadReport()
    for run in sorted(set(known) - set(current)):
        _forget(con, store, run)
        report.removed += sorted(known[run])
    changed = [run for run in sorted(current) if current[run] != known.get(run)]

    def convert(run: str) -> tuple[str, pa.Table, list[BadLine]]:
        """One run's files -> one Parquet file (runs convert in parallel: DuckDB and pyarrow release the GIL)."""
        table, bad = read_events(store.root, sorted(current[run]))
        with atomic_file(_parquet_path(store, run)) as partial:  # never half a Parquet file at its final path
            pq.write_table(table.sort_by(CLUSTER), partial, row_group_size=ROW_GROUP)
        return run, table.select(["source"]), bad

    # one more worker than cores: a run's Python-side steps overlap the others' parsing
    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) + 1) as pool:
        for done, (run, source_column, bad) in enumerate(pool.map(convert, changed), 1):
            _record(con, run, current[run], source_column, bad)
            before = known.get(run, {})
            report.loaded += [source for source in sorted(current[run]) if before.get(source) != current[run][source]]
            report.removed += sorted(set(before) - set(current[run]))
            report.bad_lines += bad
            report.events += source_column.num_rows
            if progress:
                progress(done, len(changed))
    report.unchanged = sum(len(sources) for sources in current.values()) - len(report.loaded)
    _events_view(store, con)
    _load_run_files(store, con)
    return report


def _record(con: duckdb.DuckDBPyConnection, run: str, sources: Sources, source_column: pa.Table, bad: list) -> None:
    """`hf_loads`: what each of the run's files was when loaded, with its event and bad-line counts."""
    con.execute("DELETE FROM hf_loads WHERE starts_with(path, ?)", [run + "/"])
    counts = pc.value_counts(source_column.column("source")).to_pylist()
    events = {count["values"]: count["counts"] for count in counts}
    bad_lines = Counter(line.path for line in bad)
    rows = [
        dict(zip(LOADS, (source, size, mtime, events.get(source, 0), bad_lines[source]), strict=True))
        for source, (size, mtime) in sources.items()
    ]
    con.register("_loads", pa.Table.from_pylist(rows))
    con.execute("INSERT INTO hf_loads SELECT * FROM _loads")  # one statement: executemany is per row
    con.unregister("_loads")


def _events_view(store: Store, con: duckdb.DuckDBPyConnection) -> None:
    """`raw_events`: a view over the runs' Parquet files (no copy; the models read them directly). The
    path is absolute, so the view works from any working directory (the report reads it elsewhere). A
    view takes no parameters: the path is written in as a literal."""
    files = store.analytics_events_dir().resolve()
    if any(files.glob("*/*.parquet")):
        source = f"read_parquet({literal(str(files / '*' / '*.parquet'))})"
    else:  # nothing loaded yet: an empty relation with the right columns
        typed = ", ".join(f'NULL::{kind} AS "{name}"' for name, kind in ALL_COLUMNS.items())
        source = f"(SELECT NULL::VARCHAR AS source, {typed} WHERE false)"
    con.execute(f"CREATE OR REPLACE VIEW raw_events AS SELECT * FROM {source}")


def _run_of(source: str) -> str:
    """trajectories/<key>/<run_id>/<mid>/trajectory.jsonl -> trajectories/<key>/<run_id>"""
    return source.rsplit("/", 2)[0]


def _parquet_path(store: Store, run: str) -> Path:
    _, key, run_id = run.split("/")
    return store.analytics_events_file(key, run_id)


def _forget(con: duckdb.DuckDBPyConnection, store: Store, run: str) -> None:
    con.execute("DELETE FROM hf_loads WHERE starts_with(path, ?)", [run + "/"])
    _parquet_path(store, run).unlink(missing_ok=True)


def _ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_loads (path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, "
        "events BIGINT, bad_lines INTEGER)"
    )


RUN_SCHEMA = pa.schema(
    [
        (name, pa.string())
        for name in ("run_id", "repo", "agent", "model", "harness_version", "rules_hash", "mode", "harness_profile")
    ]
    + [("synthetic", pa.bool_()), ("config", pa.string())]
)
MILESTONE_SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("repo", "run_id", "milestone_id", "status")]
    + [("turns", pa.int32()), ("hints_released", pa.list_(pa.int32()))]
    + [(name, pa.float64()) for name in ("cost_usd", "wall_s")]
    + [(name, pa.string()) for name in ("reset_to", "carried_from")]
    + [("synthetic", pa.bool_())]
    + [(name, pa.list_(pa.string())) for name in ("ground_truth_files", "core_files", "candidate_files")]
    + [(name, pa.string()) for name in ("final_diff", "ground_truth")]
)


def _load_run_files(store: Store, con: duckdb.DuckDBPyConnection) -> None:
    """Run metadata and per-milestone outcomes: small JSON files, rebuilt whole."""
    runs, milestones = [], []
    finished: dict[Path, list[RunFiles]] = defaultdict(list)
    for files in store.milestone_runs(finished=True):
        finished[files.run_dir].append(files)
    for run_dir in store.run_dirs():
        metadata = _json(run_dir / RUN_METADATA)
        runs.append(
            {
                **{name: metadata.get(name) for name in RUN_SCHEMA.names},
                "mode": metadata.get("mode") or "standard",  # runs from before modes
                "harness_profile": metadata.get("harness_profile") or "V0",
                "config": json.dumps(metadata.get("config")),
            }
        )
        milestones += [_milestone_row(files, metadata.get("repo")) for files in finished[run_dir]]
    for name, rows, schema in (("raw_runs", runs, RUN_SCHEMA), ("raw_milestones", milestones, MILESTONE_SCHEMA)):
        con.register("_rows", pa.Table.from_pylist(rows, schema=schema))
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _rows")
        con.unregister("_rows")


def _milestone_row(files: RunFiles, repo: str | None) -> dict:
    """One finished milestone run: its summary, what its grading compared, and both diffs."""
    summary = _json(files.summary)
    grading = _json(files.test_results) if files.test_results.exists() else {}
    return {
        **{name: summary.get(name) for name in MILESTONE_SCHEMA.names},
        "repo": repo,
        "synthetic": summary.get("synthetic", False),
        "ground_truth_files": grading.get("ground_truth_files", []),
        "core_files": grading.get("core_files", []),
        "candidate_files": grading.get("candidate_files", []),
        "final_diff": _text(files.final_diff),
        "ground_truth": _text(files.ground_truth),
    }


def _json(path: Path) -> dict:
    """A run's small JSON file; a damaged one stops the load with one line naming it."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: not valid JSON ({e}); repair or remove the run") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path}: expected a JSON object, got {type(data).__name__}; repair or remove the run")
    return data


def _text(path: Path) -> str:
    return path.read_bytes().decode(errors="replace") if path.exists() else ""
