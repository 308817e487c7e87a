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
    built = []
    for name in order(models):
        if name not in expanded:
            continue
        model = models[name]
        sql = _within(f"(\n{render(model, variables, cut)}\n)", _shared(model, where))
        if name not in targets or model.materialization == "view":
            execute(con, model, f"CREATE OR REPLACE TEMP VIEW {cut(name)} AS {sql}")
            if name in targets:
                create(con, model, variables)  # the view itself, as the SQL now defines it
                record(con, model, digest[name], None)
                built.append(_built(con, model, digest[name], where))
            continue
        execute(con, model, f"CREATE OR REPLACE TEMP TABLE {cut(name)} AS {sql}")
        whole = not _same_columns(con, name)
        if whole:
            create(con, model, variables)
        else:
            on = " AND ".join(f"{name}.{column} = k.{column}" for column in where.columns)
            con.execute(f"DELETE FROM {name} USING {_keys(where.columns)} k WHERE {on}")
            con.execute(f"INSERT INTO {name} SELECT * FROM {cut(name)}")
        record(con, model, digest[name], con.execute(f"SELECT count(*) FROM {name}").fetchone()[0])
        built.append(_built(con, model, digest[name], where, whole))
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


def _columns(con: duckdb.DuckDBPyConnection, name: str, temp: bool) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? AND "
        f"table_catalog {'=' if temp else '<>'} 'temp' ORDER BY ordinal_position",
        [name],
    ).fetchall()


def _same_columns(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Is `name` a table with exactly the columns of its new cut (so rows can be swapped in)?"""
    kind = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_name = ? AND table_catalog <> 'temp'", [name]
    ).fetchone()
    return bool(kind) and kind[0] == "BASE TABLE" and _columns(con, name, False) == _columns(con, cut(name), True)


def _built(
    con: duckdb.DuckDBPyConnection,
    model: SqlModel,
    digest: str,
    where: Slice,
    whole: bool = False,
) -> BuiltModel:
    """The model's `BuiltModel` with each key's rows, data version and check problems."""
    counted = slice_stats(con, cut(model.name), where)
    problems = _problems(con, model, where)
    slices = {key: SliceStats(rows, version, problems.get(key, {})) for key, (rows, version) in counted.items()}
    total = sum(stats.rows for stats in slices.values())
    return BuiltModel(model.name, model.materialization, total, digest, slices, whole)


def slice_stats(con: duckdb.DuckDBPyConnection, relation: str, where: Slice) -> dict[tuple[str, ...], tuple[int, str]]:
    """Per key of `where`: the rows of `relation` (which has the slice's columns) and a hash of them,
    independent of their order: its data version."""
    columns = ", ".join(where.columns)
    _register(con, where)
    within = _within(relation, list(where.columns))
    rows = con.execute(
        f"SELECT {columns}, coalesce(s.n, 0), s.total FROM _hf_slice LEFT JOIN ("
        f"SELECT {columns}, count(*) AS n, sum(hash(t))::VARCHAR AS total FROM ({within}) t GROUP BY ALL"
        f") s USING ({columns})"
    ).fetchall()
    width = len(where.columns)
    return {tuple(row[:width]): (row[width], _version(row[width], row[width + 1])) for row in rows}


def _version(rows: int, total: str | None) -> str:
    return hashlib.sha256(f"{rows}:{total}".encode()).hexdigest()[:16]


def _problems(
    con: duckdb.DuckDBPyConnection, model: SqlModel, where: Slice
) -> dict[tuple[str, ...], dict[str, list[str]]]:
    """Per key, what each declared check found in the model's cut (every check listed, empty: passed)."""
    found: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for key in where.keys:
        found[key] = {name: [] for name in model.checks()}
    width = len(where.columns)
    columns = ", ".join(where.columns)
    if model.unique:
        key = ", ".join(model.unique)
        repeated = con.execute(
            f"SELECT {columns}, {key}, count(*) AS n FROM {cut(model.name)} GROUP BY ALL HAVING count(*) > 1 "
            f"ORDER BY ALL"
        ).fetchall()
        for row in repeated:
            values = ", ".join(f"{column}={value}" for column, value in zip(model.unique, row[width:-1], strict=True))
            _add(found, tuple(row[:width]), "unique", f"{values}: {row[-1]} rows")
    if model.one_row_per:
        source = SOURCES[model.one_row_per]
        key = ", ".join(source.key)
        missing = con.execute(
            f"SELECT {columns}, {key} FROM {cut(model.one_row_per)} ANTI JOIN {cut(model.name)} USING ({key}) "
            "ORDER BY ALL"
        ).fetchall()
        for row in missing:
            values = ", ".join(f"{column}={value}" for column, value in zip(source.key, row[width:], strict=True))
            _add(found, tuple(row[:width]), f"one_row_per_{model.one_row_per}", f"no row for {values}")
    return found


def _add(found: dict, key: tuple, check: str, problem: str) -> None:
    problems = found.setdefault(key, {}).setdefault(check, [])
    if len(problems) < EXAMPLES:
        problems.append(problem)
    elif len(problems) == EXAMPLES:
        problems.append("...")
