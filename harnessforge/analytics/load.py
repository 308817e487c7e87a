"""Trajectories into Parquet and DuckDB, incrementally, by milestone.

A run's `trajectory.jsonl` files (one per milestone) become one Parquet file,
`analytics/events/<key>/<run_id>.parquet` (written with pyarrow), with loose files beside it for
milestones loaded later (`event_files`); `raw_events` in `analytics/harnessforge.duckdb` is a view
over those files (the models read them, nothing is copied). A milestone run's events are (re)loaded
only when its file appeared, vanished or changed size or mtime since the last load. Runs'
`metadata.json` and milestones' `summary.json` / `test_results.json` go to `raw_runs` and
`raw_milestones`. Parsing the events is `events.read_events`.

`load(store, only=[(repo, milestone), ...])` looks at those milestones' files alone and replaces only
their rows (the Dagster partitions of `raw_events`, `raw_milestones` and `raw_runs`); `load(store)`
looks at everything. Both leave the same tables.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ArtifactError
from ..store import RUN_METADATA, RunFiles, Store
from .database import connect
from .event_files import Written, write_run
from .events import ALL_COLUMNS, DERIVED, EVENT_COLUMNS, FULL_OBSERVATION, NEIGHBOURS, BadLine
from .slices import Slice, slice_stats
from .sqlmodels import literal

LOADS = ("path", "size", "mtime_ns", "events", "bad_lines", "file")

Sources = dict[str, tuple[int, int]]  # trajectory file (relative to the store) -> (size, mtime)
Milestone = tuple[str, str]  # (repo key, milestone id)


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)  # sources (re)loaded this time
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    events: int = 0  # rows loaded this time
    bad_lines: list[BadLine] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)  # events files that could not be read, rebuilt from the logs


def _readable(path: Path) -> bool:
    try:
        pq.read_metadata(path)
        return True
    except (OSError, pa.ArrowException):
        return False


def load(
    store: Store,
    con: duckdb.DuckDBPyConnection | None = None,
    progress=None,
    only: Iterable[Milestone] | None = None,
) -> LoadReport:
    """Bring `raw_events`, `raw_runs` and `raw_milestones` up to date with the store's trajectories, or
    with those of the milestones `only` ((repo key, milestone id) pairs; the others' rows stay as they
    are). `progress(done, total)` is called per changed run."""
    own = con is None
    con = con or connect(store)
    try:
        return _load(store, con, progress, None if only is None else set(only))
    finally:
        if own:
            con.close()


def _load(store: Store, con: duckdb.DuckDBPyConnection, progress, scope: set[Milestone] | None) -> LoadReport:
    _ensure_tables(con)
    current: dict[str, Sources] = defaultdict(dict)  # run dir -> its sources in scope now
    for files in _trajectories(store, scope):
        status = files.trajectory.stat()
        source = store.relative(files.trajectory)
        current[_run_of(source)][source] = (status.st_size, status.st_mtime_ns)
    known: dict[str, Sources] = defaultdict(dict)  # run dir -> all its sources at the last load
    where: dict[str, dict[str, str]] = defaultdict(dict)  # run dir -> source -> the file holding its rows
    for path, size, mtime, file in con.execute("SELECT path, size, mtime_ns, file FROM hf_loads").fetchall():
        run = _run_of(path)
        known[run][path] = (size, mtime)
        where[run][path] = file or _parquet_path(store, run).relative_to(store.analytics_events_dir()).as_posix()
    report = LoadReport()
    for run, files in where.items():  # a damaged or deleted events file is rebuilt from its logs, and said
        for file in sorted(set(files.values())):
            path = store.analytics_events_dir() / file
            if not _readable(path):
                path.unlink(missing_ok=True)
                report.rebuilt.append(str(path))
                for source in [source for source, holder in files.items() if holder == file]:
                    known[run][source] = (-1, -1)  # differs from any log: parsed again
    changes: dict[str, tuple[Sources, set[str]]] = {}
    for run in sorted(set(current) | {run for run, sources in known.items() if any(map(_in(scope), sources))}):
        before = {source: stat for source, stat in known[run].items() if _in(scope)(source)}
        now = current.get(run, {})
        parse = {source: stat for source, stat in now.items() if before.get(source) != stat}
        gone = set(before) - set(now)
        if parse or gone:
            changes[run] = (parse, gone)

    def convert(run: str) -> Written:
        """One run's changes written (runs convert in parallel: DuckDB and pyarrow release the GIL)."""
        return write_run(store, run, *changes[run], where[run])

    # one more worker than cores: a run's Python-side steps overlap the others' parsing
    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) + 1) as pool:
        for done, written in enumerate(pool.map(convert, sorted(changes)), 1):
            _record(con, written)
            report.loaded += sorted(written.parsed)
            report.removed += sorted(written.gone)
            report.bad_lines += written.bad
            report.events += written.sources.num_rows if written.sources is not None else 0
            if progress:
                progress(done, len(changes))
    in_scope_now = {source for sources in current.values() for source in sources}
    report.unchanged = len(in_scope_now - set(report.loaded))
    _events_view(store, con)
    _load_run_files(store, con, scope)
    return report


