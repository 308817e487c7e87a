"""The dbt-like SQL runner: dependency order, refs, vars, and errors that name the file."""

import duckdb
import pytest

from harnessforge.analytics.sqlmodels import build, discover, literal, order
from harnessforge.errors import ConfigError


def models(tmp_path, **files: str):
    for name, body in files.items():
        (tmp_path / f"{name}.sql").write_text(body)
    return tmp_path


def test_models_build_in_dependency_order_with_vars(tmp_path):
    directory = models(
        tmp_path,
        a_last="-- materialization: table\nSELECT n * 2 AS n FROM {{ ref('b_middle') }}",
        b_middle="-- materialization: view\nSELECT n FROM {{ ref('c_first') }} WHERE n >= {{ var('least') }}",
        c_first="-- materialization: table\nSELECT unnest([1, 2, 3]) AS n",
    )
    assert order(discover(directory)) == ["c_first", "b_middle", "a_last"]
    con = duckdb.connect()
    built = build(con, {"least": 2}, directory)
    assert [(model.name, model.rows) for model in built] == [("c_first", 3), ("b_middle", 2), ("a_last", 2)]
    assert con.execute("SELECT list(n ORDER BY n) FROM a_last").fetchone()[0] == [4, 6]
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert kinds["b_middle"] == "VIEW" and kinds["a_last"] == "BASE TABLE"
    # a var change touches the models that read it and their dependents, not the others
    again = {model.name: model.hash for model in build(con, {"least": 3}, directory)}
    first = {model.name: model.hash for model in built}
    assert {name for name in first if first[name] != again[name]} == {"b_middle", "a_last"}
    # switching a model's materialization replaces the old object
    (directory / "b_middle.sql").write_text((directory / "b_middle.sql").read_text().replace("view", "table"))
    build(con, {"least": 3}, directory)
    assert con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'b_middle'").fetchone() == (
        "BASE TABLE",
    )


def test_cycles_unknown_refs_headers_and_vars_are_errors_naming_the_file(tmp_path):
    for sub in ("cyc", "unk", "hdr", "var", "bad"):
        (tmp_path / sub).mkdir()
    cyc = models(
        tmp_path / "cyc",
        x="-- materialization: view\nSELECT * FROM {{ ref('y') }}",
        y="-- materialization: view\nSELECT * FROM {{ ref('x') }}",
    )
    with pytest.raises(ConfigError, match=r"cycle: (x\.sql -> y\.sql -> x\.sql|y\.sql -> x\.sql -> y\.sql)"):
        discover(cyc)
    unk = models(tmp_path / "unk", z="-- materialization: view\nSELECT * FROM {{ ref('nowhere') }}")
    with pytest.raises(ConfigError, match=r"z\.sql: ref to unknown model\(s\) nowhere"):
        discover(unk)
    hdr = models(tmp_path / "hdr", h="SELECT 1")
    with pytest.raises(ConfigError, match=r"h\.sql: the first line must be"):
        discover(hdr)
    var = models(tmp_path / "var", v="-- materialization: view\nSELECT {{ var('missing') }}")
    with pytest.raises(ConfigError, match=r"v\.sql: var\(s\) missing not in the rules"):
        build(duckdb.connect(), {}, var)
    bad = models(tmp_path / "bad", b="-- materialization: table\nSELEC oops")
    with pytest.raises(ConfigError, match=r"b\.sql: Parser Error"):
        build(duckdb.connect(), {}, bad)


def test_literals():
    assert literal(3) == "3" and literal(0.5) == "0.5" and literal(True) == "TRUE"
    assert literal("it's") == "'it''s'"
    assert literal({"a": "x"}) == "[{'key': 'a', 'value': 'x'}]"
    with pytest.raises(ConfigError, match="cannot write"):
        literal(object())


def test_declarations_sources_and_their_errors_name_the_file(tmp_path):
    good = models(
        tmp_path,
        summary="-- materialization: table\n-- What it is.\n-- partitioned_by: repo, milestone_id\n"
        "-- unique: repo, run_id\n-- one_row_per: raw_milestones\nSELECT * FROM {{ source('raw_milestones') }}",
    )
    (model,) = discover(good).values()
    assert (model.partitioned_by, model.unique, model.one_row_per) == (
        ("repo", "milestone_id"),
        ("repo", "run_id"),
        "raw_milestones",
    )
    assert model.sources == ("raw_milestones",) and model.description == "What it is."
    assert set(model.checks()) == {"unique", "one_row_per_raw_milestones"}
    for name, body, error in (
        (
            "grain",
            "-- partitioned_by: run_id\nSELECT 1",
            r"grain\.sql: partitioned_by must be 'repo, milestone_id' or 'repo'",
        ),
        ("source", "SELECT * FROM {{ source('raw_nothing') }}", r"source\.sql: unknown source\(s\) raw_nothing"),
        ("per", "-- one_row_per: stg_events\nSELECT 1", r"per\.sql: one_row_per names a source"),
    ):
        (tmp_path / name).mkdir()
        with pytest.raises(ConfigError, match=error):
            discover(models(tmp_path / name, **{name: f"-- materialization: view\n{body}"}))
