"""Where milestone tests and the Dev's commands run, and with which limits."""

from typing import Optional

import dagster as dg
from pydantic import Field, field_validator

from harnessforge.rules import EnvRules, Rules

from .choices import one_of

BACKENDS = ("auto", "docker", "local")


class SandboxResource(dg.ConfigurableResource):
    """The sandbox backend handed to the core's `validate` and `Navigator`, with optional limits that
    override the rules' `environments` section (unset: the rules' values)."""

    backend: str = Field(
        "auto",
        description="docker: the repo's built image; local: the host's toolchain; "
        "auto: docker when the repo has images and an engine answers, else local",
    )
    memory: Optional[str] = Field(None, description="Memory limit per sandbox, e.g. 2g")
    cpus: Optional[float] = Field(None, description="CPUs per sandbox, e.g. 1.5")
    pids_limit: Optional[int] = Field(None, description="Processes per sandbox")
    exec_timeout_s: Optional[int] = Field(None, description="Seconds one command may run")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return one_of(value, BACKENDS, "sandbox backend")

    def rules(self, rules: Rules) -> Rules:
        """`rules` with this resource's limits in its `environments` section (validated like the rules file)."""
        limits = {
            k: v for k in ("memory", "cpus", "pids_limit", "exec_timeout_s") if (v := getattr(self, k)) is not None
        }
        if not limits:
            return rules
        env = EnvRules.model_validate({**rules.environments.model_dump(), **limits})
        return rules.model_copy(update={"environments": env})
