"""Fault injection: the Docker engine restarts, or a sandbox container vanishes, under a running milestone.

The milestone is retried once in a fresh sandbox, resumed from its event log, and ends as an
uninterrupted run would; if the engine stays away (or the retry is lost too) its summary is ENV_ERROR
with the reason, the run stops with one line, and running the command again completes it. Everything
runs on a private dockerd started here (own socket, data and exec roots, the env image copied in),
never on the shared one: it is restarted at will, and other sessions rebuilding the shared image tag
cannot pull it from under these runs.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import docker
import pytest
import requests

from harnessforge.agents.oracle import OracleAgent
from harnessforge.errors import EnvError
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder, read_summary
from harnessforge.rules import load_rules
from tests.helpers import cli_command

MID, PROFILE = "m02", "needs_hints"  # long enough to be interrupted, with hints whose replay must not repeat


# ---- a private Docker engine --------------------------------------------------------------------
class PrivateEngine:
    """A dockerd of our own (the shared one at /var/run/docker.sock is never touched), restartable on
    one data root. `--bridge=none --iptables=false` as scripts/start-docker.sh starts the shared one."""

    def __init__(self, root: Path):
        self.root = root
        self.url = f"unix://{root}/docker.sock"
        (root / "daemon.json").write_text("{}")  # not the host's /etc/docker/daemon.json
        self.proc: subprocess.Popen | None = None
        self.client: docker.DockerClient | None = None

    def start(self) -> None:
        r = self.root
        argv = [
            "dockerd",
            "--host",
            self.url,
            "--data-root",
            f"{r}/data",
            "--exec-root",
            f"{r}/exec",
            "--pidfile",
            f"{r}/docker.pid",
            "--config-file",
            f"{r}/daemon.json",
            "--bridge=none",
            "--iptables=false",
        ]
        with open(r / "dockerd.log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:  # the client asks the engine its API version when created
                self.client = self.client or docker.DockerClient(base_url=self.url, timeout=60)
                self.client.ping()
                return
            except (docker.errors.DockerException, requests.RequestException):
                time.sleep(0.2)
        raise RuntimeError(f"private dockerd did not come up:\n{(r / 'dockerd.log').read_text()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM, as a service manager restarting it would; it stops its containers and its containerd."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def processes(self) -> list[int]:
        """Processes started for this engine (dockerd, containerd, shims): their command lines name its root."""
        pids = []
        for p in Path("/proc").iterdir():
            try:
                if p.name.isdigit() and str(self.root).encode() in (p / "cmdline").read_bytes():
                    pids.append(int(p.name))
            except OSError:
                continue
        return pids

    def mounts(self) -> list[str]:
        return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(self.root) in line]


def _load_image(shared: docker.DockerClient, private: docker.DockerClient, image_id: str, tag: str) -> None:
    """`docker save | docker load`, streamed through the SDK. A private tag pins the image on the shared
    engine meanwhile, so another session rebuilding `tag` cannot delete it under the transfer."""
    pin = f"harnessforge-test/engine-restart:{os.getpid()}"
    shared.images.get(image_id).tag(pin)
    try:
        # its own client: an export can take longer than the shared client's 10 s to start on a busy engine
        exporter = docker.from_env(timeout=600)
        try:
            out = list(private.api.load_image(exporter.api.get_image(pin, chunk_size=1 << 20)))
        finally:
            exporter.close()
        assert not [x for x in out if "error" in x], out
        private.images.get(pin).tag(tag)
    finally:
        shared.images.remove(pin)  # only our tag: the image stays while `tag` names it


@pytest.fixture(scope="module")
def private_engine(env_store, docker_client):
    _, _, images = env_store
    root = Path(tempfile.mkdtemp(prefix="hf-engine-", dir="/dev/shm"))  # tmpfs: removing 17k files from disk takes 20s
    engine = PrivateEngine(root)  # starts nothing
    try:
        t = time.monotonic()
        engine.start()
        started = time.monotonic() - t
        t = time.monotonic()
        for record in images.images:
            _load_image(docker_client, engine.client, record.image_id, record.tag)
        driver = engine.client.info()["Driver"]
        print(f"\nprivate dockerd ({driver}) up in {started:.1f}s; env image loaded in {time.monotonic() - t:.1f}s")
        yield engine
    finally:
        engine.stop()
        deadline = time.monotonic() + 30  # shims exit once their container is stopped
        while engine.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        leaked = engine.processes()
        for pid in leaked:
            os.kill(pid, signal.SIGKILL)
        for mount in reversed(engine.mounts()):
            subprocess.run(["umount", "-l", mount], check=False)
        shutil.rmtree(root, ignore_errors=True)
        assert not leaked, f"the private engine left processes behind: {leaked}"
        assert not root.exists(), f"{root} could not be removed"


@pytest.fixture
def run_cli():
    """`harnessforge run` of the milestone against an engine; whatever is still running at the end is killed."""
    procs: list[subprocess.Popen] = []

    def start(store, key, run_id, engine: PrivateEngine, rules: Path | None = None) -> subprocess.Popen:
        arguments = f"run {key} --agent oracle --run-id {run_id} --milestones {MID} --profile {MID}={PROFILE}"
        cmd = cli_command(store, arguments, "--sandbox", "docker", rules=rules)
        env = {**os.environ, "COLUMNS": "200", "DOCKER_HOST": engine.url}
        procs.append(
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        )
        return procs[-1]

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for_events(log: Path, n: int, proc: subprocess.Popen) -> bytes:
    deadline = time.monotonic() + 240
    while (not log.exists() or log.read_bytes().count(b"\n") < n) and proc.poll() is None:
        assert time.monotonic() < deadline, "the run did not get going"
        time.sleep(0.02)
    assert proc.poll() is None and not (log.parent / "summary.json").exists(), "the run ended before the fault"
    data = log.read_bytes()
    return data[: data.rfind(b"\n") + 1]


# ---- what every interrupted run must still be -------------------------------------------------------
def _trace(events) -> list[tuple]:
    """What the Dev did and was told, without the env_error records: equal to an uninterrupted run's."""
    return [
        (
            e.role,
            e.turn_id,
            e.action.type,
            e.call_id,
            json.dumps(e.action.args, sort_keys=True),
            e.hint_level,
            e.test_status,
            e.action.content if e.role == "verifier" else "",
        )
        for e in events
        if e.action.type != "env_error"
    ]


