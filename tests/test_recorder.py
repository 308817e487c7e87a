"""The Recorder's durable event log, the run/milestone files, and the ATIF export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from pydantic import ValidationError

from harnessforge.errors import ArtifactError
from harnessforge.harness import recorder as recorder_mod
from harnessforge.harness.atif import to_atif, validate_atif
from harnessforge.harness.recorder import (
    ATIF,
    TRAJECTORY,
    Recorder,
    read_run_metadata,
    read_summary,
    summarize,
    write_run_metadata,
)
from harnessforge.models.run import MilestoneSummary, RunMeta
from harnessforge.models.trajectory import Action, Event, TestCounts, Usage


def billed(tokens_in: int, cached: int, tokens_out: int, cost: float) -> dict:
    """The fields of an event that carries one model call (of model m-1)."""
    return {"usage": Usage(input=tokens_in, cached=cached, output=tokens_out), "cost_usd": cost, "model": "m-1"}


def ev(seq: int, turn: int = 1, role: str = "dev", type: str = "bash", **kw) -> Event:
    return Event(
        run_id="run1",
        repo="acme__tasklite",
        milestone_id="m01",
        seq=seq,
        turn_id=turn,
        role=role,
        action=Action(type=type, args=kw.pop("args", {})),
        **kw,
    )


def filled(tmp_path, n: int = 3) -> Recorder:
    rec = Recorder(tmp_path / "m01")
    for i in range(n):
        rec.append(ev(i, observation=f"out {i}\nline two ✓", usage=Usage(input=10 * i, output=i)))
    return rec


# ---- the event log ------------------------------------------------------------------------------
def test_append_read_round_trip(tmp_path):
    rec = filled(tmp_path)
    lines = (tmp_path / "m01" / TRAJECTORY).read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""  # one line per event, newline-terminated
    assert [Event.model_validate_json(line) for line in lines[:-1]] == rec.events()
    assert rec.next_seq == 3
    assert rec.events()[1].observation == "out 1\nline two ✓"


def test_each_append_is_fsynced_before_it_returns(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd):
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(recorder_mod.os, "fsync", spy)
    rec = Recorder(tmp_path / "m01")
    sizes = []
    for i in range(3):
        rec.append(ev(i))
        sizes.append((tmp_path / "m01" / TRAJECTORY).stat().st_size)
    assert all(size in synced for size in sizes)  # the file was fsync'd at each event's full length


def test_reopen_sees_every_event_and_continues(tmp_path):
    written = filled(tmp_path).events()
    rec = Recorder.open(tmp_path / "m01")
    assert rec.events() == written and rec.warnings == []
    rec.append(ev(3, turn=2))
    assert [e.seq for e in Recorder.open(tmp_path / "m01").events()] == [0, 1, 2, 3]


def test_open_of_a_fresh_folder_is_empty_and_new_recorder_refuses_an_existing_log(tmp_path):
    assert Recorder.open(tmp_path / "nothing").next_seq == 0
    filled(tmp_path)
    with pytest.raises(ArtifactError, match="Recorder.open"):
        Recorder(tmp_path / "m01")


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(lambda line: line[:37], id="cut-mid-line"),
        pytest.param(lambda line: line[:-1], id="complete-json-without-newline"),
        pytest.param(lambda line: line[:20] + b"\n", id="garbled-but-terminated"),
        pytest.param(lambda line: b"\0" * 64, id="zero-filled-block"),
    ],
)
def test_torn_last_line_is_cut_with_a_warning_and_resume_continues(tmp_path, tail):
    filled(tmp_path)
    path = tmp_path / "m01" / TRAJECTORY
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(tail(ev(3).model_dump_json().encode() + b"\n"))
    warnings: list[str] = []
    rec = Recorder.open(tmp_path / "m01", on_warning=warnings.append)
    assert len(warnings) == 1 and "torn last line" in warnings[0] and rec.warnings == warnings
    assert path.read_bytes() == good and rec.next_seq == 3
    rec.append(ev(3, turn=2))
    again = Recorder.open(tmp_path / "m01", on_warning=warnings.append)
    assert [e.seq for e in again.events()] == [0, 1, 2, 3] and len(warnings) == 1


def test_a_reader_skips_a_torn_last_line_and_leaves_the_file_to_its_run(tmp_path):
    """`view`, `distill` and checks open with `repair=False`: they must not write a log a run may own."""
    filled(tmp_path)
    path = tmp_path / "m01" / TRAJECTORY
    with open(path, "ab") as f:
        f.write(ev(3).model_dump_json().encode()[:37])
    torn = path.read_bytes()
    warnings: list[str] = []
    reader = Recorder.open(tmp_path / "m01", on_warning=warnings.append, repair=False)
    assert [e.seq for e in reader.events()] == [0, 1, 2] and "skipped 37 bytes" in warnings[0]
    assert path.read_bytes() == torn  # untouched
    with pytest.raises(ArtifactError, match="read-only"):
        reader.append(ev(3, turn=2))
    assert path.read_bytes() == torn
    assert Recorder.open(tmp_path / "m01").next_seq == 3 and path.read_bytes() != torn  # the run's open repairs it


def test_corrupt_middle_line_is_an_error_naming_file_and_line(tmp_path):
    filled(tmp_path)
    path = tmp_path / "m01" / TRAJECTORY
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:30]
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    with pytest.raises(ArtifactError, match=r"trajectory\.jsonl:2: not valid JSON"):
        Recorder.open(tmp_path / "m01")
    assert path.read_bytes() == before  # nothing repaired, nothing dropped


def test_schema_invalid_lines_are_errors_even_at_the_end(tmp_path):
    """Valid JSON that is not an Event is never a torn write, so it is not cut off."""
    filled(tmp_path)
    path = tmp_path / "m01" / TRAJECTORY
    with open(path, "ab") as f:
        f.write(json.dumps({**ev(3).model_dump(mode="json"), "role": "intruder"}).encode() + b"\n")
    with pytest.raises(ArtifactError, match=r"trajectory\.jsonl:4: invalid Event: role"):
        Recorder.open(tmp_path / "m01")


def test_seq_gaps_and_repeats_are_refused(tmp_path):
    rec = filled(tmp_path, n=1)
    for bad in (2, 0):
        with pytest.raises(ValueError, match=f"seq {bad}, expected 1"):
            rec.append(ev(bad))
    assert len((tmp_path / "m01" / TRAJECTORY).read_bytes().splitlines()) == 1
    other = ev(1).model_copy(update={"milestone_id": "m02"})
    with pytest.raises(ValueError, match="m02"):
        rec.append(other)
    # a gap on disk (hand-edited, or two writers) is found on read
    with open(tmp_path / "m01" / TRAJECTORY, "ab") as f:
        f.write(ev(5).model_dump_json().encode() + b"\n")
    with pytest.raises(ArtifactError, match=r"jsonl:2: seq 5, expected 1"):
        Recorder.open(tmp_path / "m01")


def test_a_failed_write_leaves_no_partial_line(tmp_path, monkeypatch):
    rec = filled(tmp_path, n=2)
    path = tmp_path / "m01" / TRAJECTORY
    good = path.read_bytes()
    real_write = os.write

    def half_then_fail(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recorder_mod.os, "write", half_then_fail)
    with pytest.raises(ArtifactError, match="trajectory.jsonl: no space left on the device"):  # one CLI line
        rec.append(ev(2))
    monkeypatch.undo()
    assert path.read_bytes() == good and rec.next_seq == 2
    rec.append(ev(2))
    assert Recorder.open(tmp_path / "m01").next_seq == 3


def test_a_second_writer_is_detected(tmp_path):
    rec = filled(tmp_path, n=1)
    other = Recorder.open(tmp_path / "m01")
    other.append(ev(1))
    with pytest.raises(ArtifactError, match="one writer"):
        rec.append(ev(1))


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harnessforge.harness.recorder import Recorder
    from harnessforge.models.trajectory import Action, Event

    rec = Recorder.open(Path(sys.argv[1]))
    seq = rec.next_seq
    while True:
        body = (f"event {seq} " * 40000)  # ~400 kB: big writes give a kill the chance to tear one
        rec.append(Event(run_id="run1", repo="acme__tasklite", milestone_id="m01", seq=seq, turn_id=seq + 1,
                         role="dev", action=Action(type="bash"), observation=body, observation_chars=len(body)))
        print(seq, flush=True)
        seq += 1
    """
)


