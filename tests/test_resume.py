"""SIGKILL the `run` command (at fixed points, at random events of a chain, between a snapshot and its
event), run it again: no event lost, none duplicated, and the outcomes and work of a clean run."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harnessforge.harness.recorder import Recorder, read_summary
from tests.helpers import cli_command

CHAIN = {"m01": "direct", "m02": "needs_hints", "m03": "stuck"}  # pass, pass after hints, STUCK (reset to verify)
MAX_TURNS = 24  # m02 passes in 22 turns; m03 stops here


def _run(store, key, run_id, profiles=None, rules: Path | None = None) -> subprocess.Popen:
    profiles = profiles or {"m02": "needs_hints"}
    arguments = f"run {key} --agent oracle --run-id {run_id} --milestones {','.join(profiles)} --sandbox docker"
    profile_options = [arg for mid, name in profiles.items() for arg in ("--profile", f"{mid}={name}")]
    cmd = cli_command(store, arguments, *profile_options, rules=rules)
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _kill(proc: subprocess.Popen, logs: list[Path], at: int) -> None:
    """SIGKILL the run (its whole process group) as soon as `logs` hold `at` events together."""
    deadline = time.monotonic() + 240
    while sum(map(_lines, logs)) < at and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before it could be killed at event {at}: {proc.stderr.read()[-2000:]}"
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


def _assert_log_whole(log: Path, prefixes: list[bytes]) -> list:
    """Every event written before a kill is still there, unchanged; seq, call ids and turns have no gap or repeat."""
    final = log.read_bytes()
    for prefix in prefixes:
        assert final.startswith(prefix[: prefix.rfind(b"\n") + 1]), f"{log}: an event written before a kill changed"
    events = Recorder.open(log.parent).events()
    assert [e.seq for e in events] == list(range(len(events)))
    call_ids = [e.call_id for e in events if e.call_id]
    assert len(call_ids) == len(set(call_ids)), "a tool call was recorded twice"
    turns = [e.turn_id for e in events if e.role == "dev" and e.action.type == "message"]
    assert turns == list(range(1, len(turns) + 1)), "a Dev turn was lost or repeated"
    hints = [e.hint_level for e in events if e.action.type == "hint"]
    assert hints == read_summary(log.parent).hints_released  # the replayed Mentor did not release a hint twice
    assert not list(log.parent.glob("workspace.*.patch"))
    assert json.loads((log.parent / "trajectory.atif.json").read_text())["steps"]
    return events


def test_kill_and_resume_loses_and_duplicates_nothing(validated, docker_client):
    store, key, _ = validated
    run_id = "oracle-killed"
    log = store.root / "trajectories" / key / run_id / "m02" / "trajectory.jsonl"
    prefixes = []
    for kill_at in (9, 24):  # two kills, at different points of the milestone
        proc = _run(store, key, run_id)
        _kill(proc, [log], kill_at)
        prefixes.append(log.read_bytes())
    for c in docker_client.containers.list(all=True, filters={"label": f"harnessforge.run={run_id}"}):
        c.remove(force=True)  # the killed runs' sandboxes

    done = _run(store, key, run_id)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err.decode()[-2000:]
    assert b"resumed at event" in err + out

    _assert_log_whole(log, prefixes)
    summary = read_summary(log.parent)
    assert summary.status == "PASS" and summary.hints_released[:2] == [1, 2]


# ---- random kills over a chain ------------------------------------------------------------------


def _outcome(run_dir: Path, mid: str) -> tuple:
    """Status, hints, turns, where it started and ended, and the Dev's final work (nothing of it lost)."""
    s = read_summary(run_dir / mid)
    final = (run_dir / mid / "final_diff.patch").read_bytes()
    return s.status, s.hints_released, s.turns, s.carried_from, s.reset_to, final


def _steps(events: list) -> list[tuple]:
    """What happened, without timings or observations: must be the clean run's, step for step."""
    return [(e.role, e.action.type, e.call_id, e.turn_id, e.hint_level) for e in events]


@pytest.fixture(scope="module")
def clean_chain(validated, tmp_path_factory):
    """The chain m01–m03 run once, unkilled: the outcomes every killed run must reproduce."""
    store, key, _ = validated
    rules = tmp_path_factory.mktemp("resume") / "rules.yaml"
    rules.write_text(f"harness:\n  max_turns: {MAX_TURNS}\n")
    proc = _run(store, key, "oracle-clean", CHAIN, rules)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-2000:]
    run_dir = store.root / "trajectories" / key / "oracle-clean"
    outcomes = {mid: _outcome(run_dir, mid) for mid in CHAIN}
    assert [o[0] for o in outcomes.values()] == ["PASS", "PASS", "STUCK"] and outcomes["m02"][1]
    assert outcomes["m02"][3] == "m01" and outcomes["m03"][4]  # m02 carried m01's work; m03 was reset to verify
    steps = {mid: _steps(Recorder.open(run_dir / mid).events()) for mid in CHAIN}
    return rules, outcomes, steps


