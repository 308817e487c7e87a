"""`verify-tasks`: a task card must reproduce from the card alone, or it is dropped with the reason.

For each card: write its Harbor folder, `docker build` its environment (Dockerfile + repo bundle, on
the local base image; the build is the only step with network, the host CA bundle added for it), then
run the folder as Harbor runs it (task.toml's users and collect hooks, the verifier in a container of
its own), with the network off: solution, collect, then tests in a fresh container must write reward
1; an empty attempt, reward 0. Kept cards go to `distilled/verified_tasks.jsonl`, every verdict to
`distilled/task_checks.json` (one milestone's folder with `milestone=`).
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import tomllib
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import docker

from ..atomic import atomic_write
from ..distill.outputs import TASK_CARDS, VERIFIED_TASKS, read_distilled
from ..envs import engine
from ..envs.images import CA_VARS, HOST_CA
from ..errors import ArtifactError
from ..models.distill import TaskCard
from ..rules import Rules
from ..store import Store
from .harbor import AGENT_PATCH, BASE_ARG, harbor_tasks, local_base

LABEL = {"harnessforge": "verify-tasks"}


@dataclass
class CardCheck:
    task_id: str
    reproduced: bool
    reference_reward: str = ""
    empty_reward: str = ""
    reason: str = ""
    image: str = ""


def verify_tasks(
    store: Store, rules: Rules, only: list[str] | None = None, log=print, milestone: tuple[str, str] | None = None
) -> list[CardCheck]:
    """Check the cards (those in `only`, default all) of the store, or of one milestone's folder."""
    path = store.distilled_file(TASK_CARDS.stem, milestone)
    if not path.exists():
        raise ArtifactError(f"{path}: no task cards yet; run `harnessforge distill` first")
    every = read_distilled(store, TASK_CARDS, milestone)
    cards = [card for card in every if not only or card.task_id in only]
    # it builds each task's image: a build's API calls take minutes on a busy engine, as in `build`
    client = engine.connect(timeout=rules.environments.build_timeout_s) if cards else None
    checks, kept = [], []
    with tempfile.TemporaryDirectory(prefix="hf-verify-") as scratch:
        for card in cards:
            (folder,) = harbor_tasks(store, [card], Path(scratch), rules)
            check = _check(client, card, folder, rules)
            log(f"{card.task_id}: {'reproduced' if check.reproduced else 'dropped: ' + check.reason}")
            checks.append(check)
            if check.reproduced:
                kept.append(card)
    # with `only`, the cards not checked this time keep their earlier verdicts; without, all are new
    checked = {card.task_id for card in cards} if only else set()
    if only:
        kept = [card for card in read_distilled(store, VERIFIED_TASKS, milestone) if card.task_id not in checked] + kept
        order = {card.task_id: index for index, card in enumerate(every)}  # the cards' order, not the checks'
        kept.sort(key=lambda card: order.get(card.task_id, len(order)))
    rows = b"".join(card.model_dump_json().encode() + b"\n" for card in kept)
    atomic_write(store.distilled_file(VERIFIED_TASKS.stem, milestone), rows)
    verdicts_file = store.task_checks_file(milestone)
    earlier = json.loads(verdicts_file.read_text()) if only and verdicts_file.exists() else []
    verdicts = [verdict for verdict in earlier if verdict["task_id"] not in checked] + [asdict(c) for c in checks]
    verdicts = json.dumps(verdicts, indent=2) + "\n"
    atomic_write(verdicts_file, verdicts.encode())
    return checks


def _check(client: docker.DockerClient, card: TaskCard, folder: Path, rules: Rules) -> CardCheck:
    tag = f"harnessforge-task/{card.task_id.lower()}:verify"
    context = folder / "environment"
    shutil.copyfile(HOST_CA, context / "hf-build-ca.crt")
    lines = (context / "Dockerfile").read_text().splitlines()
    build_ca = "/tmp/hf-build-ca.crt"  # for the build only: removed, and its variables unset, at the end
    after_from = next(index for index, line in enumerate(lines) if line.startswith("FROM ")) + 1
    lines[after_from:after_from] = [
        f"COPY hf-build-ca.crt {build_ca}",
        "ENV " + " ".join(f"{name}={build_ca}" for name in CA_VARS),
    ]
    lines += ["USER root", f"RUN rm -f {build_ca}", "ENV " + " ".join(f"{name}=" for name in CA_VARS), "USER 1000"]
    (context / "Dockerfile.verify").write_text("\n".join(lines) + "\n")
    build = {
        "path": str(context),
        "dockerfile": "Dockerfile.verify",
        "tag": tag,
        "buildargs": {BASE_ARG: local_base(card)},
        "network_mode": "host",
        "rm": True,
        "forcerm": True,
        "labels": LABEL,
        "timeout": rules.environments.build_timeout_s,
    }
    try:
        client.images.build(**build)
    except (docker.errors.BuildError, docker.errors.APIError) as e:
        tail = "".join(str(entry.get("stream", "")) for entry in getattr(e, "build_log", []) or [])[-600:]
        return CardCheck(card.task_id, False, reason=f"environment does not build: {e} {tail}".strip(), image=tag)
    reference = _reward(client, tag, folder, with_solution=True, timeout=rules.environments.test_timeout_s)
    empty = _reward(client, tag, folder, with_solution=False, timeout=rules.environments.test_timeout_s)
    ok = reference == "1" and empty == "0"
    reason = "" if ok else f"reference solution scored {reference or 'nothing'}, empty attempt {empty or 'nothing'}"
    return CardCheck(card.task_id, ok, reference, empty, reason, tag)


def _reward(client: docker.DockerClient, tag: str, folder: Path, with_solution: bool, timeout: int) -> str:
    """The attempt (the solution, or nothing) as the agent in one container, its changes collected by
    task.toml's hooks, then the tests as the verifier in a fresh container; no network in either."""
    config = tomllib.loads((folder / "task.toml").read_text())
    users = {table: str(config[table].get("user", "")) for table in ("agent", "verifier")}  # "": the image's USER
    with _container(client, tag, timeout) as agent:
        if with_solution:
            agent.put_archive("/", _tar(folder, ["solution"]))
            agent.exec_run(["bash", "/solution/solve.sh"], user=users["agent"])
        for hook in config["verifier"].get("collect", []):
            agent.exec_run(["bash", "-c", hook["command"]], user=str(hook.get("user", "")))
        code, patch = agent.exec_run(["cat", AGENT_PATCH])
    with _container(client, tag, timeout) as verifier:
        verifier.put_archive("/", _tar(folder, ["tests"]))
        if code == 0:
            verifier.put_archive("/", _file_tar(AGENT_PATCH.lstrip("/"), patch))
        verifier.exec_run(["bash", "-c", f"timeout {timeout} bash /tests/test.sh"], user=users["verifier"])
        code, out = verifier.exec_run(["cat", "/logs/verifier/reward.txt"])
        return out.decode().strip() if code == 0 else ""


@contextmanager
def _container(client: docker.DockerClient, tag: str, timeout: int):
    """A container of the image as its Dockerfile leaves it (its USER), with Harbor's log folders."""
    container = client.containers.run(
        tag, ["sleep", str(timeout + 120)], detach=True, network_mode="none", labels=LABEL
    )
    try:
        container.exec_run(["sh", "-c", "mkdir -p /logs/verifier /logs/artifacts && chmod 777 /logs/*"], user="root")
        yield container
    finally:
        container.remove(force=True)


def _file_tar(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _tar(folder: Path, directories: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in directories:
            tar.add(folder / directory, arcname=directory)
    return buffer.getvalue()
