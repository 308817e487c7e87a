"""Trajectories into Parquet and DuckDB, incrementally.

Each milestone's `trajectory.jsonl` becomes one Parquet file (`analytics/events/<key>/<run_id>/<mid>.parquet`,
written with pyarrow) and its rows in the `raw_events` table of `analytics/harnessforge.duckdb`.
A source is (re)loaded only when its size or mtime changed since the last load; one that vanished
is removed. Runs' `metadata.json` and milestones' `summary.json` / `test_results.json` go to
`raw_runs` and `raw_milestones`, rebuilt whole each time (they are small).

Parsing is DuckDB's `read_json` with a fixed schema (fast, multi-threaded). A file it rejects is
read again line by line: each bad line is reported with its file and line number and left out, and
the rest loads.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from ..models.common import first_error
from ..models.trajectory import Event
from ..store import Store

# DuckDB types of an Event line; heterogeneous nested values (tool arguments) stay JSON.
EVENT_COLUMNS = {
    "run_id": "VARCHAR",
    "repo": "VARCHAR",
    "milestone_id": "VARCHAR",
    "seq": "INTEGER",
    "turn_id": "INTEGER",
    "ts": "TIMESTAMPTZ",
    "role": "VARCHAR",
    "action": "STRUCT(type VARCHAR, content VARCHAR, args JSON)",
    "call_id": "VARCHAR",
    "observation": "VARCHAR",
    "observation_chars": "INTEGER",
    "mentor_hint": "VARCHAR",
    "hint_level": "INTEGER",
    "ok": "BOOLEAN",
    "files_touched": "VARCHAR[]",
    "test_status": "STRUCT(passed INTEGER, failed INTEGER, total INTEGER)",
    "error_signature": "VARCHAR",
    "cumulative_edits": "INTEGER",
    "cumulative_test_runs": "INTEGER",
    "direction_change": "BOOLEAN",
    "model": "VARCHAR",
    "usage": 'STRUCT("input" BIGINT, cached BIGINT, output BIGINT)',
    "latency_s": "DOUBLE",
    "cost_usd": "DOUBLE",
    "synthetic": "BOOLEAN",
}
_COLUMNS_SQL = "{" + ", ".join(f"'{k}': '{v}'" for k, v in EVENT_COLUMNS.items()) + "}"
_SELECT = ", ".join(f'"{k}"' for k in EVENT_COLUMNS)


@dataclass
class BadLine:
    path: str
    line: int
    error: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.error}"


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)  # sources (re)loaded this time
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    events: int = 0  # rows loaded this time
    bad_lines: list[BadLine] = field(default_factory=list)


def analytics_dir(store: Store) -> Path:
    return store.root / "analytics"


def database_path(store: Store) -> Path:
    return analytics_dir(store) / "harnessforge.duckdb"


def connect(store: Store) -> duckdb.DuckDBPyConnection:
    path = database_path(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(str(path))


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
    root = store.root / "trajectories"
    sources = sorted(root.glob("*/*/*/trajectory.jsonl"))
    known = {p: (s, m) for p, s, m in con.execute("SELECT path, size, mtime_ns FROM hf_loads").fetchall()}
    report = LoadReport()
    current = {}
    for src in sources:
        st = src.stat()
        current[str(src.relative_to(store.root))] = (src, st.st_size, st.st_mtime_ns)
    changed = [(rel, *v) for rel, v in current.items() if known.get(rel) != v[1:]]
    report.unchanged = len(current) - len(changed)
    for rel in sorted(set(known) - set(current)):
        _forget(con, store, rel)
        report.removed.append(rel)
    for i, (rel, src, size, mtime) in enumerate(changed, 1):
        table, bad = read_events(src, rel)
        report.bad_lines += bad
        _forget(con, store, rel)
        out = _parquet_path(store, rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out)
        con.execute(f"INSERT INTO raw_events SELECT ?, {_SELECT} FROM read_parquet(?)", [rel, str(out)])
        con.execute("INSERT INTO hf_loads VALUES (?, ?, ?, ?, ?)", [rel, size, mtime, table.num_rows, len(bad)])
        report.loaded.append(rel)
        report.events += table.num_rows
        if progress:
            progress(i, len(changed))
    _load_run_files(store, con)
    return report


def read_events(src: Path, name: str) -> tuple[pa.Table, list[BadLine]]:
    """One trajectory file as an Arrow table, and the lines left out (with their line numbers)."""
    con = duckdb.connect()
    query = f"SELECT {_SELECT} FROM read_json(?, format='newline_delimited', columns={_COLUMNS_SQL})"
    try:
        return con.sql(query, params=[str(src)]).to_arrow_table(), []
    except duckdb.Error:
        pass  # some line is not a valid event: find which, keep the rest
    bad, good = [], []
    for n, line in enumerate(src.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            Event.model_validate_json(line)
            good.append(line)
        except ValidationError as e:
            bad.append(BadLine(name, n, first_error(e)))
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as tmp:
        tmp.write(b"\n".join(good) + b"\n")
        tmp.flush()
        return con.sql(query, params=[tmp.name]).to_arrow_table(), bad


def _parquet_path(store: Store, rel: str) -> Path:
    # trajectories/<key>/<run_id>/<mid>/trajectory.jsonl -> analytics/events/<key>/<run_id>/<mid>.parquet
    _, key, run_id, mid, _ = Path(rel).parts
    return analytics_dir(store) / "events" / key / run_id / f"{mid}.parquet"


def _forget(con: duckdb.DuckDBPyConnection, store: Store, rel: str) -> None:
    con.execute("DELETE FROM raw_events WHERE source = ?", [rel])
    con.execute("DELETE FROM hf_loads WHERE path = ?", [rel])
    _parquet_path(store, rel).unlink(missing_ok=True)


def _ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    columns = ", ".join(f'"{k}" {v}' for k, v in EVENT_COLUMNS.items())
    con.execute(f"CREATE TABLE IF NOT EXISTS raw_events (source VARCHAR, {columns})")
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_loads (path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, "
        "events BIGINT, bad_lines INTEGER)"
    )


RUN_SCHEMA = pa.schema(
    [(k, pa.string()) for k in ("run_id", "repo", "agent", "model", "harness_version", "rules_hash")]
    + [("synthetic", pa.bool_()), ("config", pa.string())]
)
MILESTONE_SCHEMA = pa.schema([
    ("repo", pa.string()), ("run_id", pa.string()), ("milestone_id", pa.string()), ("status", pa.string()),
    ("turns", pa.int32()), ("hints_released", pa.list_(pa.int32())), ("cost_usd", pa.float64()),
    ("wall_s", pa.float64()), ("reset_to", pa.string()), ("carried_from", pa.string()), ("synthetic", pa.bool_()),
    ("ground_truth_files", pa.list_(pa.string())), ("candidate_files", pa.list_(pa.string())),
    ("final_diff", pa.string()), ("ground_truth", pa.string()),
])  # fmt: skip


def _load_run_files(store: Store, con: duckdb.DuckDBPyConnection) -> None:
    """Run metadata and per-milestone outcomes: small JSON files, rebuilt whole."""
    runs, milestones = [], []
    for meta in sorted((store.root / "trajectories").glob("*/*/metadata.json")):
        data = json.loads(meta.read_text())
        runs.append({**{f: data.get(f) for f in RUN_SCHEMA.names}, "config": json.dumps(data.get("config"))})
        for summary in sorted(meta.parent.glob("*/summary.json")):
            mdir = summary.parent
            s = json.loads(summary.read_text())
            report = (
                json.loads((mdir / "test_results.json").read_text()) if (mdir / "test_results.json").exists() else {}
            )
            milestones.append({
                **{f: s.get(f) for f in MILESTONE_SCHEMA.names}, "repo": data.get("repo"),
                "synthetic": s.get("synthetic", False),
                "ground_truth_files": report.get("ground_truth_files", []),
                "candidate_files": report.get("candidate_files", []),
                "final_diff": _text(mdir / "final_diff.patch"), "ground_truth": _text(mdir / "ground_truth.patch"),
            })  # fmt: skip
    for name, rows, schema in (("raw_runs", runs, RUN_SCHEMA), ("raw_milestones", milestones, MILESTONE_SCHEMA)):
        con.register("_rows", pa.Table.from_pylist(rows, schema=schema))
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _rows")
        con.unregister("_rows")


def _text(path: Path) -> str:
    return path.read_bytes().decode(errors="replace") if path.exists() else ""
