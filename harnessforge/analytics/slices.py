"""Models rebuilt slice by slice: the rows of some milestones (or repos) computed again from those
milestones' rows alone, then swapped in for the old ones; the other rows are not read.

A model declaring `-- partitioned_by: repo, milestone_id` is rebuilt for a `Slice` of (repo, milestone)
keys like this: the sources are cut to the slice first (one scan each, into temporary tables), every
model it reads is rendered over those cuts (a view's cut is a temporary view, a table not rebuilt
now is read as it stands, cut to the slice), the model's own cut is computed into a temporary table,
and the table's rows of the slice are deleted and inserted again from it. Views stay views: their
definition is replaced, their cut is only read. The result equals a whole rebuild, row for row
(tests/test_analytics_slices.py checks it on several stores), and costs the slice's share.

Each rebuilt model reports, per key, its rows, a data version (a hash of the rows: an unchanged
re-run gives the same one) and the problems its declared checks found (`SqlModel.checks`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import ArtifactError, ConfigError
from .sqlmodels import (
    MILESTONE,
    REPO,
    SOURCES,
    SQL_DIR,
    BuiltModel,
    SliceStats,
    SqlModel,
    create,
    discover,
    execute,
    hashes,
    literal,
    order,
    record,
    render,
)

EXAMPLES = 5  # problems named per check and partition


@dataclass(frozen=True)
class Slice:
    """Some partitions' rows: `columns` name the partition columns, `keys` their values."""

    columns: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]

    @classmethod
    def of_milestones(cls, pairs: Iterable[tuple[str, str]]) -> Slice:
        return cls(MILESTONE, tuple(sorted({(repo, milestone) for repo, milestone in pairs})))

    @classmethod
    def of_repos(cls, repos: Iterable[str]) -> Slice:
        return cls(REPO, tuple(sorted({(repo,) for repo in repos})))

    def repos(self) -> list[str]:
        return sorted({key[0] for key in self.keys})


def cut(name: str) -> str:
    """The temporary relation holding `name`'s rows of the slice being built."""
    return f"_hf_slice_{name}"


def build_slices(
    con: duckdb.DuckDBPyConnection,
    variables: dict[str, Any],
    where: Slice,
    only: Iterable[str] | None = None,
    directory: Traversable = SQL_DIR,
    sources: Mapping[str, str] | None = None,
) -> list[BuiltModel]:
    """Rebuild the rows of `where` of every model partitioned like it (or of those named in `only`),
    in dependency order. `sources` may give a source a narrower relation to cut from (the loader's
    files of the slice's repos). A model whose table is missing or whose columns changed is rebuilt
    whole instead (`BuiltModel.whole`)."""
    models = discover(directory)
    digest = hashes(models, variables)
    targets = [name for name in order(models) if (only is None or name in set(only))]
    if only is None:
        targets = [name for name in targets if models[name].partitioned_by == where.columns]
    for name in targets:
        if models[name].partitioned_by != where.columns:
            grain = ", ".join(models[name].partitioned_by) or "nothing (rebuilt whole)"
            by = ", ".join(where.columns)
            raise ConfigError(f"{name}.sql is partitioned by {grain}; it cannot be rebuilt by {by}")
    expanded, stored = _needed(models, targets)
    _register(con, where)
    cuts = {source for name in expanded for source in models[name].sources}
    cuts |= {models[name].one_row_per for name in targets if models[name].one_row_per}
    for source in sorted(cuts):
        relation = (sources or {}).get(source, source)
        columns = [column for column in SOURCES[source].partitioned_by if column in where.columns]
        con.execute(f"CREATE OR REPLACE TEMP TABLE {cut(source)} AS {_within(relation, columns)}")
    for name in stored:
        if not _exists(con, name):
            raise ArtifactError(f"{name}: not built yet; build it whole (`harnessforge distill`) or by partition first")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {cut(name)} AS {_within(name, _shared(models[name], where))}")
    for name in order(models):  # every cut first, in dependency order: a view's as a view, a table's computed
        if name in expanded:
            model = models[name]
            kind = "TABLE" if name in targets and model.materialization == "table" else "VIEW"
            sql = _within(f"(\n{render(model, variables, cut)}\n)", _shared(model, where))
            execute(con, model, f"CREATE OR REPLACE TEMP {kind} {cut(name)} AS {sql}")
    recorded = _recorded(con)
    same = _same_columns(con, [name for name in targets if models[name].materialization == "table"])
    whole = set()
    for name in targets:  # then the rows swapped in (a view: its definition replaced, when it changed)
        model = models[name]
        if model.materialization == "view":
            if recorded.get(name) != digest[name] or not _exists(con, name):
                create(con, model, variables)
        elif name in same:
            on = " AND ".join(f"{name}.{column} = k.{column}" for column in where.columns)
            con.execute(f"DELETE FROM {name} USING {_keys(where.columns)} k WHERE {on}")
            con.execute(f"INSERT INTO {name} SELECT * FROM {cut(name)}")
        else:  # a new table, or new columns: rebuilt whole
            create(con, model, variables)
            whole.add(name)
    record(con, [(models[name], digest[name]) for name in targets])
    stats = slice_stats(con, {name: cut(name) for name in targets}, where, registered=True)
    problems = _problems(con, [models[name] for name in targets], where)
    built = []
    for name in targets:
        model = models[name]
        slices = {key: SliceStats(rows, version, problems[name][key]) for key, (rows, version) in stats[name].items()}
        total = sum(item.rows for item in slices.values())
        built.append(BuiltModel(name, model.materialization, total, digest[name], slices, name in whole))
    return built


