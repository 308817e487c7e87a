"""Where milestone tests run: in the repo's Docker image, on the host, or whichever is available."""

import dagster as dg
from pydantic import Field, field_validator

from .choices import one_of

BACKENDS = ("auto", "docker", "local")


class SandboxResource(dg.ConfigurableResource):
    """The sandbox backend handed to the core's `validate` (and later to grading and agent runs)."""

    backend: str = Field(
        "auto",
        description="docker: the repo's built image; local: the host's toolchain; "
        "auto: docker when the repo has images and an engine answers, else local",
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return one_of(value, BACKENDS, "sandbox backend")
