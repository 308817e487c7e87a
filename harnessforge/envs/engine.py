"""The Docker engine: connect once, with an error that says how to start one."""

from __future__ import annotations

import os
import time

import docker
import requests
from docker.errors import DockerException, NotFound

from ..errors import EnvError

LABEL = "harnessforge"  # every container and image we create carries it, for cleanup


def connect(timeout: int = 10) -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except DockerException as e:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise EnvError(
            f"no Docker engine answered at {where} ({e.__class__.__name__}); start one with "
            "`dockerd --bridge=none --iptables=false &`, or use the local sandbox (--sandbox local)",
            reason="sandbox_error",
        ) from None


def available() -> bool:
    try:
        connect(timeout=3)
        return True
    except EnvError:
        return False


def cleanup(client: docker.DockerClient, run_id: str | None = None) -> int:
    """Remove every container HarnessForge left behind (e.g. after a crash), or only those of one run
    (its sandboxes and grading sandboxes carry `harnessforge.run`); returns how many."""
    labels = [LABEL] + ([f"harnessforge.run={run_id}"] if run_id else [])
    removed = 0
    for container in client.containers.list(all=True, filters={"label": labels}):
        try:
            container.remove(force=True)
            removed += 1
        except NotFound:  # gone meanwhile (its run ended, or another cleanup got there first)
            pass
    return removed


def recover(client: docker.DockerClient, labels: dict[str, str], timeout_s: float) -> bool:
    """Wait up to `timeout_s` for the engine to answer again (e.g. while it restarts), then remove the
    containers carrying all of `labels`: lost with it, they could not be removed while it was away.
    False if it stays away."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.ping()
            for container in client.containers.list(
                all=True, filters={"label": [f"{key}={value}" for key, value in labels.items()]}
            ):
                container.remove(force=True)
            return True
        except (DockerException, requests.RequestException):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)
