"""Trajectory files as one Arrow table of events: parsed by DuckDB with a fixed schema, with the
columns the SQL models compare computed once here.

Parsing is DuckDB's `read_json` (fast, multi-threaded). A file it rejects is read again line by line:
each bad line is reported with its file and line number and left out, and the rest loads.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from ..harness.recorder import read_outputs
from ..models.common import first_error
from ..models.trajectory import Event
from ..store import RunFiles
from .sqlmodels import literal

# DuckDB types of an Event line; heterogeneous nested values (tool arguments) stay JSON.
EVENT_COLUMNS = {
    "run_id": "VARCHAR",
    "repo": "VARCHAR",
    "milestone_id": "VARCHAR",
    "seq": "INTEGER",
    "turn_id": "INTEGER",
    "ts": "TIMESTAMPTZ",
    "role": "VARCHAR",
    "action": "STRUCT(type VARCHAR, content VARCHAR, args JSON, verdict VARCHAR)",
    "call_id": "VARCHAR",
    "observation": "VARCHAR",
    "observation_chars": "INTEGER",
    "observation_cut": "BOOLEAN",
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
# Calls that change no file, whatever files they name.
_READ_ONLY = "'read_file', 'list_dir', 'search', 'run_tests', 'submit', 'request_hint'"
# The tool arguments the models read, parsed out of `action.args`.
TOOL_ARGUMENTS = {
    "rule": "VARCHAR",
    "path": "VARCHAR",
    "pattern": "VARCHAR",
    "command": "VARCHAR",
    "test_file": "BOOLEAN",
}
_ARGUMENTS_STRUCT = "STRUCT(" + ", ".join(f"{name} {kind}" for name, kind in TOOL_ARGUMENTS.items()) + ")"
# Computed once at load, per run and in parallel while parsing, so the models compare integers and
# read no JSON: the milestone run, a call (tool + arguments), an observation, what kind of event it
# is, and the tool arguments the models read.
DERIVED = {
    "mrun": ("UBIGINT", "hash(repo, run_id, milestone_id)"),
    "action_key": ("UBIGINT", "hash(action.type, CAST(action.args AS VARCHAR))"),
    "obs_key": ("UBIGINT", "hash(observation)"),
    "is_tool": ("BOOLEAN", "role = 'dev' AND call_id IS NOT NULL"),  # a Dev tool call
    # a test run: the Dev's (run_tests, or one started from the shell) or a failed grading of a submission
    "is_test_run": (
        "BOOLEAN",
        "(role = 'dev' AND call_id IS NOT NULL AND test_status.total IS NOT NULL) OR (role = 'verifier' AND "
        "action.type = 'verify' AND coalesce(action.verdict, CASE action.content WHEN 'PASS' THEN 'PASS' END, 'FAIL')"
        " = 'FAIL')",
    ),
    # the files a Dev call changed (edit tools and the shell alike), each with the content hash it left
    "file_edits": (
        "STRUCT(path VARCHAR, content_sha VARCHAR)[]",
        f"CASE WHEN role = 'dev' AND call_id IS NOT NULL AND action.type NOT IN ({_READ_ONLY}) "
        "AND len(files_touched) > 0 THEN CASE json_type(action.args, '$.content_sha') "
        "WHEN 'OBJECT' THEN list_transform(files_touched, lambda f: {'path': f, 'content_sha': "
        "json_transform(json_extract(action.args, '$.content_sha'), '\"MAP(VARCHAR, VARCHAR)\"')[f]}) "
        "ELSE list_transform(files_touched, lambda f: {'path': f, 'content_sha': "
        "json_extract_string(action.args, '$.content_sha')}) END END",
    ),
    # the files a Dev call read: read_file's, and those a shell command read (`cat f`, `sed -n 1,9p f`)
    "files_read": (
        "VARCHAR[]",
        "CASE WHEN role <> 'dev' OR call_id IS NULL THEN NULL WHEN action.type = 'read_file' THEN "
        "[json_extract_string(action.args, '$.path')] ELSE json_transform(json_extract(action.args, '$.files_read'), "
        "'[\"VARCHAR\"]') END",
    ),
    "arg": (_ARGUMENTS_STRUCT, f"json_transform(action.args, {literal(json.dumps(TOOL_ARGUMENTS))})"),
}
_SELECT = ", ".join(
    [f'"{name}"' for name in EVENT_COLUMNS] + [f"{expression} AS {name}" for name, (_, expression) in DERIVED.items()]
)
# Each event's neighbours in its milestone run, also computed at load: its number among the Dev's
# tool calls and the calls one and two before it, its number among the test runs and the run
# before it. That is all the sequence detectors of `stuck_points` look at, so the models need no
# sort. Computed with Arrow kernels over the run's events in order (see `with_neighbours`).
_CALL_FIELDS = {
    "seq": pa.int32(),
    "turn_id": pa.int32(),
    "action_key": pa.uint64(),
    "obs_key": pa.uint64(),
    "ok": pa.bool_(),
}
_TEST_RUN_FIELDS = {
    "seq": pa.int32(),
    "turn_id": pa.int32(),
    "error_signature": pa.string(),
    "cumulative_edits": pa.int32(),
}
NEIGHBOURS = {
    "call_no": "BIGINT",
    "prev_call": "STRUCT(seq INTEGER, turn_id INTEGER, action_key UBIGINT, obs_key UBIGINT, ok BOOLEAN)",
    "call_2_back": "STRUCT(seq INTEGER, turn_id INTEGER, action_key UBIGINT, obs_key UBIGINT, ok BOOLEAN)",
    "test_run_no": "BIGINT",
    "prev_test_run": "STRUCT(seq INTEGER, turn_id INTEGER, error_signature VARCHAR, cumulative_edits INTEGER)",
}
# The whole tool output where the event holds the Dev's cut view (from the milestone's outputs sidecar).
FULL_OBSERVATION = {"full_observation": "VARCHAR"}
# Every column of a loaded event, with its DuckDB type (the empty `raw_events` has them all).
ALL_COLUMNS = {**EVENT_COLUMNS, **{name: kind for name, (kind, _) in DERIVED.items()}, **NEIGHBOURS, **FULL_OBSERVATION}


@dataclass
class BadLine:
    path: str
    line: int
    error: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.error}"


def read_events(root: Path, sources: list[str]) -> tuple[pa.Table, list[BadLine]]:
    """Trajectory files (paths relative to `root`) as one Arrow table with a `source` column, and
    the lines left out (with file and line number). One DuckDB read for the lot; only a file it
    rejects is read again line by line."""
    con = duckdb.connect()
    try:
        bad: list[BadLine] = []
        return _with_full_outputs(with_neighbours(_read_json(con, root, sources)), root, bad), bad
    except duckdb.Error:
        pass
    tables, bad = [], []
    for source in sources:
        try:
            tables.append(_read_json(con, root, [source]))
        except duckdb.Error:  # some line is not a valid event: find which, keep the rest
            good = []
            for number, line in enumerate((root / source).read_bytes().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    Event.model_validate_json(line)
                    good.append(line)
                except ValidationError as e:
                    bad.append(BadLine(source, number, first_error(e)))
            with tempfile.TemporaryDirectory() as scratch:
                (Path(scratch) / source).parent.mkdir(parents=True)
                (Path(scratch) / source).write_bytes(b"\n".join(good) + b"\n")
                tables.append(_read_json(con, Path(scratch), [source]))
    return _with_full_outputs(with_neighbours(pa.concat_tables(tables)), root, bad), bad


def _with_full_outputs(events: pa.Table, root: Path, bad: list[BadLine]) -> pa.Table:
    """`events` with the `full_observation` column: null, except where an observation was cut for the Dev. A
    damaged record of an outputs sidecar is a bad line (its byte offset as the line)."""
    cut = pc.fill_null(events.column("observation_cut"), False)
    rows = pc.indices_nonzero(cut).to_pylist()
    values: list[str | None] = [None] * events.num_rows
    outputs: dict[str, dict[int, str]] = {}
    sources, seqs = events.column("source"), events.column("seq")
    for row in rows:
        source = sources[row].as_py()
        if source not in outputs:
            sidecar, damaged = RunFiles((root / source).parent).outputs, []
            outputs[source] = read_outputs(sidecar, damaged=damaged)
            where = sidecar.relative_to(root).as_posix()
            bad += [
                BadLine(where, offset, "a damaged output record: its whole output is missing") for offset in damaged
            ]
        values[row] = outputs[source].get(seqs[row].as_py())
    return events.append_column("full_observation", pa.array(values, pa.string()))


def with_neighbours(events: pa.Table) -> pa.Table:
    """`events` (one run's) with the NEIGHBOURS columns, in (milestone run, seq) order. The files
    are in that order already (the Recorder appends), so usually nothing is sorted."""
    milestone_run, seq = events.column("mrun"), events.column("seq")
    if events.num_rows > 1:
        same_run = pc.equal(milestone_run[1:], milestone_run[:-1])
        if not pc.all(pc.or_(pc.invert(same_run), pc.greater(seq[1:], seq[:-1]))).as_py():
            events = events.sort_by([("mrun", "ascending"), ("seq", "ascending")])
    ok = pc.fill_null(events.column("ok"), True)
    calls = events.set_column(events.schema.get_field_index("ok"), "ok", ok)
    call_no, prev_call, call_2_back = _neighbours(calls, events.column("is_tool"), _CALL_FIELDS, back=2)
    test_run_no, prev_test_run, _ = _neighbours(events, events.column("is_test_run"), _TEST_RUN_FIELDS, back=1)
    columns = {
        "call_no": call_no,
        "prev_call": prev_call,
        "call_2_back": call_2_back,
        "test_run_no": test_run_no,
        "prev_test_run": prev_test_run,
    }
    for name, column in columns.items():
        events = events.append_column(name, column)
    return events


def _neighbours(events: pa.Table, mask: pa.ChunkedArray, fields: dict[str, pa.DataType], back: int):
    """For the rows where `mask` holds, taken in order: each row's number within its milestone
    run and, per k in 1..back, the `fields` of the row k before it in that run (a struct; null
    for rows outside `mask` or without such a row). Returns [number, 1 back, 2 back, ...]."""
    mask = pc.fill_null(mask, False)
    rows = events.select(["mrun", *fields]).filter(mask)
    count = rows.num_rows
    group = rows.column("mrun").combine_chunks()
    index = pc.subtract(pc.cumulative_sum(pc.fill_null(pa.nulls(count, pa.int64()), 1)), 1)  # 0, 1, ..., n - 1
    new_group = pa.concat_arrays([pa.array([True] * min(count, 1), pa.bool_()), pc.not_equal(group[1:], group[:-1])])
    number = pc.add(pc.subtract(index, pc.fill_null_forward(pc.if_else(new_group, index, None))), 1)
    out = [number]
    for step in range(1, back + 1):
        earlier = pa.concat_arrays([pa.nulls(min(count, step), group.type), group[: max(count - step, 0)]])
        has = pc.equal(group, earlier)
        shifted = [
            pa.concat_arrays(
                [
                    pa.nulls(min(count, step), kind),
                    rows.column(name).combine_chunks().cast(kind)[: max(count - step, 0)],
                ]
            )
            for name, kind in fields.items()
        ]
        out.append(pa.StructArray.from_arrays(shifted, names=list(fields), mask=pc.invert(pc.fill_null(has, False))))
    # back to one value per event: the i-th masked event gets the i-th value
    position = pc.if_else(mask, pc.subtract(pc.cumulative_sum(pc.cast(mask, pa.int64())), 1), None)
    return [column.take(position) for column in out] + [None] * (2 - back)


def _read_json(con: duckdb.DuckDBPyConnection, root: Path, sources: list[str]) -> pa.Table:
    prefix = str(root) + "/"
    query = (
        f"SELECT replace(filename, ?, '') AS source, {_SELECT} "
        "FROM read_json(?, format='newline_delimited', columns=?, filename=true)"
    )
    return con.sql(query, params=[prefix, [prefix + source for source in sources], EVENT_COLUMNS]).to_arrow_table()
