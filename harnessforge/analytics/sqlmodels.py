"""The `dbt_like_sql/` runner: plain SQL files, one model each, built in dependency order.

A model is `<name>.sql`. Its first line names how it is materialized, `-- materialization: view`
or `-- materialization: table`; the comment lines after it say what it is. In the body,
`{{ ref('other') }}` is another model (and orders the build) and `{{ var('name') }}` is a threshold
from the rules' `analytics` section, written in as a SQL literal (a mapping becomes a list of
`{'key', 'value'}` structs to `unnest`). A cycle or an unknown ref is an error naming the file.

Each model gets a hash of its SQL, the values of the vars it reads and its upstream models'
hashes: a changed threshold changes exactly the models that depend on it (recorded in
`hf_models`, and usable as a Dagster code version).

The models ship inside the distribution as the `dbt_like_sql` package's data, so `SQL_DIR` is found
through `importlib.resources` wherever the project is installed (editable or not).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import duckdb

from ..errors import ConfigError
from ..store import no_space

SQL_PACKAGE = "dbt_like_sql"
SQL_DIR: Traversable = files(SQL_PACKAGE)
_HEADER = re.compile(r"^--\s*materialization:\s*(\w+)\s*$")
_REF = re.compile(r"\{\{\s*ref\(\s*'([^']+)'\s*\)\s*\}\}")
_VAR = re.compile(r"\{\{\s*var\(\s*'([^']+)'\s*\)\s*\}\}")


@dataclass(frozen=True)
class SqlModel:
    name: str
    path: Traversable
    materialization: str
    body: str
    refs: tuple[str, ...]
    variables: tuple[str, ...]


@dataclass(frozen=True)
class BuiltModel:
    name: str
    materialization: str
    rows: int
    hash: str


def discover(directory: Traversable = SQL_DIR) -> dict[str, SqlModel]:
    """Every `*.sql` model of `directory`, checked: a header, known refs, no cycle."""
    if not directory.is_dir():
        raise ConfigError(f"no SQL models directory at {directory}")
    models = {}
    files = (entry for entry in directory.iterdir() if entry.name.endswith(".sql"))
    for path in sorted(files, key=lambda entry: entry.name):
        text = path.read_text()
        first = text.splitlines()[0] if text.strip() else ""
        header = _HEADER.match(first)
        if not header or header[1] not in ("view", "table"):
            raise ConfigError(f"{path.name}: the first line must be '-- materialization: view' or '... table'")
        name = path.name.removesuffix(".sql")
        models[name] = SqlModel(
            name,
            path,
            header[1],
            text,
            tuple(dict.fromkeys(_REF.findall(text))),
            tuple(dict.fromkeys(_VAR.findall(text))),
        )
    for model in models.values():
        unknown = [ref for ref in model.refs if ref not in models]
        if unknown:
            raise ConfigError(f"{model.path.name}: ref to unknown model(s) {', '.join(unknown)}")
    order(models)
    return models


def order(models: dict[str, SqlModel]) -> list[str]:
    """Model names, each after the models it refers to."""
    try:
        return list(TopologicalSorter({model.name: set(model.refs) for model in models.values()}).static_order())
    except CycleError as e:
        cycle = e.args[1]
        raise ConfigError(
            f"SQL models refer to each other in a cycle: {' -> '.join(f'{name}.sql' for name in cycle)}"
        ) from None


def literal(value: Any) -> str:
    """A Python value as a DuckDB literal: a model's `var()` is compiled into its SQL (a view cannot
    take parameters), as dbt renders its vars."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dict):
        pairs = (f"{{'key': {literal(key)}, 'value': {literal(item)}}}" for key, item in value.items())
        return "[" + ", ".join(pairs) + "]"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} {value!r} into SQL")


def render(model: SqlModel, variables: dict[str, Any]) -> str:
    missing = [name for name in model.variables if name not in variables]
    if missing:
        raise ConfigError(f"{model.path.name}: var(s) {', '.join(missing)} not in the rules' analytics section")
    sql = _REF.sub(lambda ref: ref[1], model.body)
    return _VAR.sub(lambda var: literal(variables[var[1]]), sql)


def hashes(models: dict[str, SqlModel], variables: dict[str, Any]) -> dict[str, str]:
    """Per model: SQL + the vars it reads + its upstream hashes. What a changed threshold touches."""
    digests: dict[str, str] = {}
    for name in order(models):
        model = models[name]
        used = {variable: variables.get(variable) for variable in model.variables}
        parts = [model.body, json.dumps(used, sort_keys=True)] + [digests[ref] for ref in model.refs]
        digests[name] = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
    return digests


def build(
    con: duckdb.DuckDBPyConnection, variables: dict[str, Any], directory: Traversable = SQL_DIR
) -> list[BuiltModel]:
    """Create or replace every model, in dependency order, and record them in `hf_models`."""
    models = discover(directory)
    digest = hashes(models, variables)
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_models (name VARCHAR PRIMARY KEY, materialization VARCHAR, "
        "hash VARCHAR, rows BIGINT, built_at TIMESTAMPTZ)"
    )
    built = []
    for name in order(models):
        model = models[name]
        sql = render(model, variables)
        kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()
        if kind and (kind[0] == "VIEW") != (model.materialization == "view"):  # materialization changed
            con.execute(f"DROP {'VIEW' if kind[0] == 'VIEW' else 'TABLE'} {name}")
        try:
            con.execute(f"CREATE OR REPLACE {model.materialization.upper()} {name} AS\n{sql}")
        except duckdb.Error as e:
            if no_space(e):  # the disk, not the model's SQL
                raise
            raise ConfigError(f"{model.path.name}: {str(e).splitlines()[0]}") from None
        rows = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        con.execute(
            "INSERT OR REPLACE INTO hf_models VALUES (?, ?, ?, ?, now())",
            [name, model.materialization, digest[name], rows],
        )
        built.append(BuiltModel(name, model.materialization, rows, digest[name]))
    return built
