"""SIGKILL the `run` command mid-milestone, run it again: no event lost, none duplicated."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harnessforge.harness.recorder import Recorder, read_summary

BIN = Path(sys.executable).parent / "harnessforge"


def _run(store, key, run_id) -> subprocess.Popen:
    cmd = [str(BIN), "--store", str(store.root), "run", key, "--agent", "oracle", "--run-id", run_id,
           "--milestones", "m02", "--profile", "m02=needs_hints", "--sandbox", "docker"]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kill_and_resume_loses_and_duplicates_nothing(validated, docker_client):
    store, key, _ = validated
    run_id = "oracle-killed"
    log = store.root / "trajectories" / key / run_id / "m02" / "trajectory.jsonl"
    prefixes = []
    for kill_at in (9, 24):  # two kills, at different points of the milestone
        proc = _run(store, key, run_id)
        deadline = time.monotonic() + 240
        while _lines(log) < kill_at and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
        prefixes.append(log.read_bytes())
    for c in docker_client.containers.list(all=True, filters={"label": f"harnessforge.run={run_id}"}):
        c.remove(force=True)  # the killed runs' sandboxes

    done = _run(store, key, run_id)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err.decode()[-2000:]
    assert b"resumed at event" in err + out

    final = log.read_bytes()
    for prefix in prefixes:  # every event written before a kill is still there, unchanged
        whole = prefix[: prefix.rfind(b"\n") + 1]
        assert final.startswith(whole)
    events = Recorder.open(log.parent).events()
    assert [e.seq for e in events] == list(range(len(events)))
    call_ids = [e.call_id for e in events if e.call_id]
    assert len(call_ids) == len(set(call_ids)), "a tool call was recorded twice"
    turns = [e.turn_id for e in events if e.role == "dev" and e.action.type == "message"]
    assert turns == list(range(1, len(turns) + 1)), "a Dev turn was lost or repeated"
    summary = read_summary(log.parent)
    assert summary.status == "PASS" and summary.hints_released[:2] == [1, 2]
    hints = [e.hint_level for e in events if e.role == "mentor"]
    assert hints == summary.hints_released  # the replayed Mentor did not release a hint twice
    assert not list(log.parent.glob("workspace.*.patch"))
    assert json.loads((log.parent / "trajectory.atif.json").read_text())["steps"]