def test_sigkilled_writer_leaves_only_whole_events_and_resume_continues(tmp_path):
    """A child appends as fast as it can and is SIGKILLed, three times over the same log.

    Whether a kill tears a line depends on the kernel and file system (on ext4 it rarely does), so this
    checks what must hold either way; the repair of a torn line is pinned by the tests above.
    """
    mdir = tmp_path / "m01"
    acked = -1
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(mdir)], stdout=subprocess.PIPE, text=True)
        try:
            start = acked
            while acked < start + 5:  # let it write a few events past where it resumed, then kill it mid-stream
                acked = int(child.stdout.readline())
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
            child.stdout.close()
        rec = Recorder.open(mdir, on_warning=lambda _msg: None)
        events = rec.events()
        assert [e.seq for e in events] == list(range(len(events)))  # no gap, no duplicate
        assert len(events) > acked  # every acknowledged append survived
        for e in events:  # no partial event
            assert e.observation == f"event {e.seq} " * 40000 and e.observation_chars == len(e.observation)
        assert (mdir / TRAJECTORY).read_bytes().endswith(b"\n")
        acked = len(events) - 1


# ---- run and milestone files --------------------------------------------------------------------
def test_metadata_and_summary_are_written_atomically_and_read_back(tmp_path, store, monkeypatch):
    rdir = store.run_dir("acme__tasklite", "run1")
    assert rdir == store.root / "trajectories" / "acme__tasklite" / "run1"
    meta = RunMeta(
        run_id="run1",
        repo="acme__tasklite",
        agent="oracle",
        rules_hash="abc123",
        config={"seed": 7, "max_turns": 100},
        synthetic=True,
    )
    write_run_metadata(rdir, meta)
    assert read_run_metadata(rdir) == meta

    rec = Recorder(rdir / "m01")
    summary = MilestoneSummary(
        run_id="run1",
        milestone_id="m01",
        status="STUCK",
        turns=12,
        hints_released=[1, 2],
        tokens=Usage(input=900, cached=400, output=80),
        cost_usd=0.12,
        wall_s=33.5,
        reset_to="a" * 40,
    )
    rec.write_summary(summary)
    assert read_summary(rdir / "m01") == summary

    # a crash mid-write (here: the fsync fails) leaves the previous file whole and no temp file behind
    def failing_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        rec.write_summary(summary.model_copy(update={"status": "PASS"}))
    monkeypatch.undo()
    assert read_summary(rdir / "m01").status == "STUCK"
    assert sorted(p.name for p in (rdir / "m01").iterdir()) == ["summary.json"]

    (rdir / "m01" / "summary.json").write_text('{"run_id": "run1"}')
    with pytest.raises(ArtifactError, match="summary.json: invalid MilestoneSummary"):
        read_summary(rdir / "m01")