def _check_log(milestone_dir: Path, clean: list[tuple], lost: int) -> list:
    events = Recorder.open(milestone_dir).events()
    assert [e.seq for e in events] == list(range(len(events)))
    faults = [e for e in events if e.action.type == "env_error"]
    assert len(faults) == lost and all(e.role == "navigator" and "was lost" in e.action.content for e in faults)
    assert _trace(events) == clean  # nothing lost, nothing repeated, no half state carried into the retry
    calls = [e for e in events if e.role == "dev" and e.call_id]
    assert not [e for e in calls if "was lost" in e.observation]  # the loss never reached the Dev
    assert [e.action.type for e in events].count("milestone_end") == 1 and events[-1].action.type == "milestone_end"
    assert not list(milestone_dir.glob("workspace.*.patch"))
    return events


def _run_labelled(client: docker.DockerClient, run_id: str) -> list:
    return client.containers.list(all=True, filters={"label": f"harnessforge.run={run_id}"})


@pytest.fixture(scope="module")
def clean(validated, private_engine):
    """An uninterrupted run of the milestone: what every interrupted one must end up equal to."""
    store, key, _ = validated
    t = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", private_engine.url)
        [summary] = _navigator(store, key, "oracle-engine-clean", []).run([MID])
    print(f"\nclean run of {MID}: {time.monotonic() - t:.1f}s")
    assert summary.status == "PASS" and summary.hints_released[:2] == [1, 2]
    return _trace(Recorder.open(store.root / "trajectories" / key / "oracle-engine-clean" / MID).events()), summary


# ---- the sandbox container removed under the milestone (in-process, a hook between Dev turns) -------
def _navigator(store, key, run_id, logs: list[str], on_turn=None) -> Navigator:
    return Navigator(
        store,
        key,
        OracleAgent(seed=0, profiles={MID: PROFILE}),
        load_rules(),
        run_id=run_id,
        backend="docker",
        log=logs.append,
        on_turn=on_turn,
    )


def _remover(client: docker.DockerClient, run_id: str, at_turns: set[int], removed: list[str]):
    """`on_turn` hook: after the given Dev turns, remove this run's milestone sandbox (only ours, by label)."""

    def on_turn(mid, turn, *_):
        if turn in at_turns:
            at_turns.discard(turn)
            labels = [f"harnessforge.run={run_id}", "harnessforge.stage=run"]
            for c in client.containers.list(all=True, filters={"label": labels}):
                c.remove(force=True)
                removed.append(c.id)

    return on_turn


