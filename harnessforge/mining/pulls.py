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
from ..refs import linked_issues

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
        return sum(file.added + file.deleted for file in self.commit.files)

    def to_pull(self) -> PullRef:
        files = [
            FileChange(
                path=display(file.path),
                added=file.added,
                deleted=file.deleted,
                binary=file.binary,
                old_path=display(file.old_path) if file.old_path else None,
            )
            for file in self.commit.files
        ]
        return PullRef(
            number=self.pr or 0,
            kind="merge" if self.kind == "merge" else "squash",
            title=self.title,
            body=self.body,
            mainline_commit=self.sha,
            commits=self.side_commits or [self.sha],
            files=files,
            additions=sum(file.added for file in files),
            deletions=sum(file.deleted for file in files),
            issues=sorted(self.issues),
        )


# Lines of a commit message that say nothing about the change: trailers ("Signed-off-by: ...", "Change-Id: ..."),
# a cherry-pick's note. A merge whose body is only its trailer has no title of its own.
TRAILER = re.compile(r"^\s*(?:[\w-]+-by|change-id)\s*:|^\s*\(?cherry picked from", re.I)


def without_trailers(body: str) -> str:
    return "\n".join(line for line in body.strip().splitlines() if not TRAILER.match(line)).strip()


def _classify(commit: Commit) -> tuple[int | None, str, str, str]:
    """(pr, kind, title, body) of a mainline commit."""
    if commit.is_merge:
        for pattern in MERGE_PR:
            match = pattern.match(commit.subject)
            if match:
                title, _, body = without_trailers(commit.body).partition("\n\n")
                branch = _words(commit.subject.rpartition(" from ")[2].partition("/")[2])
                if _words(title) == branch or not re.search(r"[A-Za-z]{3}", title):
                    # titled by its branch name ("Malawi" from olekukonko/malawi), or by no word (dayjs' release
                    # train from `dev`, "D2M"): no statement
                    title = ""
                return int(match[1]), "merge", title.strip() or commit.subject, body.strip()
        match = GITLAB_MR.search(commit.body)
        if match:
            return int(match[1]), "merge", commit.subject, commit.body
        match = SQUASH_PR.match(commit.subject)  # a merge commit titled like its PR: `Title (#N)` (pallets style)
        if match and match[1]:
            return int(match[2]), "merge", match[1], commit.body
        return None, "merge", commit.subject, commit.body
    match = SQUASH_PR.match(commit.subject)
    if match and match[1]:
        return int(match[2]), "squash", match[1], commit.body
    return None, "direct", commit.subject, commit.body


def side_commits(mainline: list[Commit], parents: dict[str, list[str]]) -> dict[str, list[str]]:
    """For each merge on the mainline: the commits it brought in, oldest first.

    Walking merges in mainline order and claiming each commit once gives `git rev-list
    p1..merge` for every merge, in one pass over the graph instead of one git call per merge.
    """
    claimed = {commit.sha for commit in mainline}
    out: dict[str, list[str]] = {}
    for commit in mainline:
        if not commit.is_merge:
            continue
        found: list[str] = []
        todo = deque(commit.parents[1:])
        while todo:
            sha = todo.popleft()
            if sha in claimed or sha not in parents:
                continue
            claimed.add(sha)
            found.append(sha)
            todo.extend(parents[sha])
        out[commit.sha] = found[::-1]
    return out


def attribute(repo: GitRepo, mainline: list[Commit], start: str | None) -> list[Unit]:
    """Units for `mainline` (the first-parent commits after `start`), PRs attributed."""
    graph = repo.graph(start, mainline[-1].sha) if any(commit.is_merge for commit in mainline) else {}
    sides = side_commits(mainline, {sha: parents for sha, (parents, _, _) in graph.items()})
    units = []
    for commit in mainline:
        pr, kind, title, body = _classify(commit)
        shas = sides.get(commit.sha, [])
        messages = [graph[sha][1:] for sha in shas]
        if kind == "merge" and title == commit.subject and any(pattern.match(title) for pattern in MERGE_PR):
            title = _side_title(messages) or title
        texts = [f"{side_subject}\n{side_body}" for side_subject, side_body in messages]
        text = "\n".join([commit.subject, commit.body, *texts])
        issues = linked_issues(text) - ({pr} if pr else set())
        units.append(Unit(commit, pr, kind, title, body, shas, messages, issues))
    return units


def _side_title(messages: list[tuple[str, str]]) -> str | None:
    """A PR's title when its merge commit gives none (`Merge pull request #299 from av-guy/bugfix-colortable-290`
    and no body, as a merge from the command line writes it): its first commit's subject, merges of the mainline
    into the branch aside. Its branch name is no statement of the work."""
    subjects = (subject.strip() for subject, _ in messages)
    return next((subject for subject in subjects if subject and not _MERGE_WORD.match(subject)), None)


_MERGE_WORD = re.compile(r"^\s*merge\b", re.I)


def _words(text: str) -> str:
    """`feature/add-cache_size` and "Add cache size" alike: lower-case words, one space apart."""
    return " ".join(re.split(r"[\W_]+", text.lower())).strip()
