"""Load: 8 oracle chains at once on the example repository, whole artifacts and no container left;
then label-based cleanup of what a killed run leaves behind."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from harnessforge.envs.engine import LABEL
from harnessforge.harness.recorder import Recorder, read_summary

BIN = Path(sys.executable).parent / "harnessforge"
CHAINS = 8


def oracle_run(store, key: str, *options: str) -> list[str]:
    """The command line of a `harnessforge run` of oracle chains in Docker."""
    return [str(BIN), "--store", str(store.root), "run", key, "--agent", "oracle", "--sandbox", "docker", *options]


def _ours(docker_client, prefix: str) -> list:
    """HarnessForge containers of this test's runs only (other tests share the engine)."""
    every = docker_client.containers.list(all=True, filters={"label": LABEL})
    return [container for container in every if container.labels.get("harnessforge.run", "").startswith(prefix)]


def test_eight_chains_at_once_finish_whole_and_leave_no_container(validated, docker_client):
    store, key, _ = validated
    base = f"load-{uuid.uuid4().hex[:6]}"
    assert not _ours(docker_client, base)
    cmd = oracle_run(
        store, key, "--chains", str(CHAINS), "--workers", str(CHAINS), "--run-id", base, "--milestones", "m01,m02"
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "250"}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if f" {base}-" in line and " m0" in line]
    assert len(rows) == 2 * CHAINS and all("PASS" in row for row in rows), proc.stdout

    spans = []
    for i in range(1, CHAINS + 1):
        run_dir = store.root / "trajectories" / key / f"{base}-{i}"
        meta = json.loads((run_dir / "metadata.json").read_text())
        assert meta["run_id"] == f"{base}-{i}" and meta["synthetic"]
        for mid in ("m01", "m02"):
            summary = read_summary(run_dir / mid)
            assert summary.status == "PASS" and summary.run_id == f"{base}-{i}"
            recorder = Recorder.open(run_dir / mid)
            events = recorder.events()
            assert not recorder.warnings and [event.seq for event in events] == list(range(len(events)))
            assert {event.run_id for event in events} == {f"{base}-{i}"}  # no chain wrote into another's log
            assert events[0].action.type == "milestone_start" and events[-1].action.type == "milestone_end"
            assert [event.action.content for event in events if event.role == "verifier"][-1] == "PASS"
            atif = json.loads((run_dir / mid / "trajectory.atif.json").read_text())
            assert len(atif["steps"]) >= summary.turns
            assert not list((run_dir / mid).glob("workspace.*.patch"))
        assert read_summary(run_dir / "m02").carried_from == "m01"  # each chain carried its own m01 work
        logs = [Recorder.open(run_dir / mid).events() for mid in ("m01", "m02")]
        spans.append((logs[0][0].ts, logs[-1][-1].ts))
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # all 8 were running at one moment
    assert not _ours(docker_client, base), "a chain left a container behind"


def test_env_cleanup_removes_a_killed_runs_containers_and_only_those(validated, docker_client, base_image, run_cli):
    store, key, _ = validated
    run_id = f"leak-{uuid.uuid4().hex[:6]}"
    log = store.root / "trajectories" / key / run_id / "m01" / "trajectory.jsonl"
    cmd = oracle_run(store, key, "--run-id", run_id, "--milestones", "m01")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    bystanders = []
    try:
        deadline = time.monotonic() + 240
        while (not log.exists() or log.read_bytes().count(b"\n") < 3) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # mid-milestone: its sandbox is left running
        assert proc.wait() == -signal.SIGKILL
        mine = {"label": [LABEL, f"harnessforge.run={run_id}"]}
        leaked = {container.id for container in docker_client.containers.list(all=True, filters=mine)}
        assert leaked, "the killed run left no container to clean up"

        # A container without our label, and one of another HarnessForge run: neither is this run's.
        tag = f"hf-bystander-{run_id}"
        bystanders = [
            docker_client.containers.run(
                base_image, ["sleep", "infinity"], detach=True, network_mode="none", labels=labels, name=f"{tag}-{i}"
            )
            for i, labels in enumerate([{"hf-test": tag}, {LABEL: "sandbox", "harnessforge.run": f"{run_id}x"}])
        ]
        cleaned = run_cli("env", "cleanup", "--run-id", run_id, store=store.root, check=True)
        assert f"removed {len(leaked)} container(s)" in cleaned.stdout
        assert not docker_client.containers.list(all=True, filters=mine)
        assert not leaked & {container.id for container in docker_client.containers.list(all=True)}
        for container in bystanders:
            container.reload()
            assert container.status == "running", f"{container.name} was touched by the cleanup"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for container in bystanders:
            container.remove(force=True)
