"""Shared building blocks of every artifact: strict models and provenance."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnessforge import __version__


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


class Model(BaseModel):
    """Strict base: unknown fields are errors, so a typo in a hand-edited file is caught on read."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Provenance(Model):
    """Where an artifact came from, so any number in a dataset can be traced back."""

    harnessforge_version: str = __version__
    rules_hash: str = ""
    created_at: datetime = Field(default_factory=utcnow)


def first_error(e: ValidationError) -> str:
    """`field.path: message` of a validation error's first problem, for one-line error messages."""
    err = e.errors()[0]
    field = ".".join(str(part) for part in err["loc"]) or "(root)"
    return f"{field}: {err['msg']}"