def _kill_at_random_and_finish(store, key, rules, sizes: list[int], docker_client, run_cli, seed: int):
    """SIGKILL the chain at 1–3 random events (some right after a milestone's last one), clean up its
    containers by label, run it to the end; returns the kill points and each log's bytes at each kill."""
    rng = random.Random(seed)
    run_id = f"oracle-kill-{seed}"
    logs = [store.root / "trajectories" / key / run_id / mid / "trajectory.jsonl" for mid in CHAIN]
    boundaries = [sum(sizes[: i + 1]) for i in range(len(sizes) - 1)]  # right after m01's, m02's last event
    points = sorted(
        rng.choice(boundaries) if rng.random() < 0.25 else rng.randrange(1, sum(sizes))
        for _ in range(rng.randint(1, 3))
    )
    prefixes: dict[Path, list[bytes]] = {log: [] for log in logs}
    for at in points:
        _kill(_run(store, key, run_id, CHAIN, rules), logs, max(at, sum(map(_lines, logs)) + 1))
        for log in logs:
            prefixes[log].append(log.read_bytes() if log.exists() else b"")

    label = f"harnessforge.run={run_id}"
    left = {c.id for c in docker_client.containers.list(all=True, filters={"label": label})}
    cleaned = run_cli("env", "cleanup", "--run-id", run_id, store=store.root, check=True)
    assert f"removed {len(left)} container(s)" in cleaned.stdout
    assert not docker_client.containers.list(all=True, filters={"label": label})

    done = _run(store, key, run_id, CHAIN, rules)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err.decode()[-2000:]
    return points, prefixes


def test_random_kills_over_a_chain_change_nothing(validated, clean_chain, docker_client, run_cli):
    """Three seeds, their chains side by side (each killed and resumed on its own): CI time stays low."""
    store, key, _ = validated
    rules, clean, clean_steps = clean_chain
    sizes = [len(s) for s in clean_steps.values()]
    seeds = [6, 9, 19]  # today: kills in every milestone, at both boundaries, up to 3 per chain
    with ThreadPoolExecutor(len(seeds)) as pool:
        runs = list(
            pool.map(
                lambda seed: _kill_at_random_and_finish(store, key, rules, sizes, docker_client, run_cli, seed), seeds
            )
        )
    for seed, (points, prefixes) in zip(seeds, runs):
        run_dir = store.root / "trajectories" / key / f"oracle-kill-{seed}"
        for mid in CHAIN:
            log, where = run_dir / mid / "trajectory.jsonl", f"seed {seed}, {mid} (kills at events {points})"
            assert _steps(_assert_log_whole(log, prefixes[log])) == clean_steps[mid], f"{where}: not the clean steps"
            assert _outcome(run_dir, mid) == clean[mid], f"{where}: not the clean run's outcome"


def _killed_inside(patch: str, store, key: str, rules: Path, run_id: str, mid: str, profile: str) -> list[str]:
    """`run` of one milestone in a process that SIGKILLs itself where `patch` (Python run before the CLI,
    wrapping one function of ours or of the stdlib; our code as is) says; returns the args to rerun it."""
    args = [
        "--store",
        str(store.root),
        "--rules",
        str(rules),
        "run",
        key,
        "--run-id",
        run_id,
        "--milestones",
        mid,
        "--profile",
        f"{mid}={profile}",
        "--sandbox",
        "docker",
    ]
    script = f"import os, signal, sys\n{patch}\nfrom harnessforge.cli import app\nsys.argv[0] = 'harnessforge'\napp()\n"
    killed = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    return args[2:]


# Right after removing its second older snapshot: between a workspace snapshot and the event it belongs to.
KILL_AFTER_PRUNING = """
import pathlib
unlink, removed = pathlib.Path.unlink, []
def killing_unlink(self, missing_ok=False):
    unlink(self, missing_ok=missing_ok)
    removed.extend([self.name] if self.name.startswith("workspace.") else [])
    if len(removed) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
pathlib.Path.unlink = killing_unlink
"""


def test_a_kill_between_a_snapshot_and_its_event_loses_no_work(validated, clean_chain, run_cli):
    store, key, _ = validated
    rules, clean, clean_steps = clean_chain
    rerun = _killed_inside(KILL_AFTER_PRUNING, store, key, rules, "oracle-snapshot-kill", "m01", "direct")
    run_dir = store.root / "trajectories" / key / "oracle-snapshot-kill"
    assert len(list((run_dir / "m01").glob("workspace.*.patch"))) == 2  # the new snapshot and the one before

    run_cli(*rerun, store=store.root, check=True)
    assert _steps(Recorder.open(run_dir / "m01").events()) == clean_steps["m01"]
    assert _outcome(run_dir, "m01") == clean["m01"]  # the edits before the kill are in the final diff


# As soon as the Mentor decides its second hint: between the Dev event that releases it and the hint's own event.
KILL_AT_A_HINT_DECISION = """
from harnessforge.harness.mentor import Mentor
observe = Mentor.observe
def killing_observe(self, event):
    decision = observe(self, event)
    if decision is not None and decision.level == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return decision
Mentor.observe = killing_observe
"""


def test_a_kill_between_a_hint_decision_and_its_event_still_releases_the_hint(validated, clean_chain, run_cli):
    store, key, _ = validated
    rules, clean, _ = clean_chain
    rerun = _killed_inside(KILL_AT_A_HINT_DECISION, store, key, rules, "oracle-hint-kill", "m02", "needs_hints")
    log = store.root / "trajectories" / key / "oracle-hint-kill" / "m02" / "trajectory.jsonl"
    before = Recorder.open(log.parent).events()
    assert [e.hint_level for e in before if e.action.type == "hint"] == [1] and before[-1].role == "dev"

    prefix = log.read_bytes()
    run_cli(*rerun, store=store.root, check=True)
    events = _assert_log_whole(log, [prefix])
    hint = events[len(before)]
    assert (hint.role, hint.hint_level, hint.turn_id) == ("mentor", 2, before[-1].turn_id)  # right where it was decided
    assert [e.hint_level for e in events if e.action.type == "hint"] == clean["m02"][1]
