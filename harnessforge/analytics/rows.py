"""The rows of the SQL models that Python reads, typed: one model per table, read by `read_rows`.

Each row model names its table (`table`) and declares its columns in the table's column order (all of
them; the staging views' rows leave out the load-time keys), so `model_dump()` gives back the row as
the SQL built it. Values reach DuckDB only as parameters: a
filter is column = value pairs (`match`) and an order is column names, both checked against the
row model, so no caller writes SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, ClassVar, TypeVar

import duckdb
from pydantic import BaseModel, ConfigDict, TypeAdapter

RunKey = tuple[str, str, str]  # (repo, run_id, milestone_id)


class AnalyticsRow(BaseModel):
    """One row of a SQL model: every column, nothing else, read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    table: ClassVar[str]

    repo: str
    run_id: str
    milestone_id: str

    @property
    def key(self) -> RunKey:
        """The milestone run the row belongs to."""
        return self.repo, self.run_id, self.milestone_id


class MilestoneSummaryRow(AnalyticsRow):
    """`milestone_summary`: one milestone run with every signal the Reviewer grades and the report shows."""

    table: ClassVar[str] = "milestone_summary"

    agent: str | None
    model: str | None
    harness_version: str | None
    mode: str
    harness_profile: str
    test_visibility: str = "visible"
    plan_id: str = ""  # the plan whose milestone the run attempted ("" before plan ids)
    scaffold: str = "harnessforge"
    scaffold_version: str | None = None
    status: str
    turns: int | None
    hints: int
    max_hint_level: int
    cost_usd: float | None
    wall_s: float | None
    synthetic: bool | None
    carried_from: str | None
    reset_to: str | None
    tool_calls: int
    test_runs: int
    edits: int
    tokens_input: int
    tokens_output: int
    stuck_points: int
    first_stuck_turn: int | None
    direction_changes: int
    hints_with_progress: int
    progress_steps: int
    iterations: int
    reverted_edits: int
    unused_reads: int
    efficient: bool
    memorisation_flag: bool
    gt_overlap: float | None
    cheating_probes: int
    probes: list[str]
    located_ground_truth: bool
    located_turn: int | None


class MemorisationRateRow(BaseModel):
    """`memorisation_rates`: per repo and model, the share of probe runs that located the ground truth."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())
    table: ClassVar[str] = "memorisation_rates"

    repo: str
    model: str | None
    probe_runs: int
    located_runs: int
    rate: float
    warning: bool

    def warning_text(self) -> str:
        return (
            f"{self.model or 'the model'} located the ground truth in {self.located_runs} of {self.probe_runs} probe "
            f"runs on {self.repo} ({self.rate:.0%}): it has likely seen this repository's history (treat as recall)"
        )


class StuckPointRow(AnalyticsRow):
    """`stuck_points`: one stretch where the Dev was stuck, by event seq and turn."""

    table: ClassVar[str] = "stuck_points"

    kind: str
    start_seq: int
    start_turn: int | None
    signal_seq: int
    signal_turn: int
    length: int
    end_seq: int


class HintResponseRow(AnalyticsRow):
    """`hint_responses`: one Mentor hint and where the Dev went around it."""

    table: ClassVar[str] = "hint_responses"

    hint_seq: int
    hint_turn: int
    level: int | None
    rule: str | None
    before_targets: list[str]
    after_targets: list[str]
    new_targets: list[str]
    direction_change: bool
    passed_before: int
    passed_after: int | None
    tests_improved: bool


class ProgressCurveRow(AnalyticsRow):
    """`progress_curves`: passing tests after one test run, and whether it beat the best so far."""

    table: ClassVar[str] = "progress_curves"

    seq: int
    turn_id: int
    run_no: int
    tests_passed: int
    tests_failed: int
    tests_total: int
    best_passed: int
    improved: bool


class EditRow(AnalyticsRow):
    """`stg_edits`: one successful file edit of the Dev (all but the internal `mrun` key)."""

    table: ClassVar[str] = "stg_edits"

    seq: int
    turn_id: int
    action_type: str
    path: str | None
    content_sha: str | None
    test_file: bool


class TestRunRow(AnalyticsRow):
    """`stg_test_runs`: one test run of the Dev (all but `mrun` and the `prev_test_run` struct)."""

    table: ClassVar[str] = "stg_test_runs"

    seq: int
    turn_id: int
    tests_passed: int
    tests_failed: int
    tests_total: int
    error_signature: str | None
    cumulative_edits: int | None
    run_no: int
    green: bool


class CheatingFlagRow(AnalyticsRow):
    """`cheating_flags`: one command (or file read) that matched a cheating probe."""

    table: ClassVar[str] = "cheating_flags"

    seq: int
    turn_id: int
    probe: str
    command: str


ROW_MODELS: tuple[type[AnalyticsRow], ...] = (
    MilestoneSummaryRow,
    StuckPointRow,
    HintResponseRow,
    ProgressCurveRow,
    EditRow,
    TestRunRow,
    CheatingFlagRow,
)

Row = TypeVar("Row", bound=BaseModel)


def read_rows(
    con: duckdb.DuckDBPyConnection,
    model: type[Row],
    match: Mapping[str, Any] | None = None,
    order_by: Sequence[str] = (),
) -> list[Row]:
    """The rows of `model.table` whose columns equal `match` (as DuckDB parameters), in `order_by`
    order (DuckDB's scan order without one), validated as `model`."""
    columns = list(model.model_fields)
    match = dict(match or {})
    unknown = [name for name in (*match, *order_by) if name not in model.model_fields]
    if unknown:
        raise ValueError(f"{model.__name__} has no column(s) {', '.join(unknown)}")
    sql = f"SELECT {', '.join(_quoted(column) for column in columns)} FROM {model.table}"
    if match:
        sql += " WHERE " + " AND ".join(f"{_quoted(column)} = ?" for column in match)
    if order_by:
        sql += " ORDER BY " + ", ".join(_quoted(column) for column in order_by)
    rows = con.execute(sql, list(match.values())).fetchall()
    return _adapter(model).validate_python([dict(zip(columns, row, strict=True)) for row in rows])


def has_tables(con: duckdb.DuckDBPyConnection, *tables: str) -> bool:
    """Are all of `tables` built in the analytics database (as tables or views)?"""
    found = con.execute(
        "SELECT count(DISTINCT table_name) FROM information_schema.tables WHERE list_contains(?, table_name)",
        [list(tables)],
    ).fetchone()
    return found[0] == len(set(tables))


def _quoted(column: str) -> str:
    return '"' + column + '"'


@cache
def _adapter(model: type[Row]) -> TypeAdapter[list[Row]]:
    return TypeAdapter(list[model])
