"""Everything is recorded, Stage 3 filters: a tool output longer than the Dev's view is kept whole in the
outputs sidecar (the event says it was cut), read by the analytics and the viewer; each hint's response is
written into the log when its window closes, `direction_change` with it."""

from __future__ import annotations

import gzip
import json
import re

from harnessforge.agents.oracle import OracleAgent
from harnessforge.analytics import analyze
from harnessforge.analytics.database import connect_read_only
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder, read_outputs
from harnessforge.report.viewer import render_run
from tests.test_shell_dev import MID, _rules, local  # noqa: F401  (fixture)

VIEW = 300  # the Dev's view of a tool output, in characters


def _run(store, key, run_id: str, **harness):
    rules = _rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update=harness)})
    agent = OracleAgent(profiles={MID: "needs_hints"})
    Navigator(store, key, agent, rules, run_id=run_id, backend="local", log=lambda *_: None).run([MID])
    files = store.milestone_run(key, run_id, MID)
    return files, Recorder.open(files.dir).events()


def _middle(text: str) -> str:
    """A line from the middle of an output (one HTML shows as it is), which a head-and-tail view cuts."""
    lines = text.splitlines()
    middle = lines[len(lines) // 3 : 2 * len(lines) // 3]
    return next(line for line in middle if len(line) > 8 and re.fullmatch(r"[\w .,:/()=+-]+", line))


def test_cut_outputs_are_kept_whole_beside_the_log_and_read_by_analytics_and_the_viewer(local):  # noqa: F811
    store, key = local
    files, events = _run(store, key, "cut", observation_max_chars=VIEW)
    cut = [event for event in events if event.observation_cut]
    assert cut and all(len(event.observation) < event.observation_chars for event in cut)
    assert not any(event.observation_cut for event in events if event.observation_chars <= VIEW)
    outputs = read_outputs(files.outputs)
    assert sorted(outputs) == [event.seq for event in cut]
    assert all(len(outputs[event.seq]) == event.observation_chars for event in cut)
    assert all(
        _middle(outputs[event.seq]) not in event.observation for event in cut if event.observation_chars > 3 * VIEW
    )

    analyze(store, _rules())
    with connect_read_only(store) as con:
        rows = con.execute(
            "SELECT seq, full_observation FROM raw_events WHERE run_id = 'cut' AND full_observation IS NOT NULL"
        ).fetchall()
        page = render_run(store, key, "cut", MID, con)
    assert dict(rows) == outputs
    longest = max(cut, key=lambda event: event.observation_chars)
    middle = _middle(outputs[longest.seq])
    assert middle not in longest.observation and middle in page  # what only the full output has
    assert f"in full: {longest.observation_chars:,} chars; the Dev saw" in page


def test_a_torn_last_output_and_one_without_its_event_are_skipped(tmp_path):
    path = tmp_path / "outputs.jsonl.gz"
    members = [gzip.compress(json.dumps({"seq": seq, "observation": f"out {seq}"}).encode() + b"\n") for seq in (3, 7)]
    path.write_bytes(members[0] + members[1] + members[1][:-9])
    assert read_outputs(path) == {3: "out 3", 7: "out 7"}
    assert read_outputs(path, events=5) == {3: "out 3"}  # seq 7's event was never written (a crash between)
    assert read_outputs(tmp_path / "none.jsonl.gz") == {}


def test_a_damaged_output_inside_the_sidecar_is_skipped_said_and_the_rest_read(tmp_path):
    """Issue 32: a damaged member of the outputs sidecar silently ended the reading: every later output was lost."""
    path = tmp_path / "outputs.jsonl.gz"
    members = [
        gzip.compress(json.dumps({"seq": seq, "observation": f"out {seq}"}).encode() + b"\n") for seq in (1, 2, 3)
    ]
    broken = members[1][:10] + b"\x00" * 8 + members[1][18:]  # its deflate data overwritten
    path.write_bytes(members[0] + broken + members[2])
    damaged: list[int] = []
    assert read_outputs(path, damaged=damaged) == {1: "out 1", 3: "out 3"}
    assert damaged == [len(members[0])]


def test_each_hint_response_is_written_into_the_log_when_its_window_closes(local):  # noqa: F811
    store, key = local
    files, events = _run(store, key, "responses")
    decisions = json.loads(files.mentor_log.read_text())
    hints = [event for event in events if event.action.type == "hint"]
    responses = [event for event in events if event.action.type == "hint_response"]
    assert len(hints) == len(responses) == len(decisions) >= 2
    window = _rules().harness.mentor.response_window_turns
    for hint, response, decision in zip(hints, responses, decisions, strict=True):
        assert response.hint_level == hint.hint_level and response.action.args["hint_turn"] == hint.turn_id
        assert response.direction_change == decision["response"]["direction_changed"]
        assert response.action.args["new_files"] == decision["response"]["new_files"]
        closed = response.turn_id == hint.turn_id + window + 1  # the first event after the window closed it
        assert response.seq > hint.seq and (closed or response is events[-2])  # or the milestone ended first
    assert events[-1].action.type == "milestone_end"
    assert any(response.direction_change for response in responses)  # the oracle reads the hinted files
