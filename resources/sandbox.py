"""Where milestone tests and the Dev's commands run, and with which limits."""

from typing import Optional

import dagster as dg
from pydantic import Field, field_validator

from harnessforge.envs.backends import AUTO, BACKEND_NAMES, SANDBOX_BACKENDS, concrete_backends
from harnessforge.rules import EnvRules, Rules

from .choices import one_of

LIMITS = ("memory", "cpus", "pids_limit", "exec_timeout_s")


class SandboxResource(dg.ConfigurableResource):
    """The sandbox backend handed to the core's `validate` and `Navigator`, with optional limits that
    override the rules' `environments` section (unset: the rules' values)."""

    backend: str = Field(
        AUTO,
        description="; ".join(f"{name}: {SANDBOX_BACKENDS[name]}" for name in (*concrete_backends(), AUTO)),
    )
    memory: Optional[str] = Field(None, description="Memory limit per sandbox, e.g. 2g")
    cpus: Optional[float] = Field(None, description="CPUs per sandbox, e.g. 1.5")
    pids_limit: Optional[int] = Field(None, description="Processes per sandbox")
    exec_timeout_s: Optional[int] = Field(None, description="Seconds one command may run")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return one_of(value, BACKEND_NAMES, "sandbox backend")

    def rules(self, rules: Rules) -> Rules:
        """`rules` with this resource's limits in its `environments` section (validated like the rules file)."""
        limits = {name: value for name in LIMITS if (value := getattr(self, name)) is not None}
        if not limits:
            return rules
        environments = EnvRules.model_validate({**rules.environments.model_dump(), **limits})
        return rules.model_copy(update={"environments": environments})
