"""The Docker engine: connect once, with an error that says how to start one."""

from __future__ import annotations

import os

import docker
from docker.errors import DockerException

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


def cleanup(client: docker.DockerClient) -> int:
    """Remove every container HarnessForge left behind (e.g. after a crash); returns how many."""
    stale = client.containers.list(all=True, filters={"label": LABEL})
    for c in stale:
        c.remove(force=True)
    return len(stale)
