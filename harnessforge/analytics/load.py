"""Trajectories into Parquet and DuckDB, incrementally.

A run's `trajectory.jsonl` files (one per milestone) become one Parquet file,
`analytics/events/<key>/<run_id>.parquet` (written with pyarrow); `raw_events` in
`analytics/harnessforge.duckdb` is a view over those files (the models read them, nothing is copied).
A run is (re)loaded only when one of its files appeared, vanished or changed size or mtime since
the last load; a run that vanished is removed. Runs' `metadata.json` and milestones'
`summary.json` / `test_results.json` go to `raw_runs` and `raw_milestones`, rebuilt whole each
time (they are small).

Parsing is DuckDB's `read_json` with a fixed schema (fast, multi-threaded). A file it rejects is
read again line by line: each bad line is reported with its file and line number and left out, and
the rest loads.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from ..errors import ArtifactError
from ..models.common import first_error
from ..models.trajectory import Event
from ..store import RUN_METADATA, RunFiles, Store, atomic_file, disk_full

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
_ARGS = {"rule": "VARCHAR", "path": "VARCHAR", "pattern": "VARCHAR", "command": "VARCHAR", "content_sha": "VARCHAR",
         "test_file": "BOOLEAN"}  # fmt: skip
# Computed once at load, per run and in parallel while parsing, so the models compare integers and
# read no JSON: the milestone run, a call (tool + arguments), an observation, what kind of event it
# is, and the tool arguments the models read.
DERIVED = {
    "mrun": ("UBIGINT", "hash(repo, run_id, milestone_id)"),
    "action_key": ("UBIGINT", "hash(action.type, CAST(action.args AS VARCHAR))"),
    "obs_key": ("UBIGINT", "hash(observation)"),
    "is_tool": ("BOOLEAN", "role = 'dev' AND call_id IS NOT NULL"),  # a Dev tool call
    "is_test_run": (
        "BOOLEAN",
        "role = 'dev' AND call_id IS NOT NULL AND action.type = 'run_tests' AND test_status.total IS NOT NULL",
    ),  # fmt: skip
    "arg": (
        "STRUCT(" + ", ".join(f"{k} {t}" for k, t in _ARGS.items()) + ")",
        "json_transform(action.args, '{" + ", ".join(f'"{k}": "{t}"' for k, t in _ARGS.items()) + "}')",
    ),
}
_SELECT = ", ".join([f'"{k}"' for k in EVENT_COLUMNS] + [f"{expr} AS {k}" for k, (_, expr) in DERIVED.items()])
# Each event's neighbours in its milestone run, also computed at load: its number among the Dev's
# tool calls and the calls one and two before it, its number among the test runs and the run
# before it. That is all the sequence detectors of `stuck_points` look at, so the models need no
# sort. Computed with Arrow kernels over the run's events in order (see `with_neighbours`).
_CALL_FIELDS = {"seq": pa.int32(), "turn_id": pa.int32(), "action_key": pa.uint64(), "obs_key": pa.uint64(),
                "ok": pa.bool_()}  # fmt: skip
_TEST_RUN_FIELDS = {"seq": pa.int32(), "turn_id": pa.int32(), "error_signature": pa.string(),
                    "cumulative_edits": pa.int32()}  # fmt: skip
NEIGHBOURS = {
    "call_no": "BIGINT",
    "prev_call": "STRUCT(seq INTEGER, turn_id INTEGER, action_key UBIGINT, obs_key UBIGINT, ok BOOLEAN)",
    "call_2_back": "STRUCT(seq INTEGER, turn_id INTEGER, action_key UBIGINT, obs_key UBIGINT, ok BOOLEAN)",
    "test_run_no": "BIGINT",
    "prev_test_run": "STRUCT(seq INTEGER, turn_id INTEGER, error_signature VARCHAR, cumulative_edits INTEGER)",
}


# A run's Parquet file holds its test runs first, then its other tool calls, then everything else
# (each in milestone-run order: the sort is stable), in row groups of ROW_GROUP rows: a model
# reading only tool calls or test runs skips the other row groups by their statistics.
CLUSTER = [("is_test_run", "descending"), ("is_tool", "descending")]
ROW_GROUP = 122_880  # DuckDB's own row group size


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


WAIT_ENV = "HARNESSFORGE_DB_WAIT_S"  # how long to wait for another process's write (default 300 s)


def connect(store: Store, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """The analytics database for writing. DuckDB allows one writing process per file: a second
    `distill` waits for the first, then fails with one clear line (see `_open`)."""
    path = store.analytics_database()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        _create(path)
    return _open(path, read_only=False, wait_s=wait_s)


def _create(path: Path) -> None:
    """A new database is initialised beside `path`, then linked in whole: a full disk cannot leave a
    half-initialised file there, which DuckDB would refuse to open ever after."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        duckdb.connect(str(tmp)).close()
        os.link(tmp, path)  # not a rename: a database another process created meanwhile stays
    except FileExistsError:
        pass
    except (OSError, duckdb.Error) as e:
        raise disk_full(path, ArtifactError(f"{path}: cannot create the analytics database ({e})")) from None
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            leftover.unlink(missing_ok=True)