def _needed(models: dict[str, SqlModel], targets: list[str]) -> tuple[set[str], set[str]]:
    """(models rendered over the slice's cuts, tables read as they stand): from the targets, every view
    and target they read, through views; a table that is not a target is read, not rebuilt."""
    expanded, stored, todo = set(), set(), list(targets)
    while todo:
        name = todo.pop()
        if name in expanded:
            continue
        expanded.add(name)
        for ref in models[name].refs:
            if ref in targets or models[ref].materialization == "view":
                todo.append(ref)
            else:
                stored.add(ref)
    return expanded, stored


def _shared(model: SqlModel, where: Slice) -> list[str]:
    return [column for column in model.partitioned_by if column in where.columns]


def _keys(columns: Iterable[str]) -> str:
    return f"(SELECT DISTINCT {', '.join(columns)} FROM _hf_slice)"


def _within(relation: str, columns: list[str]) -> str:
    """`relation`'s rows whose `columns` match a key of the slice (all of them when `columns` is empty)."""
    if not columns:
        return f"SELECT * FROM {relation}"
    on = " AND ".join(f"t.{column} = k.{column}" for column in columns)
    return f"SELECT t.* FROM {relation} t SEMI JOIN {_keys(columns)} k ON {on}"


def _register(con: duckdb.DuckDBPyConnection, where: Slice) -> None:
    keys = pa.table({column: [key[i] for key in where.keys] for i, column in enumerate(where.columns)})
    con.register("_hf_slice_keys", keys)
    con.execute("CREATE OR REPLACE TEMP TABLE _hf_slice AS SELECT * FROM _hf_slice_keys")
    con.unregister("_hf_slice_keys")


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ? AND table_catalog <> 'temp'", [name]
    )
    return found.fetchone()[0] > 0


