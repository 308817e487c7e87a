"""The sandbox backends, by name with a one-line description: the one table the command line, the
Dagster resource and `Environment` read, so a backend is added or described in one place."""

from __future__ import annotations

from typing import Literal

Backend = Literal["auto", "docker", "local"]

AUTO: Backend = "auto"
SANDBOX_BACKENDS: dict[Backend, str] = {
    "auto": "docker when the repo has images and an engine answers, else local",
    "docker": "the repo's built image",
    "local": "bubblewrap/unshare with the host's toolchain",
}
BACKEND_NAMES: tuple[Backend, ...] = tuple(SANDBOX_BACKENDS)


def concrete_backends() -> tuple[Backend, ...]:
    """The backends that run a sandbox themselves (every one but `auto`, which picks among them)."""
    return tuple(name for name in BACKEND_NAMES if name != AUTO)