def test_write_json_and_patch(tmp_path):
    rec = Recorder(tmp_path / "m01")
    patch = b"diff --git a/x b/x\n+caf\xe9\n"  # not UTF-8: bytes are kept as git wrote them
    assert rec.write_patch("final_diff.patch", patch).read_bytes() == patch
    rec.write_json("test_results.json", {"passed": 3, "names": ["t_ä"]})
    assert json.loads((tmp_path / "m01" / "test_results.json").read_text()) == {"passed": 3, "names": ["t_ä"]}
    for bad in ("../escape.json", "sub/x.json", TRAJECTORY):
        with pytest.raises(ValueError):
            rec.write_json(bad, {})


def test_summarize_counts_turns_hints_tokens_and_cost(tmp_path):
    events = [
        ev(0, turn=0, role="navigator", type="milestone_start"),
        ev(1, turn=1, usage=Usage(input=100, cached=0, output=10), cost_usd=0.01),
        ev(2, turn=1, role="mentor", type="hint", hint_level=1, mentor_hint="look at x"),
        ev(3, turn=2, usage=Usage(input=200, cached=100, output=20), cost_usd=0.02, synthetic=True),
    ]
    s = summarize(events, status="FAIL", wall_s=5.0, reset_to="b" * 40)
    assert (s.turns, s.hints_released, s.tokens, s.cost_usd) == (2, [1], Usage(input=300, cached=100, output=30), 0.03)
    assert s.synthetic and s.status == "FAIL" and s.milestone_id == "m01"


