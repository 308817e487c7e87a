"""Options several commands share, with their help built from the core's tables of backends."""

from __future__ import annotations

from typing import Any

import typer

from ..agents.factory import BACKENDS, MODEL_BACKENDS
from ..envs.backends import AUTO, BACKEND_NAMES, SANDBOX_BACKENDS, concrete_backends
from ..errors import ConfigError


def either(names: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


SANDBOX_CHOICES = either((*concrete_backends(), AUTO))  # docker, local or auto: auto picks one of the others
SANDBOX_HELP = either(tuple(f"{name} ({SANDBOX_BACKENDS[name]})" for name in (*concrete_backends(), AUTO)))
AGENT_HELP = f"{either(BACKENDS)} (keys: env)"
MODEL_AGENTS = ", ".join(MODEL_BACKENDS)


def check_sandbox(value: str) -> str:
    if value not in BACKEND_NAMES:
        raise typer.BadParameter(f"{value!r}: use {SANDBOX_CHOICES}")
    return value


def sandbox_option() -> Any:
    """`--sandbox NAME`, checked against the backends table (a usage error, exit 2)."""
    return typer.Option(AUTO, "--sandbox", help=SANDBOX_HELP, callback=check_sandbox)


def check_model_backend(name: str, option: str) -> str:
    """A backend that is a model (the oracle cannot word a hint, rewrite a description or judge a run)."""
    if name not in MODEL_BACKENDS:
        raise ConfigError(f"{option} {name!r}: it needs a model backend, one of {MODEL_AGENTS}")
    return name
