"""Trajectory analytics in DuckDB: one crafted run per signal, each firing that signal and no other."""

import re
import shutil

import pytest

from harnessforge.analytics import analyze
from harnessforge.analytics.load import connect
from harnessforge.analytics.rows import ROW_MODELS, ProgressCurveRow, StuckPointRow, has_tables, read_rows
from harnessforge.rules import load_rules
from tests.trajectories import GROUND_TRUTH, GT_FILE, CraftedRun, diff_adding

SIGNALS = {
    "stuck": "stuck_points > 0",
    "hint_followed": "direction_changes > 0",
    "hint_ignored": "hints > 0 AND direction_changes = 0",
    "progressive_success": "status = 'PASS' AND progress_steps >= 2",
    "wasted_exploration": "reverted_edits + unused_reads > 0",
    "efficient_path": "efficient",
    "memorisation": "memorisation_flag",
    "git_history_probe": "cheating_probes > 0",
}
OWN_DIFF = diff_adding(["    return [i for i in items if i.enabled]  # my own take", "    # sorted later"])


def pad(run: CraftedRun, turns: int = 16) -> CraftedRun:
    """Enough turns that a pass is not an efficient path."""
    while run.turn < turns:
        run.say("thinking it over")
    return run


def explore(run: CraftedRun) -> CraftedRun:
    """Find and read the file the feature lives in (so the first edit to it is not blind)."""
    return run.say("Where is the code?").search("def run").say().read(GT_FILE)


def craft(store) -> None:
    run = explore(CraftedRun(store, "stuck"))
    for i in range(3):  # edit, test, the same failure, three times
        run.say().edit(sha=f"s{i}").say().test(0, 2, "sig-a")
    run.finish("STUCK", OWN_DIFF)

    run = explore(CraftedRun(store, "hint_followed")).say().edit(sha="h1").say().test(0, 1, "sig-a")
    run.hint(1, "same_error").say("New idea.").search("priority", "src/order.py:3:def by_priority").say()
    run.read("src/order.py").say().edit("src/order.py", "o1").say().test(1, 0)
    run.finish("PASS", OWN_DIFF)

    run = explore(CraftedRun(store, "hint_ignored")).say().edit(sha="i1").say().test(0, 1, "sig-a")
    run.hint(1, "same_error").say("Same again.").edit(sha="i2").say().test(0, 1, "sig-b")
    run.finish("STUCK", OWN_DIFF)

    run = explore(CraftedRun(store, "progressive_success"))
    for i, passed in enumerate((1, 2, 3)):
        run.say().edit(sha=f"p{i}").say().test(passed, 3 - passed, f"sig-{i}")
    pad(run).finish("PASS", OWN_DIFF)

    run = explore(CraftedRun(store, "wasted_exploration")).say().read("README.md", "# app")
    run.say().edit(sha="w1").say().edit(sha="w2").say().edit(sha="w1").say().test(1, 0)  # w2 undone
    run.finish("FAIL", OWN_DIFF)

    run = explore(CraftedRun(store, "efficient_path")).say().edit(sha="e1").say().test(1, 0)
    run.finish("PASS", OWN_DIFF)

    run = CraftedRun(store, "memorisation").say("I know this one.").edit(sha="m1").say().test(1, 0)  # blind edit
    pad(run).finish("PASS", GROUND_TRUTH)

    run = explore(CraftedRun(store, "git_history_probe")).say().bash("git log --all --oneline | head", "abc123 fix")
    run.say().edit(sha="g1").say().test(1, 0)
    pad(run).finish("PASS", OWN_DIFF)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    from harnessforge.store import Store

    store = Store(tmp_path_factory.mktemp("analytics") / "store")
    craft(store)
    report = analyze(store, load_rules())
    return store, report


def fired(store) -> dict[str, set[str]]:
    with connect(store) as con:
        cols = ", ".join(f"{expr} AS {name}" for name, expr in SIGNALS.items())
        rows = con.execute(f"SELECT run_id, {cols} FROM milestone_summary").fetchall()
    return {row[0]: {name for name, fired_here in zip(SIGNALS, row[1:], strict=True) if fired_here} for row in rows}


@pytest.mark.parametrize("signal", list(SIGNALS))
def test_each_crafted_run_fires_exactly_its_signal(analysed, signal):
    store, _ = analysed
    assert fired(store)[signal] == {signal}


