"""A repository and how it screened."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from .common import Model, Provenance

REPO_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*__[A-Za-z0-9._-]+$")


class RepoSpec(Model):
    """What the user passed and where we clone it from.

    `key` is `owner__name`: safe as a Dagster partition key and as a directory name.
    """

    input: str
    kind: Literal["worktree", "bare", "url", "github"]
    url: str = Field(description="What `git clone` reads: a local path or a URL.")
    key: str
    github: str | None = Field(None, description="`owner/name` on GitHub, when known.")

    @field_validator("key")
    @classmethod
    def _key_is_partition_safe(cls, value: str) -> str:
        if not REPO_KEY_RE.match(value):
            raise ValueError(f"repo key {value!r} must look like owner__name using [A-Za-z0-9._-]")
        return value


class Criterion(Model):
    """One screening criterion: what was measured, against what, and why it passed or not."""

    name: str
    measured: Any = None
    threshold: str
    passed: bool | None = Field(description="None when the criterion could not be decided yet.")
    reason: str
    method: str = ""


class GitHubMeta(Model):
    full_name: str
    stars: int
    created_at: datetime | None = None
    pushed_at: datetime | None = None
    default_branch: str | None = None
    archived: bool = False


class ScreeningReport(Model):
    repo: RepoSpec
    head_commit: str
    head_date: datetime
    primary_language: str | None
    newest_release: str | None = Field(None, description="Tag of the newest release on the mainline.")
    criteria: list[Criterion]
    github: GitHubMeta | None = None
    provenance: Provenance = Field(default_factory=Provenance)

    @property
    def passed(self) -> bool:
        """Every decided criterion passed (undecided ones, like env builds, do not block)."""
        return all(criterion.passed is not False for criterion in self.criteria)

    def criterion(self, name: str) -> Criterion:
        return next(criterion for criterion in self.criteria if criterion.name == name)
