"""What mining reads from a repository's history: releases, changelog entries, pull requests."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from .common import Model


class Release(Model):
    tag: str
    version: str
    commit: str
    mainline_commit: str = Field(
        description="The first first-parent commit that contains the tag (the tag's own commit "
        "when it sits on the mainline)."
    )
    date: datetime
    maintenance: bool = Field(
        False,
        description="A patch release tagged off the range's first-parent line (on a maintenance branch merged "
        "back): it counts for changelog attribution, never as a milestone boundary.",
    )


EntryPlacement = Literal["reference", "fragment", "entry_commit", "identifiers", "topic", "added_by", "unplaced"]


class ChangelogEntry(Model):
    text: str
    release: str | None = Field(description="Normalised version, or None for unreleased.")
    category: str | None = None
    context: str = Field(
        "",
        description="Release-note prose and examples that explain this entry (a migration tip, an example after "
        "the entries), in the entry's markup: shown with it, never an entry of its own.",
    )
    source: str = Field(description="File (and format) the entry was read from.")
    prs: list[int] = []
    issues: list[int] = []
    refs: list[int] = Field([], description="Bare #N references not yet known to be PR or issue.")
    commits: list[str] = Field(
        [], description="Commits tying the entry to code by themselves: the one that added its fragment, note or line."
    )
    written_by: str | None = Field(
        None, description="The range's commit whose diff added the entry's line, whatever else it did (a release)."
    )
    milestone: str | None = Field(None, description="The milestone whose task carries the entry (None: none does).")
    placed_by: EntryPlacement | None = Field(
        None,
        description="How it was tied to its code: reference (the PRs or issues it cites), fragment (the commit "
        "adding its fragment or note), entry_commit (the work that added its own line), identifiers (the work "
        "whose diff has the names it names), topic (the work whose title says it), added_by (the work nearest "
        "before the commit that wrote it), unplaced.",
    )


class CommitRole(Model):
    """How planning read one mainline commit: work (and of which kind), tests only, housekeeping (and why)
    or a backport. Housekeeping never appears in a title, a description or a hint."""

    sha: str
    subject: str
    pr: int | None = None
    role: Literal["feature", "test_only", "housekeeping", "backport"]
    kind: str | None = Field(None, description="The work's kind: feature, performance, bug fix, refactor.")
    housekeeping: str | None = Field(
        None, description="Why it is housekeeping or a backport: ci, packaging, docs, formatting, version, revert, ..."
    )
    reason: str | None = None


class FileChange(Model):
    path: str
    added: int
    deleted: int
    binary: bool = False
    old_path: str | None = None


class PullRef(Model):
    """A pull request as history shows it (and GitHub, when enriched)."""

    number: int
    kind: Literal["merge", "squash"]
    title: str
    body: str = ""
    mainline_commit: str
    commits: list[str]
    files: list[FileChange] = []
    additions: int = 0
    deletions: int = 0
    issues: list[int] = []
    labels: list[str] = []
    review_comments: list[str] = []
    enriched: bool = False
