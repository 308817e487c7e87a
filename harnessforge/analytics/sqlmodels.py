"""The `dbt_like_sql/` runner: plain SQL files, one model each, built in dependency order.

A model is `<name>.sql`. Its first line names how it is materialized, `-- materialization: view`
or `-- materialization: table`; the comment lines after it say what it is. In the body,
`{{ ref('other') }}` is another model (and orders the build) and `{{ var('name') }}` is a threshold
from the rules' `analytics` section, written in as a SQL literal (a mapping becomes a list of
`{'key', 'value'}` structs to `unnest`). A cycle or an unknown ref is an error naming the file.

Each model gets a hash of its SQL, the values of the vars it reads and its upstream models'
hashes: a changed threshold changes exactly the models that depend on it (recorded in
`hf_models`, and usable as a Dagster code version).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import duckdb

from ..errors import ConfigError
from ..store import no_space

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"
_HEADER = re.compile(r"^--\s*materialization:\s*(\w+)\s*$")
_REF = re.compile(r"\{\{\s*ref\(\s*'([^']+)'\s*\)\s*\}\}")
_VAR = re.compile(r"\{\{\s*var\(\s*'([^']+)'\s*\)\s*\}\}")


@dataclass(frozen=True)
class SqlModel:
    name: str
    path: Path
    materialization: str
    body: str
    refs: tuple[str, ...]
    vars: tuple[str, ...]


@dataclass(frozen=True)
class BuiltModel:
    name: str
    materialization: str
    rows: int
    hash: str


def discover(directory: Path = SQL_DIR) -> dict[str, SqlModel]:
    """Every `*.sql` model of `directory`, checked: a header, known refs, no cycle."""
    if not directory.is_dir():
        raise ConfigError(f"no SQL models directory at {directory}")
    models = {}
    for path in sorted(directory.glob("*.sql")):
        text = path.read_text()
        first = text.splitlines()[0] if text.strip() else ""
        m = _HEADER.match(first)
        if not m or m[1] not in ("view", "table"):
            raise ConfigError(f"{path.name}: the first line must be '-- materialization: view' or '... table'")
        models[path.stem] = SqlModel(
            path.stem,
            path,
            m[1],
            text,
            tuple(dict.fromkeys(_REF.findall(text))),
            tuple(dict.fromkeys(_VAR.findall(text))),
        )
    for model in models.values():
        unknown = [r for r in model.refs if r not in models]
        if unknown:
            raise ConfigError(f"{model.path.name}: ref to unknown model(s) {', '.join(unknown)}")
    order(models)
    return models


def order(models: dict[str, SqlModel]) -> list[str]:
    """Model names, each after the models it refers to."""
    try:
        return list(TopologicalSorter({m.name: set(m.refs) for m in models.values()}).static_order())
    except CycleError as e:
        cycle = e.args[1]
        raise ConfigError(
            f"SQL models refer to each other in a cycle: {' -> '.join(f'{n}.sql' for n in cycle)}"
        ) from None


def literal(value: Any) -> str:
    """A Python value as a DuckDB literal."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dict):
        return "[" + ", ".join(f"{{'key': {literal(k)}, 'value': {literal(v)}}}" for k, v in value.items()) + "]"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} {value!r} into SQL")


def render(model: SqlModel, variables: dict[str, Any]) -> str:
    missing = [v for v in model.vars if v not in variables]
    if missing:
        raise ConfigError(f"{model.path.name}: var(s) {', '.join(missing)} not in the rules' analytics section")
    sql = _REF.sub(lambda m: m[1], model.body)
    return _VAR.sub(lambda m: literal(variables[m[1]]), sql)


def hashes(models: dict[str, SqlModel], variables: dict[str, Any]) -> dict[str, str]:
    """Per model: SQL + the vars it reads + its upstream hashes. What a changed threshold touches."""
    out: dict[str, str] = {}
    for name in order(models):
        m = models[name]
        used = {v: variables.get(v) for v in m.vars}
        parts = [m.body, json.dumps(used, sort_keys=True)] + [out[r] for r in m.refs]
        out[name] = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
    return out


def build(con: duckdb.DuckDBPyConnection, variables: dict[str, Any], directory: Path = SQL_DIR) -> list[BuiltModel]:
    """Create or replace every model, in dependency order, and record them in `hf_models`."""
    models = discover(directory)
    digest = hashes(models, variables)
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_models (name VARCHAR PRIMARY KEY, materialization VARCHAR, "
        "hash VARCHAR, rows BIGINT, built_at TIMESTAMPTZ)"
    )
    built = []
    for name in order(models):
        m = models[name]
        sql = render(m, variables)
        kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()
        if kind and (kind[0] == "VIEW") != (m.materialization == "view"):  # materialization changed
            con.execute(f"DROP {'VIEW' if kind[0] == 'VIEW' else 'TABLE'} {name}")
        try:
            con.execute(f"CREATE OR REPLACE {m.materialization.upper()} {name} AS\n{sql}")
        except duckdb.Error as e:
            if no_space(e):  # the disk, not the model's SQL
                raise
            raise ConfigError(f"{m.path.name}: {str(e).splitlines()[0]}") from None
        rows = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        con.execute(
            "INSERT OR REPLACE INTO hf_models VALUES (?, ?, ?, ?, now())", [name, m.materialization, digest[name], rows]
        )
        built.append(BuiltModel(name, m.materialization, rows, digest[name]))
    return built