def test_a_removed_sandbox_is_retried_and_if_lost_again_is_env_error_until_rerun(
    validated, private_engine, clean, monkeypatch
):
    """The container removed after turn 4: the retry resumes from the log in a fresh sandbox; removed
    again after turn 6: ENV_ERROR, one line, unfinished; the rerun completes as a clean run would."""
    store, key, _ = validated
    monkeypatch.setenv("DOCKER_HOST", private_engine.url)
    client = private_engine.client
    run_id, logs, removed = "oracle-sandbox-removed", [], []
    nav = _navigator(store, key, run_id, logs, _remover(client, run_id, {4, 6}, removed))
    with pytest.raises(EnvError, match=f"^{key} {MID}: ENV_ERROR: .*run the same command again to resume$"):
        nav.run([MID])
    assert len(removed) == 2
    mdir = nav.run_dir / MID
    events = Recorder.open(mdir).events()
    faults = [e for e in events if e.action.type == "env_error"]
    assert [e.action.args for e in faults] == [{"reason": "sandbox_error", "attempt": a} for a in (1, 2)]
    assert [f"{c[:12]} " in e.action.content for c, e in zip(removed, faults, strict=True)] == [True, True]
    assert any("retrying in a fresh sandbox" in line for line in logs)
    assert any(f"resumed at event {faults[0].seq + 1}" in line for line in logs)  # right after the fault
    summary = read_summary(mdir)
    assert summary.status == "ENV_ERROR" and "again, after a retry in a fresh sandbox" in summary.error
    assert "milestone_end" not in [e.action.type for e in events]  # unfinished: a rerun resumes it
    assert not _run_labelled(client, run_id)  # the lost sandboxes were removed once the engine answered
    before = (mdir / "trajectory.jsonl").read_bytes()

    [again] = _navigator(store, key, run_id, logs).run([MID])
    assert again.status == "PASS" and again.error is None
    assert (again.turns, again.hints_released) == (clean[1].turns, clean[1].hints_released)
    assert (mdir / "trajectory.jsonl").read_bytes().startswith(before)
    _check_log(mdir, clean[0], lost=2)
    assert not _run_labelled(client, run_id)


# ---- the engine restarted under `harnessforge run` -------------------------------------------------
def test_an_engine_restart_mid_milestone_is_retried_cleanly(validated, private_engine, clean, run_cli):
    store, key, _ = validated
    run_id = "oracle-engine-restart"
    log = store.root / "trajectories" / key / run_id / MID / "trajectory.jsonl"
    t = time.monotonic()
    proc = run_cli(store, key, run_id, private_engine)
    prefix = _wait_for_events(log, 12, proc)
    r = time.monotonic()
    private_engine.stop()
    private_engine.start()
    restart_s = time.monotonic() - r
    out, err = proc.communicate(timeout=300)
    print(f"\nrun with an engine restart ({restart_s:.1f}s of it) took {time.monotonic() - t:.1f}s")
    text = (out + err).decode()
    assert proc.returncode == 0, text[-3000:]
    assert "Traceback" not in text and "retrying in a fresh sandbox" in text and "resumed at event" in text
    assert log.read_bytes().startswith(prefix)
    summary = read_summary(log.parent)
    assert summary.status == "PASS" and summary.hints_released == clean[1].hints_released
    _check_log(log.parent, clean[0], lost=1)
    assert not _run_labelled(private_engine.client, run_id)


def test_an_engine_that_stays_away_is_env_error_in_one_line_and_a_rerun_completes(
    validated, private_engine, clean, run_cli, tmp_path
):
    store, key, _ = validated
    run_id = "oracle-engine-gone"
    log = store.root / "trajectories" / key / run_id / MID / "trajectory.jsonl"
    rules = tmp_path / "rules.yaml"
    rules.write_text("harness:\n  engine_wait_s: 2\n")
    proc = run_cli(store, key, run_id, private_engine, rules)
    prefix = _wait_for_events(log, 12, proc)
    private_engine.stop()
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        private_engine.start()
    text = (out + err).decode()
    assert proc.returncode == 1, text[-3000:]
    assert "Traceback" not in text
    [line] = [x for x in text.splitlines() if x.startswith("error:")]
    print(f"\n{line}")
    assert f"{key} {MID}: ENV_ERROR:" in line and "did not answer within 2s" in line and "run the same command" in line
    summary = read_summary(log.parent)
    assert summary.status == "ENV_ERROR" and "did not answer within 2s" in summary.error
    assert log.read_bytes().startswith(prefix)

    rerun = run_cli(store, key, run_id, private_engine, rules)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, (out + err).decode()[-3000:]
    assert "resumed at event" in (out + err).decode()
    summary = read_summary(log.parent)
    assert summary.status == "PASS" and summary.hints_released == clean[1].hints_released and summary.error is None
    _check_log(log.parent, clean[0], lost=1)
    assert not _run_labelled(private_engine.client, run_id)  # the lost sandbox went when the rerun resumed