# ---- ATIF ---------------------------------------------------------------------------------------
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("read_file", "run_tests", "submit")
]
HINT = "[mentor] The failure is in parse_due(): look at how it treats an empty string."


def milestone():
    """System + task + read_file + run_tests (truncated output) + hint + submit."""
    messages = [
        {"role": "system", "content": "You are a careful engineer."},
        {"role": "user", "content": "Implement due dates (milestone m01)."},
        {
            "role": "assistant",
            "content": "Let me look.",
            "reasoning_content": "Start with the parser.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "tasklite/due.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "def parse_due(s): ..."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "run_tests", "arguments": {}}}],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "FAILED test_due.py::test_empty (trunc"},
        {"role": "user", "content": HINT},
        {
            "role": "assistant",
            "content": "Fixed the empty case.",
            "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "submit", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c3", "content": "submitted"},
    ]
    read = {"type": "read_file", "args": {"path": "tasklite/due.py"}, "observation": "def parse_due(s): ..."}
    read["observation_chars"] = len(read["observation"])
    events = [
        ev(0, turn=0, role="navigator", type="milestone_start", observation="task shown"),
        ev(1, **read, **billed(1000, 0, 50, 0.004), latency_s=1.5, files_touched=[]),
        ev(
            2,
            turn=2,
            type="run_tests",
            observation="FAILED test_due.py::test_empty (trunc",
            observation_chars=5000,
            **billed(1200, 1000, 20, 0.002),
            test_status=TestCounts(passed=3, failed=1, total=4),
            error_signature="AssertionError@test_empty",
        ),
        ev(3, turn=2, role="mentor", type="hint", hint_level=1, mentor_hint=HINT, args={"rule": "same_error_runs"}),
        ev(4, turn=3, type="submit", observation="submitted", observation_chars=9, **billed(1500, 1200, 40, 0.003)),
    ]
    meta = RunMeta(run_id="run1", repo="acme__tasklite", agent="openai", model="m-1", rules_hash="abc123")
    return events, messages, meta


