"""Release tags: parsed as versions, ordered, and checked against the mainline history."""

from __future__ import annotations

import re
from bisect import bisect_left

from git.cmd import Git
from git.exc import GitCommandError
from packaging.version import InvalidVersion, Version

from ..errors import RepoError
from ..gitio import GitRepo, Tag, display
from ..models import Release

_PREFIX = re.compile(r"^(?:release[-_/]|rel[-_]|version[-_]|[A-Za-z][\w.-]*?[-@](?=v?\d)|v(?=\d)|V(?=\d))", re.I)


def parse_version(tag: str) -> Version | None:
    """`v1.2.3`, `1.2`, `release-1.2.0`, `pkg@1.2.3`, `2024.01.15` -> Version; `sub/v1.2` (a Go
    submodule), `latest`, `nightly` -> None."""
    if "/" in tag and not tag.lower().startswith("release/"):
        return None
    rest = _PREFIX.sub("", tag, count=1)
    rest = rest[1:] if rest[:1] in "vV" and rest[1:2].isdigit() else rest
    if not rest[:1].isdigit():
        return None
    try:
        return Version(rest)
    except InvalidVersion:
        return None


def mainline_position(commit: str, mainline: list[str], index: dict[str, int], repo: GitRepo) -> int | None:
    """Index of the first mainline commit that contains `commit` (None if none does).

    Mainline ancestry is monotonic, so a binary search needs only log(n) ancestry checks.
    """
    if commit in index:
        return index[commit]
    if not mainline or not repo.is_ancestor(commit, mainline[-1]):
        return None
    return bisect_left(range(len(mainline)), True, key=lambda i: repo.is_ancestor(commit, mainline[i]))


def find_releases(
    repo: GitRepo, tags: list[Tag], mainline: list[str], skip_prereleases: bool = True
) -> tuple[list[Release], list[str]]:
    """Releases in version order, each tied to the mainline; plus warnings for tags left out."""
    index = {sha: i for i, sha in enumerate(mainline)}
    warnings: list[str] = []
    parsed = []
    for tag in tags:
        version = parse_version(tag.name)
        if version is None:
            continue
        if skip_prereleases and (version.is_prerelease or version.is_devrelease):
            continue
        pos = mainline_position(tag.commit, mainline, index, repo)
        if pos is None:
            warnings.append(f"tag {display(tag.name)} is not on the mainline history; skipped")
            continue
        parsed.append((version, pos, tag))
    # Walk in history order and keep versions that increase: a lower version tagged later
    # (a backport or maintenance release) would put the chain out of order.
    parsed.sort(key=lambda x: (x[1], x[0]))
    releases: list[Release] = []
    last_version = None
    for version, pos, tag in parsed:
        if last_version is not None and version <= last_version:
            why = (
                "repeats version"
                if version == last_version
                else f"is older than {releases[-1].tag} but comes later in history (a backport?)"
            )
            warnings.append(f"tag {display(tag.name)} ({version}) {why}; skipped")
            continue
        releases.append(
            Release(
                tag=display(tag.name),
                version=str(version),
                commit=tag.commit,
                mainline_commit=mainline[pos],
                date=tag.date,
            )
        )
        last_version = version
    return releases, warnings


def remote_tags(url: str, timeout: int = 60) -> list[str]:
    """Tag names of a remote (URL or path) by `git ls-remote`: no clone, no objects fetched."""
    try:
        out = Git().execute(["git", "ls-remote", "--tags", "--refs", url], kill_after_timeout=timeout,
                            env={"GIT_TERMINAL_PROMPT": "0"})  # fmt: skip
    except GitCommandError as e:
        fatal = [ln.split("fatal:", 1)[1].strip() for ln in str(e.stderr).splitlines() if "fatal:" in ln]
        raise RepoError(f"{url}: cannot list its tags: {fatal[0] if fatal else e}") from None
    return [line.split("refs/tags/", 1)[1] for line in out.splitlines() if "refs/tags/" in line]


def newest_release(tags: list[str], skip_prereleases: bool = True) -> str | None:
    """The tag with the highest release version (None when no tag parses as a release)."""
    versions = [(v, t) for t in tags if (v := parse_version(t)) is not None]
    if skip_prereleases:
        versions = [(v, t) for v, t in versions if not (v.is_prerelease or v.is_devrelease)]
    return max(versions)[1] if versions else None
