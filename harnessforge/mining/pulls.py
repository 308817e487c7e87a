"""PR attribution from history: each mainline commit becomes a Unit of work.

A first-parent walk sees one commit per change that landed on the mainline:
- `Merge pull request #N from ...` (GitHub), `Merge #N` (bors), `See merge request x!N` (GitLab):
  a merged PR; its commits are those the merge brought in (reachable from its side parents and
  not brought in before);
- `Title (#N)`: a squash-merged PR, or a merge commit given its PR's title (as pallets merges);
- anything else: a direct commit.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from ..gitio import Change, Commit, GitRepo, display
from ..models import FileChange, PullRef
from .refs import linked_issues

MERGE_PR = [
    re.compile(r"^Merge pull request #(\d+) from \S+"),
    re.compile(r"^Merge #(\d+)\b"),
]
GITLAB_MR = re.compile(r"See merge request \S*!(\d+)")
SQUASH_PR = re.compile(r"^(.*?)\s*\(#(\d+)\)\s*$")


@dataclass
class Unit:
    """One mainline commit and the change it brought (a PR or a direct commit)."""

    commit: Commit
    pr: int | None
    kind: str  # merge | squash | direct
    title: str
    body: str
    side_commits: list[str] = field(default_factory=list)
    side_messages: list[tuple[str, str]] = field(default_factory=list)
    issues: set[int] = field(default_factory=set)

    @property
    def sha(self) -> str:
        return self.commit.sha

    @property
    def files(self) -> list[Change]:
        return self.commit.files

    @property
    def lines(self) -> int:
        return sum(f.added + f.deleted for f in self.commit.files)

    def to_pull(self) -> PullRef:
        files = [
            FileChange(
                path=display(f.path),
                added=f.added,
                deleted=f.deleted,
                binary=f.binary,
                old_path=display(f.old_path) if f.old_path else None,
            )
            for f in self.commit.files
        ]
        return PullRef(
            number=self.pr or 0,
            kind="merge" if self.kind == "merge" else "squash",
            title=self.title,
            body=self.body,
            mainline_commit=self.sha,
            commits=self.side_commits or [self.sha],
            files=files,
            additions=sum(f.added for f in files),
            deletions=sum(f.deleted for f in files),
            issues=sorted(self.issues),
        )


def _classify(c: Commit) -> tuple[int | None, str, str, str]:
    """(pr, kind, title, body) of a mainline commit."""
    if c.is_merge:
        for pattern in MERGE_PR:
            m = pattern.match(c.subject)
            if m:
                title, _, body = c.body.partition("\n\n")
                return int(m[1]), "merge", title.strip() or c.subject, body.strip()
        m = GITLAB_MR.search(c.body)
        if m:
            return int(m[1]), "merge", c.subject, c.body
        m = SQUASH_PR.match(c.subject)  # a merge commit titled like its PR: `Title (#N)` (pallets style)
        if m and m[1]:
            return int(m[2]), "merge", m[1], c.body
        return None, "merge", c.subject, c.body
    m = SQUASH_PR.match(c.subject)
    if m and m[1]:
        return int(m[2]), "squash", m[1], c.body
    return None, "direct", c.subject, c.body


def side_commits(mainline: list[Commit], parents: dict[str, list[str]]) -> dict[str, list[str]]:
    """For each merge on the mainline: the commits it brought in, oldest first.

    Walking merges in mainline order and claiming each commit once gives `git rev-list
    p1..merge` for every merge, in one pass over the graph instead of one git call per merge.
    """
    claimed = {c.sha for c in mainline}
    out: dict[str, list[str]] = {}
    for c in mainline:
        if not c.is_merge:
            continue
        found: list[str] = []
        todo = deque(c.parents[1:])
        while todo:
            sha = todo.popleft()
            if sha in claimed or sha not in parents:
                continue
            claimed.add(sha)
            found.append(sha)
            todo.extend(parents[sha])
        out[c.sha] = found[::-1]
    return out


def attribute(repo: GitRepo, mainline: list[Commit], start: str | None) -> list[Unit]:
    """Units for `mainline` (the first-parent commits after `start`), PRs attributed."""
    graph = repo.graph(start, mainline[-1].sha) if any(c.is_merge for c in mainline) else {}
    sides = side_commits(mainline, {sha: parents for sha, (parents, _, _) in graph.items()})
    units = []
    for c in mainline:
        pr, kind, title, body = _classify(c)
        shas = sides.get(c.sha, [])
        msgs = [graph[s][1:] for s in shas]
        text = "\n".join([c.subject, c.body, *(f"{s}\n{b}" for s, b in msgs)])
        issues = linked_issues(text) - ({pr} if pr else set())
        units.append(Unit(c, pr, kind, title, body, shas, msgs, issues))
    return units