def test_the_load_and_the_models(analysed):
    store, report = analysed
    assert len(report.load.loaded) == len(SIGNALS) and not report.load.bad_lines
    assert [model.name for model in report.models][:1] == ["stg_events"] and len(report.models) == 14
    with connect(store) as con:
        kinds = con.execute("SELECT kind, signal_turn, length FROM stuck_points WHERE run_id = 'stuck'").fetchall()
        hint = con.execute(
            "SELECT rule, new_targets, tests_improved FROM hint_responses WHERE run_id = 'hint_followed'"
        ).fetchone()
        probe = con.execute("SELECT probe, command FROM cheating_flags").fetchall()
        curve = con.execute(
            "SELECT tests_passed, improved FROM progress_curves WHERE run_id = 'progressive_success' ORDER BY seq"
        ).fetchall()
        waste = con.execute(
            "SELECT kind, path FROM wasted_exploration WHERE run_id = 'wasted_exploration' ORDER BY seq"
        ).fetchall()
        memo = con.execute(
            "SELECT blind_first_edit, gt_overlap, verbatim FROM memorisation_flags WHERE run_id = 'memorisation'"
        ).fetchone()
    assert kinds == [("same_error", 8, 3)]  # the third failing run, on turn 8, is the signal
    assert hint == ("same_error", ["search:priority", "src/order.py"], True)
    assert probe == [("git_all_history", "git log --all --oneline | head")]
    assert curve == [(1, True), (2, True), (3, True)]
    assert waste == [("unused_read", "README.md"), ("reverted_edit", GT_FILE)]
    assert memo == (True, 1.0, True)


def test_every_row_model_reads_its_table_column_for_column(analysed):
    """A row model declares its table's columns in the table's order (the staging views' rows leave out
    the load-time keys): a column added to, renamed in or reordered in a model's SQL fails here."""
    store, _ = analysed
    with connect(store) as con:
        for model in ROW_MODELS:
            columns = [column for column, *_ in con.execute(f"DESCRIBE {model.table}").fetchall()]
            fields = list(model.model_fields)
            if model.table.startswith("stg_"):
                assert fields == [column for column in columns if column in fields], model.__name__
                assert set(columns) - set(fields) <= {"mrun", "prev_test_run"}, model.__name__
            else:
                assert fields == columns, model.__name__
            count = con.execute(f"SELECT count(*) FROM {model.table}").fetchone()[0]
            assert len(read_rows(con, model)) == count > 0, model.__name__


def test_rows_are_filtered_and_ordered_through_parameters(analysed):
    store, _ = analysed
    with connect(store) as con:
        stuck = read_rows(con, StuckPointRow, {"run_id": "stuck"})
        assert [(point.kind, point.signal_turn, point.length) for point in stuck] == [("same_error", 8, 3)]
        assert stuck[0].key == ("acme__app", "stuck", "m01")
        assert read_rows(con, StuckPointRow, {"run_id": "stuck' OR '1'='1"}) == []  # a value, never SQL
        curve = read_rows(con, ProgressCurveRow, {"run_id": "progressive_success"}, order_by=("seq",))
        assert [point.tests_passed for point in curve] == [1, 2, 3]
        with pytest.raises(ValueError, match="no column"):
            read_rows(con, StuckPointRow, {"run_id = run_id OR TRUE; --": "x"})
        with pytest.raises(ValueError, match="no column"):
            read_rows(con, StuckPointRow, order_by=("random()",))
        assert has_tables(con, "stuck_points", "milestone_summary")
        assert not has_tables(con, "stuck_points", "no_such_model")


def stuck_kinds(store, run_id: str) -> list[tuple[str, int]]:
    with connect(store) as con:
        return con.execute(
            "SELECT kind, length FROM stuck_points WHERE run_id = ? ORDER BY start_seq", [run_id]
        ).fetchall()


def test_openhands_loop_detectors(store):
    run = explore(CraftedRun(store, "same_call"))
    for _ in range(4):  # one action, one observation, four times in a row
        run.say().bash("ls src", "app.py")
    run.finish("STUCK", OWN_DIFF)
    run = explore(CraftedRun(store, "failing_call"))
    for i in range(3):  # one failing action three times (different error texts)
        run.say().bash("python -m app", f"Traceback {i}", code=1)
    run.finish("STUCK", OWN_DIFF)
    run = explore(CraftedRun(store, "ping_pong"))
    for _ in range(4):  # A B A B A B A B: eight steps, three windows of six
        run.say().bash("cat a", "1").say().bash("cat b", "2")
    run.finish("STUCK", OWN_DIFF)
    run = explore(CraftedRun(store, "three_only"))
    for _ in range(3):  # below the threshold of four
        run.say().bash("ls src", "app.py")
    run.finish("STUCK", OWN_DIFF)
    analyze(store, load_rules())
    assert stuck_kinds(store, "same_call") == [("repeat_action_observation", 4)]
    assert stuck_kinds(store, "failing_call") == [("repeat_action_error", 3)]
    assert stuck_kinds(store, "ping_pong") == [("alternating", 8)]
    assert stuck_kinds(store, "three_only") == []