def _recorded(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The hash each model was last built with (`hf_models`)."""
    if not _exists(con, "hf_models"):
        return {}
    return dict(con.execute("SELECT name, hash FROM hf_models").fetchall())


def _same_columns(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[str]:
    """Those of `names` whose table has exactly the columns of its new cut (so rows can be swapped in)."""
    rows = con.execute(
        "SELECT c.table_name, c.table_catalog = 'temp', list(c.column_name || ' ' || c.data_type ORDER BY "
        "c.ordinal_position) FROM information_schema.columns c JOIN information_schema.tables t USING "
        "(table_catalog, table_schema, table_name) WHERE list_contains(?, c.table_name) AND "
        "(t.table_type = 'BASE TABLE' OR c.table_catalog = 'temp') GROUP BY ALL",
        [[*names, *map(cut, names)]],
    ).fetchall()
    found = {(name, temp): columns for name, temp, columns in rows}
    return {name for name in names if (name, False) in found and found[(name, False)] == found.get((cut(name), True))}


def slice_stats(
    con: duckdb.DuckDBPyConnection, relations: dict[str, str], where: Slice, registered: bool = False
) -> dict[str, dict[tuple[str, ...], tuple[int, str]]]:
    """Per relation (which has the slice's columns), per key of `where`: its rows and a hash of them,
    independent of their order (its data version). One query for them all."""
    if not relations:
        return {}
    if not registered:
        _register(con, where)
    columns = ", ".join(where.columns)
    parts = [
        f"SELECT {literal(name)} AS relation, {columns}, count(*) AS n, sum(hash(t))::VARCHAR AS total "
        f"FROM ({_within(relation, list(where.columns))}) t GROUP BY ALL"
        for name, relation in relations.items()
    ]
    rows = con.execute(" UNION ALL ".join(parts)).fetchall()
    found = {(row[0], tuple(row[1:-2])): (row[-2], row[-1]) for row in rows}
    stats: dict[str, dict[tuple[str, ...], tuple[int, str]]] = {}
    for name in relations:
        counted = {key: found.get((name, key), (0, None)) for key in where.keys}
        stats[name] = {key: (rows, _version(rows, total)) for key, (rows, total) in counted.items()}
    return stats


def whole_stats(con: duckdb.DuckDBPyConnection, names: list[str]) -> dict[str, tuple[int, str]]:
    """Per relation: all its rows and a hash of them (the data version of a model rebuilt whole)."""
    if not names:
        return {}
    parts = [f"SELECT {literal(name)}, count(*), sum(hash(t))::VARCHAR FROM {name} t" for name in names]
    rows = con.execute(" UNION ALL ".join(parts)).fetchall()
    return {name: (count, _version(count, total)) for name, count, total in rows}


def _version(rows: int, total: str | None) -> str:
    return hashlib.sha256(f"{rows}:{total}".encode()).hexdigest()[:16]


def _problems(
    con: duckdb.DuckDBPyConnection, models: list[SqlModel], where: Slice
) -> dict[str, dict[tuple[str, ...], dict[str, list[str]]]]:
    """Per model and key, what each declared check found in the model's cut (every check listed; empty:
    passed). One query for every check of every model."""
    found = {model.name: {key: {name: [] for name in model.checks()} for key in where.keys} for model in models}
    columns = ", ".join(where.columns)
    parts = []
    for model in models:
        if model.unique:
            key = " || ', ' || ".join(f"'{column}=' || {column}" for column in model.unique)
            parts.append(
                f"SELECT {literal(model.name)}, 'unique', {columns}, {key} || ': ' || count(*) || ' rows' "
                f"FROM {cut(model.name)} GROUP BY {columns}, {', '.join(model.unique)} HAVING count(*) > 1"
            )
        if model.one_row_per:
            source = SOURCES[model.one_row_per].key
            key = " || ', ' || ".join(f"'{column}=' || s.{column}" for column in source)
            parts.append(
                f"SELECT {literal(model.name)}, {literal(f'one_row_per_{model.one_row_per}')}, "
                f"{', '.join(f's.{column}' for column in where.columns)}, 'no row for ' || {key} "
                f"FROM {cut(model.one_row_per)} s ANTI JOIN {cut(model.name)} m USING ({', '.join(source)})"
            )
    if parts:
        for row in con.execute(" UNION ALL ".join(parts) + " ORDER BY ALL").fetchall():
            _add(found[row[0]], tuple(row[2:-1]), row[1], row[-1])
    return found


def _add(found: dict, key: tuple, check: str, problem: str) -> None:
    problems = found.setdefault(key, {}).setdefault(check, [])
    if len(problems) < EXAMPLES:
        problems.append(problem)
    elif len(problems) == EXAMPLES:
        problems.append("...")