def _in(scope: set[Milestone] | None):
    return lambda source: scope is None or milestone_of(source) in scope


def _trajectories(store: Store, scope: set[Milestone] | None) -> list[RunFiles]:
    if scope is None:
        return store.milestone_runs()
    return [files for key, milestone in sorted(scope) for files in store.milestone_runs(key, milestone=milestone)]


def _record(con: duckdb.DuckDBPyConnection, written: Written) -> None:
    """`hf_loads`: what each trajectory of the run was when loaded, its event and bad-line counts, and
    the file holding its rows (the run's other trajectories keep their rows, moved or not)."""
    con.execute("DELETE FROM hf_loads WHERE list_contains(?, path)", [sorted({*written.parsed, *written.gone})])
    sources = written.sources
    counts = pc.value_counts(sources.column("source")).to_pylist() if sources is not None else []
    events = {count["values"]: count["counts"] for count in counts}
    bad_lines = Counter(line.path for line in written.bad)
    rows = [
        dict(
            zip(
                LOADS,
                (source, size, mtime, events.get(source, 0), bad_lines[source], written.files[source]),
                strict=True,
            )
        )
        for source, (size, mtime) in sorted(written.parsed.items())
    ]
    if rows:
        con.register("_loads", pa.Table.from_pylist(rows))
        con.execute("INSERT INTO hf_loads SELECT * FROM _loads")  # one statement: executemany is per row
        con.unregister("_loads")
    moved = {source: file for source, file in written.files.items() if source not in written.parsed}
    if moved:
        con.register("_moved", pa.table({"path": list(moved), "file": list(moved.values())}))
        con.execute("UPDATE hf_loads SET file = m.file FROM _moved m WHERE hf_loads.path = m.path")
        con.unregister("_moved")


def _events_view(store: Store, con: duckdb.DuckDBPyConnection) -> None:
    """`raw_events`: a view over the runs' Parquet files (no copy; the models read them directly). The
    path is absolute, so the view works from any working directory (the report reads it elsewhere). A
    view takes no parameters: the path is written in as a literal."""
    files = store.analytics_events_dir().resolve()
    patterns = [str(files / pattern) for pattern in ("*/*.parquet", "*/*/*.parquet") if any(files.glob(pattern))]
    source = f"read_parquet({literal(patterns)})" if patterns else _NONE
    con.execute(f"CREATE OR REPLACE VIEW raw_events AS SELECT * FROM {source}")


# no event loaded: an empty relation with the right columns
_NONE = "(SELECT NULL::VARCHAR AS source, {} WHERE false)".format(
    ", ".join(f'NULL::{kind} AS "{name}"' for name, kind in ALL_COLUMNS.items())
)


