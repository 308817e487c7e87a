"""Where a run's loaded events live: its Parquet file, and loose files for milestones loaded later.

A run's events are one Parquet file, `events/<key>/<run_id>.parquet`: test runs first, then the
other tool calls, then the rest, in row groups that models reading only calls skip by their
statistics. Few large files keep the models fast (a thousand small files made every model scan
them all and cost 9x as much at a million events); rewriting a run's file for each new milestone
would make that milestone cost the whole run. So a milestone run loaded after its run's file was
written goes to a loose file of its own, `events/<key>/<run_id>/<mid>.parquet`, and once a run has
more than `LOOSE` of them (or a milestone inside its file changes) they are merged into the file
again, by DuckDB. Each trajectory's rows are in exactly one file; `hf_loads.file` says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..atomic import atomic_file
from ..store import Store
from .events import BadLine, read_events
from .sqlmodels import literal

LOOSE = 8  # loose milestone files a run may have before they are merged into its file
CLUSTER = [("is_test_run", "descending"), ("is_tool", "descending")]
ROW_GROUP = 122_880  # DuckDB's own row group size

Stat = tuple[int, int]  # (size, mtime_ns) of a trajectory file


@dataclass
class Written:
    """What writing one run's changes did: the sources parsed (as they were), those gone, the file now
    holding each source written or moved (relative to the events folder), and what parsing found."""

    parsed: dict[str, Stat]
    gone: set[str]
    files: dict[str, str]
    sources: pa.Table | None  # the parsed events' `source` column
    bad: list[BadLine]


def write_run(store: Store, run: str, parse: dict[str, Stat], gone: set[str], known: dict[str, str]) -> Written:
    """Write the changes of run folder `run` (`trajectories/<key>/<run_id>`): `parse` its sources to
    (re)load, `gone` those whose log vanished, `known` every source loaded before -> its file."""
    events = store.analytics_events_dir()
    key, run_id = run.split("/")[1:3]
    base = store.analytics_events_file(key, run_id)
    parse, gone = dict(parse), set(gone)
    kept = {source: file for source, file in known.items() if source not in parse and source not in gone}
    for source in [source for source, file in kept.items() if not (events / file).exists()]:
        del kept[source]
        _reparse(store, source, parse, gone)
    parsed, bad = read_events(store.root, sorted(parse)) if parse else (None, [])
    schemas = [pq.read_schema(events / file) for file in set(kept.values())] if parsed is not None else []
    if any(not schema.equals(parsed.schema) for schema in schemas):
        for source in list(kept):  # written by another version: the whole run parsed again
            _reparse(store, source, parse, gone)
        kept = {}
        parsed, bad = read_events(store.root, sorted(parse))
    whole = _relative(store, base)
    loose = {source for source, file in kept.items() if file != whole}
    touches_file = any(known.get(source) == whole for source in (*parse, *gone))
    files: dict[str, str] = {}
    if not kept or touches_file or len(loose) + len(parse) > LOOSE:
        inputs = sorted({events / file for file in kept.values()})
        if parsed is None and not kept:
            base.unlink(missing_ok=True)  # every source of the run is gone
        else:
            _write(base, inputs, set(parse) | gone, parsed)
        for path in base.with_suffix("").glob("*.parquet"):  # its loose files (even one a failed load left)
            path.unlink()
        files = {source: whole for source in [*kept, *parse]}
    else:
        for source in parse:
            path = store.analytics_milestone_events_file(key, run_id, source.split("/")[3])
            rows = parsed.filter(pc.equal(parsed.column("source"), source))
            with atomic_file(path) as partial:  # never half a Parquet file at its final path
                pq.write_table(rows.sort_by(CLUSTER), partial, row_group_size=ROW_GROUP)
            files[source] = _relative(store, path)
        for source in gone:
            if known.get(source) and known[source] != whole:
                (events / known[source]).unlink(missing_ok=True)
    return Written(parse, gone, files, None if parsed is None else parsed.select(["source"]), bad)


def _reparse(store: Store, source: str, parse: dict[str, Stat], gone: set[str]) -> None:
    """A kept source whose rows are not where they were recorded: parsed again, or gone with its log."""
    path = store.path(source)
    if path.exists():
        status = path.stat()
        parse[source] = (status.st_size, status.st_mtime_ns)
    else:
        gone.add(source)


def _relative(store: Store, path: Path) -> str:
    return path.relative_to(store.analytics_events_dir()).as_posix()


def _write(base: Path, inputs: list[Path], drop: set[str], parsed: pa.Table | None) -> None:
    """The run's file: the rows of `inputs` (its file and loose files) but those of `drop`, and `parsed`
    (merged and sorted by DuckDB, which is faster than pyarrow at it on nested columns)."""
    with atomic_file(base) as partial:  # never half a Parquet file at its final path
        if not inputs:  # only new rows: sorted by pyarrow (stable: each log's rows stay in seq order)
            pq.write_table(parsed.sort_by(CLUSTER), partial, row_group_size=ROW_GROUP)
            return
        con = duckdb.connect()
        try:
            parts = [
                f"SELECT * FROM read_parquet({literal([str(path) for path in inputs])}) "
                f"WHERE NOT list_contains({literal(sorted(drop))}::VARCHAR[], source)"
            ]
            if parsed is not None:
                con.register("parsed", parsed)
                parts.append("SELECT * FROM parsed")
            rows = " UNION ALL ".join(parts)
            merged = con.sql(f"SELECT * FROM ({rows}) ORDER BY is_test_run DESC, is_tool DESC, source, seq")
            # written by pyarrow with the schema it reads back, so the next load compares them equal
            schema = parsed.schema if parsed is not None else pq.read_schema(inputs[0])
            pq.write_table(merged.to_arrow_table().cast(schema), partial, row_group_size=ROW_GROUP)
        finally:
            con.close()