def test_neighbours_follow_seq_even_when_the_lines_do_not(store):
    """The loop detectors compare each call with the ones before it (columns computed at load):
    a trajectory written out of order gives the same stretches as one written in order."""
    for run_id in ("in_order", "shuffled"):
        run = explore(CraftedRun(store, run_id))
        for _ in range(4):
            run.say().bash("cat a", "1").say().bash("cat b", "2")
        run.say().test(0, 1, "sig-a").say().test(0, 1, "sig-a").say().test(0, 1, "sig-a")
        run.finish("STUCK", OWN_DIFF)
    log = store.root / "trajectories" / "acme__app" / "shuffled" / "m01" / "trajectory.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[1::2] + lines[0::2]))  # odd lines first, then even ones
    analyze(store, load_rules())
    with connect(store) as con:
        rows = {
            run_id: con.execute(
                "SELECT kind, start_seq, signal_seq, end_seq, length FROM stuck_points WHERE run_id = ? ORDER BY ALL",
                [run_id],
            ).fetchall()
            for run_id in ("in_order", "shuffled")
        }
        calls = con.execute(
            "SELECT seq, call_no, prev_call.seq, call_2_back.seq FROM stg_events WHERE run_id = 'shuffled' AND is_tool "
            "ORDER BY seq LIMIT 3"
        ).fetchall()
    assert rows["shuffled"] == rows["in_order"]
    assert {kind for kind, *_ in rows["in_order"]} == {"alternating", "same_error", "repeat_action_error"}
    (first_seq, *first), (second_seq, *second), (_, *third) = calls
    assert (first, second, third) == ([1, None, None], [2, first_seq, None], [3, second_seq, first_seq])


def test_loading_is_incremental(store):
    CraftedRun(store, "a").say().test(0, 1).finish("STUCK")
    CraftedRun(store, "b").say().test(1, 0).finish("PASS")
    first = analyze(store, load_rules()).load
    assert len(first.loaded) == 2 and first.events > 0
    again = analyze(store, load_rules()).load
    assert again.loaded == [] and again.unchanged == 2 and again.events == 0
    log = store.root / "trajectories" / "acme__app" / "b" / "m01" / "trajectory.jsonl"
    log.write_bytes(log.read_bytes() + log.read_bytes().splitlines(keepends=True)[-1].replace(b'"seq":', b'"seq":9'))
    shutil.rmtree(store.root / "trajectories" / "acme__app" / "a")
    third = analyze(store, load_rules()).load
    assert third.loaded == ["trajectories/acme__app/b/m01/trajectory.jsonl"]
    assert third.removed == ["trajectories/acme__app/a/m01/trajectory.jsonl"]
    with connect(store) as con:
        assert con.execute("SELECT DISTINCT run_id FROM raw_events").fetchall() == [("b",)]
        assert con.execute("SELECT count(*) FROM raw_milestones").fetchone()[0] == 1
    assert not (store.root / "analytics" / "events" / "acme__app" / "a").exists() or not any(
        (store.root / "analytics" / "events" / "acme__app" / "a").iterdir()
    )