def events_of(store: Store, con: duckdb.DuckDBPyConnection, where: Slice) -> str:
    """`raw_events` cut down to the files holding the rows of `where` (`hf_loads.file`): a slice build
    reads its milestones' loose files and its runs' files, not every file of the store."""
    folder = store.analytics_events_dir().resolve()
    records = con.execute("SELECT path, file FROM hf_loads").fetchall()
    wanted = {key for key in where.keys}
    width = len(where.columns)
    files = {
        file or f"{path.split('/')[1]}/{path.split('/')[2]}.parquet"
        for path, file in records
        if (path.split("/")[1], path.split("/")[3])[:width] in wanted
    }
    paths = sorted(str(folder / file) for file in files if (folder / file).exists())
    return f"read_parquet({literal(paths)})" if paths else _NONE


def source_stats(store: Store, con: duckdb.DuckDBPyConnection, where: Slice) -> dict[str, dict]:
    """Per source, per milestone of `where`: its rows and their data version (`slices.slice_stats`). A
    milestone's `raw_runs` rows are those of the runs that finished it."""
    runs = (
        "(SELECT m.milestone_id, r.* FROM raw_runs r JOIN (SELECT DISTINCT repo, run_id, milestone_id "
        "FROM raw_milestones) m USING (repo, run_id))"
    )
    relations = {"raw_events": events_of(store, con, where), "raw_milestones": "raw_milestones", "raw_runs": runs}
    return slice_stats(con, relations, where)


def loaded(con: duckdb.DuckDBPyConnection, where: Slice) -> dict[tuple[str, ...], int]:
    """The keys of `where` (milestones or repos) that have a trajectory loaded -> its lines left out."""
    rows = con.execute("SELECT split_part(path, '/', 2), split_part(path, '/', 4), bad_lines FROM hf_loads").fetchall()
    found: dict[tuple[str, ...], int] = {}
    for repo, milestone, bad in rows:
        key = (repo, milestone)[: len(where.columns)]
        if key in set(where.keys):
            found[key] = found.get(key, 0) + (bad or 0)
    return found


def load_version() -> str:
    """What loaded rows depend on besides the logs: the columns parsed and computed at load (the
    loading assets' code version)."""
    parts = [EVENT_COLUMNS, DERIVED, NEIGHBOURS, FULL_OBSERVATION, str(RUN_SCHEMA), str(MILESTONE_SCHEMA)]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


def milestone_of(source: str) -> Milestone:
    """trajectories/<key>/<run_id>/<mid>/trajectory.jsonl -> (key, mid)"""
    parts = source.split("/")
    return parts[1], parts[3]


def _run_of(source: str) -> str:
    """trajectories/<key>/<run_id>/<mid>/trajectory.jsonl -> trajectories/<key>/<run_id>"""
    return source.rsplit("/", 2)[0]


def _parquet_path(store: Store, run: str) -> Path:
    _, key, run_id = run.split("/")
    return store.analytics_events_file(key, run_id)


def _ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_loads (path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, "
        "events BIGINT, bad_lines INTEGER, file VARCHAR)"
    )
    con.execute("ALTER TABLE hf_loads ADD COLUMN IF NOT EXISTS file VARCHAR")  # a database from before loose files
    for name, schema in (("raw_runs", RUN_SCHEMA), ("raw_milestones", MILESTONE_SCHEMA)):
        con.register("_rows", schema.empty_table())
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} AS SELECT * FROM _rows")
        con.unregister("_rows")
    for column in ("scaffold", "scaffold_version", "test_visibility", "plan_id"):  # a database from before these
        con.execute(f"ALTER TABLE raw_runs ADD COLUMN IF NOT EXISTS {column} VARCHAR")


