"""The `dbt_like_sql/` runner: plain SQL files, one model each, built in dependency order.

A model is `<name>.sql`. Its first line names how it is materialized, `-- materialization: view`
or `-- materialization: table`; the comment lines after it say what it is, and may declare
- `-- partitioned_by: repo, milestone_id` (or `repo`): the model's rows of one milestone (or one repo)
  are computed from that milestone's (repo's) rows alone, so it can be rebuilt slice by slice
  (`slices.build_slices`); without it the model is rebuilt whole;
- `-- unique: repo, run_id, milestone_id, seq`: no two rows share these columns (a check);
- `-- one_row_per: raw_milestones`: a row for every row of that source (a check).

In the body, `{{ ref('other') }}` is another model (and orders the build), `{{ source('raw_events') }}`
a table `load` fills (`SOURCES`), and `{{ var('name') }}` a threshold from the rules' `analytics`
section, written in as a SQL literal (a mapping becomes a list of `{'key', 'value'}` structs to
`unnest`). A cycle, an unknown ref or source, or a bad declaration is an error naming the file.

Each model gets a hash of its SQL, the values of the vars it reads and its upstream models'
hashes: a changed threshold changes exactly the models that depend on it (recorded in
`hf_models`, and the model's Dagster code version).

The models ship inside the distribution as the `dbt_like_sql` package's data, so `SQL_DIR` is found
through `importlib.resources` wherever the project is installed (editable or not).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import duckdb

from ..atomic import no_space
from ..errors import ConfigError

SQL_PACKAGE = "dbt_like_sql"
SQL_DIR: Traversable = files(SQL_PACKAGE)
MILESTONE = ("repo", "milestone_id")  # a slice of one milestone's runs: the Dagster repo x milestone partition
REPO = ("repo",)  # a slice of one repo's runs: the Dagster repo partition
GRAINS = {", ".join(grain): grain for grain in (MILESTONE, REPO)}


@dataclass(frozen=True)
class Source:
    """A table `load` fills: the partition columns it has, and its key (what `one_row_per` counts)."""

    partitioned_by: tuple[str, ...]
    key: tuple[str, ...]


SOURCES = {
    "raw_events": Source(MILESTONE, ("repo", "run_id", "milestone_id", "seq")),
    "raw_milestones": Source(MILESTONE, ("repo", "run_id", "milestone_id")),
    "raw_runs": Source(REPO, ("repo", "run_id")),  # one row per run: read by every milestone of it
}
_HEADER = re.compile(r"^--\s*materialization:\s*(\w+)\s*$")
_DECLARATION = re.compile(r"^--\s*(partitioned_by|unique|one_row_per):\s*(.*?)\s*$")
_REF = re.compile(r"\{\{\s*ref\(\s*'([^']+)'\s*\)\s*\}\}")
_SOURCE = re.compile(r"\{\{\s*source\(\s*'([^']+)'\s*\)\s*\}\}")
_VAR = re.compile(r"\{\{\s*var\(\s*'([^']+)'\s*\)\s*\}\}")


@dataclass(frozen=True)
class SqlModel:
    name: str
    path: Traversable
    materialization: str
    body: str
    refs: tuple[str, ...]
    variables: tuple[str, ...]
    sources: tuple[str, ...] = ()
    partitioned_by: tuple[str, ...] = ()  # () : rebuilt whole
    unique: tuple[str, ...] = ()
    one_row_per: str | None = None

    def checks(self) -> dict[str, str]:
        """The checks its declarations ask for: name -> what it asserts."""
        found = {}
        if self.unique:
            found["unique"] = f"No two rows of a partition share ({', '.join(self.unique)})."
        if self.one_row_per:
            key = ", ".join(SOURCES[self.one_row_per].key)
            found[f"one_row_per_{self.one_row_per}"] = f"Every row of {self.one_row_per} has a row here (by {key})."
        return found

    @property
    def description(self) -> str:
        """The comment lines after the header, without the declarations."""
        lines = []
        for line in self.body.splitlines()[1:]:
            if not line.startswith("--"):
                break
            if not _DECLARATION.match(line):
                lines.append(line.removeprefix("--").strip())
        return " ".join(lines)


@dataclass(frozen=True)
class SliceStats:
    """One partition's rows of a model after a build: how many, a hash of them (its data version),
    and what its checks found (check name -> problems; empty when it passed)."""

    rows: int
    version: str
    problems: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class BuiltModel:
    name: str
    materialization: str
    rows: int
    hash: str
    slices: dict[tuple[str, ...], SliceStats] = field(default_factory=dict)  # by partition key (slice builds)
    whole: bool = True  # rebuilt whole (a slice build falls back to it when the table's columns changed)


def discover(directory: Traversable = SQL_DIR) -> dict[str, SqlModel]:
    """Every `*.sql` model of `directory`, checked: a header, known refs and sources, no cycle."""
    if not directory.is_dir():
        raise ConfigError(f"no SQL models directory at {directory}")
    models = {}
    entries = (entry for entry in directory.iterdir() if entry.name.endswith(".sql"))
    for path in sorted(entries, key=lambda entry: entry.name):
        model = _parse(path, path.read_text())
        models[model.name] = model
    for model in models.values():
        unknown = [ref for ref in model.refs if ref not in models]
        if unknown:
            raise ConfigError(f"{model.path.name}: ref to unknown model(s) {', '.join(unknown)}")
    order(models)
    return models


def _parse(path: Traversable, text: str) -> SqlModel:
    lines = text.splitlines()
    header = _HEADER.match(lines[0] if lines else "")
    if not header or header[1] not in ("view", "table"):
        raise ConfigError(f"{path.name}: the first line must be '-- materialization: view' or '... table'")
    declared: dict[str, str] = {}
    for line in lines[1:]:
        if not line.startswith("--"):
            break
        found = _DECLARATION.match(line)
        if found:
            declared[found[1]] = found[2]
    grain = declared.get("partitioned_by")
    if grain is not None and grain not in GRAINS:
        raise ConfigError(f"{path.name}: partitioned_by must be {' or '.join(repr(g) for g in GRAINS)}, not {grain!r}")
    sources = tuple(dict.fromkeys(_SOURCE.findall(text)))
    unknown = [source for source in sources if source not in SOURCES]
    if unknown:
        raise ConfigError(f"{path.name}: unknown source(s) {', '.join(unknown)} (known: {', '.join(SOURCES)})")
    per = declared.get("one_row_per")
    if per is not None and per not in SOURCES:
        raise ConfigError(f"{path.name}: one_row_per names a source ({', '.join(SOURCES)}), not {per!r}")
    unique = tuple(column.strip() for column in declared.get("unique", "").split(",") if column.strip())
    return SqlModel(
        path.name.removesuffix(".sql"),
        path,
        header[1],
        text,
        tuple(dict.fromkeys(_REF.findall(text))),
        tuple(dict.fromkeys(_VAR.findall(text))),
        sources,
        GRAINS[grain] if grain else (),
        unique,
        per,
    )


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


def render(model: SqlModel, variables: dict[str, Any], relation: Callable[[str], str] = str) -> str:
    """The model's SQL: each ref and source as `relation(name)` (the name itself, or a slice of it), each
    var as its literal."""
    missing = [name for name in model.variables if name not in variables]
    if missing:
        raise ConfigError(f"{model.path.name}: var(s) {', '.join(missing)} not in the rules' analytics section")
    sql = _REF.sub(lambda ref: relation(ref[1]), model.body)
    sql = _SOURCE.sub(lambda source: relation(source[1]), sql)
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


def execute(con: duckdb.DuckDBPyConnection, model: SqlModel, sql: str) -> None:
    """Run a statement of `model`'s; its SQL's error names the file (a full disk stays the disk's)."""
    try:
        con.execute(sql)
    except duckdb.Error as e:
        if no_space(e):
            raise
        raise ConfigError(f"{model.path.name}: {str(e).splitlines()[0]}") from None


def record(
    con: duckdb.DuckDBPyConnection, built: list[tuple[SqlModel, str]], rows: list[int | None] | None = None
) -> None:
    """`hf_models`: the hash each model was last built with (and its rows, after a whole build)."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS hf_models (name VARCHAR PRIMARY KEY, materialization VARCHAR, "
        "hash VARCHAR, rows BIGINT, built_at TIMESTAMPTZ)"
    )
    counts = rows or [None] * len(built)
    for (model, digest), count in zip(built, counts, strict=True):
        values = [model.name, model.materialization, digest, count]
        con.execute("INSERT OR REPLACE INTO hf_models VALUES (?, ?, ?, ?, now())", values)


def create(con: duckdb.DuckDBPyConnection, model: SqlModel, variables: dict[str, Any]) -> None:
    """Create or replace the model whole (replacing a view by a table or back when that changed)."""
    kind = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_name = ? AND table_catalog <> 'temp'",
        [model.name],
    ).fetchone()
    if kind and (kind[0] == "VIEW") != (model.materialization == "view"):  # materialization changed
        con.execute(f"DROP {'VIEW' if kind[0] == 'VIEW' else 'TABLE'} {model.name}")
    sql = f"CREATE OR REPLACE {model.materialization.upper()} {model.name} AS\n{render(model, variables)}"
    execute(con, model, sql)


def build(
    con: duckdb.DuckDBPyConnection,
    variables: dict[str, Any],
    directory: Traversable = SQL_DIR,
    only: Iterable[str] | None = None,
) -> list[BuiltModel]:
    """Create or replace every model (or those named in `only`), whole, in dependency order, and record
    them in `hf_models`."""
    models = discover(directory)
    digest = hashes(models, variables)
    wanted = set(models if only is None else only)
    built = []
    for name in order(models):
        if name not in wanted:
            continue
        model = models[name]
        create(con, model, variables)
        rows = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        record(con, [(model, digest[name])], [rows])
        built.append(BuiltModel(name, model.materialization, rows, digest[name]))
    return built