def test_atif_of_a_small_milestone_validates_and_maps_metrics_and_hints(tmp_path):
    events, messages, meta = milestone()
    doc = to_atif(events, messages, meta, TOOLS, outcome={"status": "PASS", "resolved": True})
    validate_atif(doc)
    assert to_atif(events, messages, meta.model_dump(mode="json"), TOOLS) == {  # metadata.json as read works too
        **doc,
        "extra": {"harnessforge": {**doc["extra"]["harnessforge"], "outcome": None}},
    }
    assert doc["schema_version"] == "ATIF-v1.7" and doc["session_id"] == "run1"
    assert doc["trajectory_id"] == "run1/m01"
    assert doc["agent"]["model_name"] == "m-1" and doc["agent"]["tool_definitions"] == TOOLS
    assert doc["agent"]["extra"]["backend"] == "openai"

    steps = doc["steps"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent", "user", "agent"]
    read = steps[2]
    assert read["reasoning_content"] == "Start with the parser." and read["message"] == "Let me look."
    assert read["tool_calls"] == [
        {"tool_call_id": "c1", "function_name": "read_file", "arguments": {"path": "tasklite/due.py"}}
    ]
    assert read["metrics"] == {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 0, "cost_usd": 0.004}
    assert read["llm_call_count"] == 1 and read["model_name"] == "m-1"
    assert read["extra"]["harnessforge"] == {"turn_id": 1, "event_seqs": [1], "latency_s": 1.5}

    tests = steps[3]
    assert tests["message"] == "" and tests["metrics"]["cached_tokens"] == 1000
    (result,) = tests["observation"]["results"]
    assert result["source_call_id"] == "c2" and result["content"].startswith("FAILED")
    assert result["extra"]["truncated"] is True and result["extra"]["observation_chars"] == 5000
    assert result["extra"]["tests"] == {"passed": 3, "failed": 1, "total": 4}
    assert result["extra"]["error_signature"] == "AssertionError@test_empty"

    hint = steps[4]
    assert hint["message"] == HINT
    assert hint["extra"]["harnessforge"] == {"kind": "hint", "level": 1, "rule": "same_error_runs", "event_seq": 3}
    assert steps[5]["observation"]["results"][0]["extra"]["truncated"] is False

    fm = doc["final_metrics"]
    assert (fm["total_prompt_tokens"], fm["total_completion_tokens"], fm["total_cached_tokens"]) == (3700, 110, 2200)
    assert fm["total_cost_usd"] == pytest.approx(0.009) and fm["total_steps"] == 6
    summary = summarize(events, status="PASS", wall_s=1.0)
    assert (summary.tokens.input, summary.tokens.cached, summary.tokens.output) == (3700, 2200, 110)
    assert doc["extra"]["harnessforge"] == {
        "repo": "acme__tasklite",
        "milestone_id": "m01",
        "synthetic": False,
        "outcome": {"status": "PASS", "resolved": True},
    }

    # stored and read back as plain JSON, it is still valid
    rec = Recorder(tmp_path / "m01")
    validate_atif(json.loads(rec.write_json(ATIF, doc).read_text()))


def test_atif_of_a_synthetic_run_marks_steps_as_no_llm_call():
    events, messages, meta = milestone()
    doc = to_atif(events, messages, meta.model_copy(update={"synthetic": True, "agent": "oracle"}), TOOLS)
    validate_atif(doc)
    assert {s["llm_call_count"] for s in doc["steps"] if s["source"] == "agent"} == {0}
    assert doc["extra"]["harnessforge"]["synthetic"] is True


def test_atif_keeps_unparseable_arguments_aside():
    events, messages, meta = milestone()
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"path": "tasklite/du'
    call = to_atif(events, messages, meta, TOOLS)["steps"][2]["tool_calls"][0]
    assert call["arguments"] == {} and call["extra"] == {"raw_arguments": '{"path": "tasklite/du'}


def test_atif_refuses_inputs_that_do_not_join():
    events, messages, meta = milestone()
    no_hint = [m for m in messages if m.get("content") != HINT]
    with pytest.raises(ValueError, match="hint event seq 3"):
        to_atif(events, no_hint, meta, TOOLS)
    with pytest.raises(ValueError, match="did not make"):
        to_atif(events, messages[:3] + [{"role": "tool", "tool_call_id": "zz", "content": ""}], meta, TOOLS)
    with pytest.raises(ValueError, match="Dev turn 3"):
        to_atif(events, messages[:7], meta, TOOLS)  # the hint, but not the turn after it
    # every tool result must directly follow its assistant turn (as chat APIs require): no hint in between
    two_calls = {**messages[2], "tool_calls": messages[2]["tool_calls"] + [{**messages[4]["tool_calls"][0]}]}
    interleaved = messages[:2] + [two_calls, messages[3], {"role": "user", "content": HINT}, messages[5]]
    with pytest.raises(ValueError, match=r"messages\[5\]: tool result for call 'c2'"):
        to_atif(events[:2], interleaved, meta, TOOLS)
    with pytest.raises(ValueError, match="another run"):
        to_atif(events, messages, meta.model_copy(update={"run_id": "run2"}), TOOLS)


def test_validate_atif_rejects_inconsistent_documents():
    events, messages, meta = milestone()
    good = to_atif(events, messages, meta, TOOLS)

    def broken(change, match):
        doc = json.loads(json.dumps(good))
        change(doc)
        with pytest.raises(ValidationError, match=match):
            validate_atif(doc)

    def same_call_id(d):
        d["steps"][3]["tool_calls"][0]["tool_call_id"] = "c1"
        d["steps"][3]["observation"]["results"][0]["source_call_id"] = "c1"

    validate_atif(json.loads(json.dumps(good)))
    broken(lambda d: d["steps"][1].update(step_id=7), "step_id must run 1, 2, 3")
    broken(lambda d: d["steps"][1].update(reasoning_content="no"), "only belong on agent steps")
    broken(lambda d: d["steps"][2]["observation"]["results"][0].update(source_call_id="c9"), "not a call of this")
    broken(lambda d: d["final_metrics"].update(total_prompt_tokens=1), "steps sum to 3700")
    broken(lambda d: d["steps"][3]["metrics"].update(cached_tokens=99999), "cached_tokens exceeds")
    broken(same_call_id, "tool_call_id values repeat")
    broken(lambda d: d.update(schema_version="ATIF-v1.4"), "schema_version")
    broken(lambda d: d["steps"][0].update(sorce="system"), "sorce")