RUN_SCHEMA = pa.schema(
    [
        (name, pa.string())
        for name in ("run_id", "repo", "agent", "model", "harness_version", "rules_hash", "mode", "harness_profile")
    ]
    + [("synthetic", pa.bool_()), ("config", pa.string())]
    + [("scaffold", pa.string()), ("scaffold_version", pa.string())]  # last: older tables gain them by ALTER
    + [("test_visibility", pa.string()), ("plan_id", pa.string())]
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


def _load_run_files(store: Store, con: duckdb.DuckDBPyConnection, scope: set[Milestone] | None) -> None:
    """Run metadata and per-milestone outcomes: small JSON files, rebuilt whole, or (`scope`) the rows
    of those milestones and of the runs that have them."""
    finished: dict[Path, list[RunFiles]] = defaultdict(list)
    if scope is None:
        run_dirs = store.run_dirs()
        for files in store.milestone_runs(finished=True):
            finished[files.run_dir].append(files)
    else:
        started = {files.run_dir for files in _trajectories(store, scope)}
        for key, milestone in sorted(scope):
            for files in store.milestone_runs(key, finished=True, milestone=milestone):
                finished[files.run_dir].append(files)
        run_dirs = sorted(path for path in started | set(finished) if (path / RUN_METADATA).exists())
    runs, milestones = [], []
    for run_dir in run_dirs:
        metadata = _json(run_dir / RUN_METADATA)
        runs.append(
            {
                **{name: metadata.get(name) for name in RUN_SCHEMA.names},
                "mode": metadata.get("mode") or "standard",  # runs from before modes
                "harness_profile": metadata.get("harness_profile") or "V0",
                "test_visibility": metadata.get("test_visibility") or "visible",  # runs from before hidden tests
                "plan_id": metadata.get("plan_id") or "",  # runs from before plan ids
                "config": json.dumps(metadata.get("config")),
                # whose loop and tools the Dev worked in (runs from before scaffolds: ours)
                "scaffold": (metadata.get("scaffold") or {}).get("name") or "harnessforge",
                "scaffold_version": (metadata.get("scaffold") or {}).get("version") or metadata.get("harness_version"),
            }
        )
        milestones += [_milestone_row(files, metadata.get("repo")) for files in finished[run_dir]]
    runs_table = pa.Table.from_pylist(runs, schema=RUN_SCHEMA)
    milestones_table = pa.Table.from_pylist(milestones, schema=MILESTONE_SCHEMA)
    con.register("_runs", runs_table)
    con.register("_milestones", milestones_table)
    if scope is None:
        con.execute("CREATE OR REPLACE TABLE raw_runs AS SELECT * FROM _runs")
        con.execute("CREATE OR REPLACE TABLE raw_milestones AS SELECT * FROM _milestones")
    else:
        con.register("_scope", pa.table({"repo": [k for k, _ in scope], "milestone_id": [m for _, m in scope]}))
        con.execute(
            "DELETE FROM raw_milestones USING _scope s WHERE raw_milestones.repo = s.repo "
            "AND raw_milestones.milestone_id = s.milestone_id"
        )
        con.execute("INSERT INTO raw_milestones SELECT * FROM _milestones")
        # the scope's runs again, and the rows of its repos' runs whose folder is gone
        gone = [
            (repo, run_id)
            for repo, run_id in con.execute(
                "SELECT repo, run_id FROM raw_runs WHERE list_contains(?, repo)", [sorted({k for k, _ in scope})]
            ).fetchall()
            if not store.run_metadata(repo, run_id).exists()
        ]
        stale = pa.table(
            {
                "repo": [row["repo"] for row in runs] + [repo for repo, _ in gone],
                "run_id": [row["run_id"] for row in runs] + [run_id for _, run_id in gone],
            }
        )
        con.register("_stale", stale)
        con.execute("DELETE FROM raw_runs USING _stale s WHERE raw_runs.repo = s.repo AND raw_runs.run_id = s.run_id")
        con.execute("INSERT INTO raw_runs SELECT * FROM _runs")
        for name in ("_scope", "_stale"):
            con.unregister(name)
    con.unregister("_runs")
    con.unregister("_milestones")


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