def connect_read_only(store: Store, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """For readers (the report, the viewer): never creates or changes the database."""
    path = store.analytics_database()
    if not path.exists():
        raise ArtifactError(f"{path}: no analytics database; run `harnessforge distill` first")
    return _open(path, read_only=True, wait_s=wait_s)


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
            raise disk_full(path, ArtifactError(f"{path}: cannot open the analytics database ({e})")) from None


@contextmanager
def writing(store: Store) -> Iterator[None]:
    """DuckDB says a full disk only in its message: turn it into the store's one-line error (the
    failed statement was rolled back, so the database stays as it was)."""
    try:
        yield
    except duckdb.Error as e:
        raise disk_full(store.analytics_database(), e) from None


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
    current: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)  # run dir -> {source: (size, mtime)}
    for files in store.milestone_runs():
        st = files.trajectory.stat()
        rel = store.relative(files.trajectory)
        current[_run_of(rel)][rel] = (st.st_size, st.st_mtime_ns)
    known: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
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
        with atomic_file(_parquet_path(store, run)) as tmp:  # never half a Parquet file at its final path
            pq.write_table(table.sort_by(CLUSTER), tmp, row_group_size=ROW_GROUP)
        return run, table.select(["source"]), bad

    # one more worker than cores: a run's Python-side steps overlap the others' parsing
    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) + 1) as pool:
        for i, (run, sources_col, bad) in enumerate(pool.map(convert, changed), 1):
            sources = current[run]
            con.execute("DELETE FROM hf_loads WHERE starts_with(path, ?)", [run + "/"])
            counts = {c["values"]: c["counts"] for c in pc.value_counts(sources_col.column("source")).to_pylist()}
            bad_per = Counter(b.path for b in bad)
            rows = [(rel, size, mtime, counts.get(rel, 0), bad_per[rel]) for rel, (size, mtime) in sources.items()]
            con.register("_loads", pa.Table.from_pylist([dict(zip(LOADS, r, strict=True)) for r in rows]))
            con.execute("INSERT INTO hf_loads SELECT * FROM _loads")  # one statement: executemany is per row
            con.unregister("_loads")
            report.loaded += [rel for rel in sorted(sources) if known.get(run, {}).get(rel) != sources[rel]]
            report.removed += sorted(set(known.get(run, {})) - set(sources))
            report.bad_lines += bad
            report.events += sources_col.num_rows
            if progress:
                progress(i, len(changed))
    report.unchanged = sum(len(s) for s in current.values()) - len(report.loaded)
    _events_view(store, con)
    _load_run_files(store, con)
    return report


def _events_view(store: Store, con: duckdb.DuckDBPyConnection) -> None:
    """`raw_events`: a view over the runs' Parquet files (no copy; the models read them directly). The
    path is absolute, so the view works from any working directory (the report reads it elsewhere)."""
    files = store.analytics_events_dir().resolve()
    if any(files.glob("*/*.parquet")):
        pattern = str(files / "*" / "*.parquet").replace("'", "''")
        source = f"read_parquet('{pattern}')"
    else:  # nothing loaded yet: an empty relation with the right columns
        types = {**EVENT_COLUMNS, **{k: t for k, (t, _) in DERIVED.items()}, **NEIGHBOURS}
        typed = ", ".join(f'NULL::{t} AS "{k}"' for k, t in types.items())
        source = f"(SELECT NULL::VARCHAR AS source, {typed} WHERE false)"
    con.execute(f"CREATE OR REPLACE VIEW raw_events AS SELECT * FROM {source}")


def read_events(root: Path, sources: list[str]) -> tuple[pa.Table, list[BadLine]]:
    """Trajectory files (paths relative to `root`) as one Arrow table with a `source` column, and
    the lines left out (with file and line number). One DuckDB read for the lot; only a file it
    rejects is read again line by line."""
    con = duckdb.connect()
    try:
        return with_neighbours(_read_json(con, root, sources)), []
    except duckdb.Error:
        pass
    tables, bad = [], []
    for rel in sources:
        try:
            tables.append(_read_json(con, root, [rel]))
        except duckdb.Error:  # some line is not a valid event: find which, keep the rest
            good = []
            for n, line in enumerate((root / rel).read_bytes().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    Event.model_validate_json(line)
                    good.append(line)
                except ValidationError as e:
                    bad.append(BadLine(rel, n, first_error(e)))
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / rel).parent.mkdir(parents=True)
                (Path(tmp) / rel).write_bytes(b"\n".join(good) + b"\n")
                tables.append(_read_json(con, Path(tmp), [rel]))
    return with_neighbours(pa.concat_tables(tables)), bad