def test_a_damaged_or_deleted_events_file_is_rebuilt_from_the_logs_and_said(store):
    """Issue 32: a damaged events Parquet crashed `distill`; deleting it silently dropped that run's rows."""
    CraftedRun(store, "a").say().test(0, 1).finish("STUCK")
    CraftedRun(store, "b").say().test(1, 0).finish("PASS")
    first = analyze(store, load_rules()).load
    damaged = store.analytics_events_file("acme__app", "a")
    damaged.write_bytes(b"PAR1 not a parquet file")
    store.analytics_events_file("acme__app", "b").unlink()
    again = analyze(store, load_rules()).load
    assert sorted(again.rebuilt) == sorted([str(damaged), str(store.analytics_events_file("acme__app", "b"))])
    assert sorted(again.loaded) == sorted(first.loaded) and again.events == first.events
    with connect(store) as con:
        assert con.execute("SELECT DISTINCT run_id FROM raw_events ORDER BY 1").fetchall() == [("a",), ("b",)]
        assert con.execute("SELECT count(*) FROM raw_events").fetchone()[0] == first.events


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "bad checksum"])
def test_a_damaged_database_is_moved_aside_said_and_rebuilt_from_the_store(store, capsys, damage):
    """Issue 32: a damaged `harnessforge.duckdb` stopped every `distill` with DuckDB's error. Everything in it comes
    from the store, so a writer moves it aside (kept for a look), says so naming the path, and rebuilds; a reader
    (report, viewer) says it in one line and points to `distill`."""
    from harnessforge.analytics.database import connect_read_only
    from harnessforge.errors import ArtifactError

    CraftedRun(store, "a").say().test(0, 1).finish("STUCK")
    first = analyze(store, load_rules()).load
    path = store.analytics_database()
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:5000]
    elif damage == "overwritten":
        data = bytearray(b"not a database" * 50)
    else:
        data[9000:12000] = b"x" * 3000
    path.write_bytes(bytes(data))
    with pytest.raises(
        ArtifactError, match=r"harnessforge.duckdb: the analytics database is damaged .*run `harnessforge distill`"
    ):
        connect_read_only(store).close()
    again = analyze(store, load_rules()).load
    said = capsys.readouterr().err
    assert (
        f"warning: {path}: the analytics database is damaged" in said and "moved to harnessforge.duckdb.damaged" in said
    )
    assert path.with_name("harnessforge.duckdb.damaged").read_bytes() == bytes(data)  # kept as it was
    assert again.events == first.events
    with connect_read_only(store) as con:
        assert con.execute("SELECT count(*) FROM raw_events").fetchone()[0] == first.events


def test_text_a_shell_command_writes_is_not_a_cheating_probe(store):
    """Issue 33: a shell-only Dev writing a CI file that says `pip install` (through `printf` or a heredoc) was
    flagged as a network attempt, so `cheating` rejected a run the edit tools would have left clean."""
    run = CraftedRun(store, "writer").say()
    run.bash("cat > .github/ci.yml <<'EOF'\n- run: pip install -e .\n- run: curl https://x\nEOF", "")
    run.say().bash("printf %s 'steps:\n  - run: pip install -e .\n' > ci.yml", "")
    run.say().bash("curl https://example.org", "curl: (6) Could not resolve host")  # a real probe
    run.say().bash("git log --all --oneline", "")
    run.finish("PASS")
    analyze(store, load_rules())
    with connect(store) as con:
        flagged = con.execute("SELECT probe, command FROM cheating_flags ORDER BY seq").fetchall()
    assert flagged == [("network", "curl https://example.org"), ("git_all_history", "git log --all --oneline")]


def test_a_corrupt_line_is_reported_with_file_and_line_and_the_rest_loads(store):
    CraftedRun(store, "torn").say().test(0, 1).say().test(1, 0).finish("PASS")
    log = store.root / "trajectories" / "acme__app" / "torn" / "m01" / "trajectory.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"run_id": "torn", "seq": \n'  # not JSON
    lines[3] = re.sub(rb'"turn_id":\d+', b'"turn_id":"one"', lines[3])  # JSON, but not an event
    log.write_bytes(b"".join(lines))
    report = analyze(store, load_rules()).load
    assert [(line.path, line.line) for line in report.bad_lines] == [
        ("trajectories/acme__app/torn/m01/trajectory.jsonl", 3),
        ("trajectories/acme__app/torn/m01/trajectory.jsonl", 4),
    ]
    assert "turn_id" in report.bad_lines[1].error
    assert report.events == len(lines) - 2


def test_a_changed_threshold_changes_the_hash_and_exactly_the_outputs_that_read_it(analysed, tmp_path):
    store, report = analysed
    rules = load_rules()
    stricter = rules.model_copy(update={"analytics": rules.analytics.model_copy(update={"stuck_same_error_cycles": 4})})
    assert stricter.hash != rules.hash
    after = {model.name: model.hash for model in analyze(store, stricter).models}
    before = {model.name: model.hash for model in report.models}
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"stuck_points", "milestone_summary", "memorisation_rates"}  # and what reads the summary
    assert "stuck" not in fired(store)["stuck"]  # three failures no longer make a stuck point
    analyze(store, rules)  # back to the shipped thresholds for the other tests of this module
    assert fired(store)["stuck"] == {"stuck"}