def with_neighbours(events: pa.Table) -> pa.Table:
    """`events` (one run's) with the NEIGHBOURS columns, in (milestone run, seq) order. The files
    are in that order already (the Recorder appends), so usually nothing is sorted."""
    mrun, seq = events.column("mrun"), events.column("seq")
    if events.num_rows > 1:
        same = pc.equal(mrun[1:], mrun[:-1])
        if not pc.all(pc.or_(pc.invert(same), pc.greater(seq[1:], seq[:-1]))).as_py():
            events = events.sort_by([("mrun", "ascending"), ("seq", "ascending")])
    calls = events.column("is_tool")
    ok = pc.fill_null(events.column("ok"), True)
    call_no, prev_call, call_2_back = _neighbours(events.set_column(events.schema.get_field_index("ok"), "ok", ok),
                                                  calls, _CALL_FIELDS, back=2)  # fmt: skip
    test_run_no, prev_test_run, _ = _neighbours(events, events.column("is_test_run"), _TEST_RUN_FIELDS, back=1)
    for name, column in (("call_no", call_no), ("prev_call", prev_call), ("call_2_back", call_2_back),
                         ("test_run_no", test_run_no), ("prev_test_run", prev_test_run)):  # fmt: skip
        events = events.append_column(name, column)
    return events


def _neighbours(events: pa.Table, mask: pa.ChunkedArray, fields: dict[str, pa.DataType], back: int):
    """For the rows where `mask` holds, taken in order: each row's number within its milestone
    run and, per k in 1..back, the `fields` of the row k before it in that run (a struct; null
    for rows outside `mask` or without such a row). Returns [number, 1 back, 2 back, ...]."""
    mask = pc.fill_null(mask, False)
    rows = events.select(["mrun", *fields]).filter(mask)
    n = rows.num_rows
    group = rows.column("mrun").combine_chunks()
    k = pc.subtract(pc.cumulative_sum(pc.fill_null(pa.nulls(n, pa.int64()), 1)), 1)  # 0, 1, ..., n - 1
    new_group = pa.concat_arrays([pa.array([True] * min(n, 1), pa.bool_()), pc.not_equal(group[1:], group[:-1])])
    number = pc.add(pc.subtract(k, pc.fill_null_forward(pc.if_else(new_group, k, None))), 1)
    out = [number]
    for step in range(1, back + 1):
        has = pc.equal(group, pa.concat_arrays([pa.nulls(min(n, step), group.type), group[: max(n - step, 0)]]))
        shifted = [
            pa.concat_arrays([pa.nulls(min(n, step), t), rows.column(f).combine_chunks().cast(t)[: max(n - step, 0)]])
            for f, t in fields.items()
        ]
        out.append(pa.StructArray.from_arrays(shifted, names=list(fields), mask=pc.invert(pc.fill_null(has, False))))
    # back to one value per event: the i-th masked event gets the i-th value
    position = pc.if_else(mask, pc.subtract(pc.cumulative_sum(pc.cast(mask, pa.int64())), 1), None)
    return [column.take(position) for column in out] + [None] * (2 - back)


def _read_json(con: duckdb.DuckDBPyConnection, root: Path, sources: list[str]) -> pa.Table:
    prefix = str(root) + "/"
    query = (
        f"SELECT replace(filename, ?, '') AS source, {_SELECT} FROM read_json(?, format='newline_delimited', "
        f"columns={_COLUMNS_SQL}, filename=true)"
    )
    return con.sql(query, params=[prefix, [prefix + s for s in sources]]).to_arrow_table()


def _run_of(source: str) -> str:
    """trajectories/<key>/<run_id>/<mid>/trajectory.jsonl -> trajectories/<key>/<run_id>"""
    return source.rsplit("/", 2)[0]


def _parquet_path(store: Store, run: str) -> Path:
    _, key, run_id = run.split("/")
    return store.analytics_events_file(key, run_id)


def _forget(con: duckdb.DuckDBPyConnection, store: Store, run: str) -> None:
    con.execute("DELETE FROM hf_loads WHERE starts_with(path, ?)", [run + "/"])
    _parquet_path(store, run).unlink(missing_ok=True)


LOADS = ("path", "size", "mtime_ns", "events", "bad_lines")


def _ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
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
    finished: dict[Path, list[RunFiles]] = defaultdict(list)
    for files in store.milestone_runs(finished=True):
        finished[files.run_dir].append(files)
    for run_dir in store.run_dirs():
        data = _json(run_dir / RUN_METADATA)
        runs.append({**{f: data.get(f) for f in RUN_SCHEMA.names}, "config": json.dumps(data.get("config"))})
        for files in finished[run_dir]:
            s = _json(files.summary)
            report = _json(files.test_results) if files.test_results.exists() else {}
            milestones.append({
                **{f: s.get(f) for f in MILESTONE_SCHEMA.names}, "repo": data.get("repo"),
                "synthetic": s.get("synthetic", False),
                "ground_truth_files": report.get("ground_truth_files", []),
                "candidate_files": report.get("candidate_files", []),
                "final_diff": _text(files.final_diff), "ground_truth": _text(files.ground_truth),
            })  # fmt: skip
    for name, rows, schema in (("raw_runs", runs, RUN_SCHEMA), ("raw_milestones", milestones, MILESTONE_SCHEMA)):
        con.register("_rows", pa.Table.from_pylist(rows, schema=schema))
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _rows")
        con.unregister("_rows")


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
