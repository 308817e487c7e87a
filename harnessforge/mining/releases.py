"""Release tags: parsed as versions, ordered, and checked against the mainline history."""

from __future__ import annotations

import re
from bisect import bisect_left

from git.cmd import Git
from git.exc import GitCommandError
from packaging.version import InvalidVersion, Version

from ..errors import RepoError
from ..gitio import GitRepo, Tag, display
from ..models import ChangelogEntry, Release

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
    return bisect_left(range(len(mainline)), True, key=lambda position: repo.is_ancestor(commit, mainline[position]))


def find_releases(
    repo: GitRepo,
    tags: list[Tag],
    mainline: list[str],
    skip_prereleases: bool = True,
    within: tuple[int, int] | None = None,
) -> tuple[list[Release], list[str]]:
    """The releases contained in the tip of `mainline` (a first-parent line, oldest first), in
    history order, each tied to the first mainline commit that contains it; plus warnings.

    A tag on the line is a chain release. One off it, merged in from a branch, is a chain release
    when it opens a version line (a release branch merged back), and a maintenance release when it
    is a patch (X.Y.z, z > 0) tagged on a maintenance branch: those count for changelog
    attribution and never bound a milestone. Tags the tip does not contain are outside the range.
    `within` (first, last) mainline indexes: warn only about skipped tags in (first, last].
    """
    index = {sha: position for position, sha in enumerate(mainline)}
    warnings: list[str] = []
    parsed = []
    for tag in tags:
        version = parse_version(tag.name)
        if version is None:
            continue
        if skip_prereleases and (version.is_prerelease or version.is_devrelease):
            continue
        position = mainline_position(tag.commit, mainline, index, repo)
        if position is not None:
            parsed.append((version, position, tag))
    # Walk in history order and keep versions that increase: a lower version tagged later
    # (a backport or maintenance release) would put the chain out of order.
    parsed.sort(key=lambda item: (item[1], item[0]))
    releases: list[Release] = []
    last_version = None
    for version, position, tag in parsed:
        maintenance = tag.commit not in index and version.micro > 0
        if not maintenance and last_version is not None and version <= last_version:
            last = next(release.tag for release in reversed(releases) if not release.maintenance)
            why = (
                "repeats version"
                if version == last_version
                else f"is older than {last} but comes later in history (a backport?)"
            )
            if within is None or within[0] < position <= within[1]:
                warnings.append(f"tag {display(tag.name)} ({version}) {why}; skipped")
            continue
        releases.append(
            Release(
                tag=display(tag.name),
                version=str(version),
                commit=tag.commit,
                mainline_commit=mainline[position],
                date=tag.date,
                maintenance=maintenance,
            )
        )
        if not maintenance:
            last_version = version
    return releases, warnings


def fork_point(repo: GitRepo, commit: str, mainline: list[str]) -> int | None:
    """Index of the newest mainline commit that `commit` contains (None if it contains none).

    Where a maintenance branch forked off: its releases are not on the mainline, and the first
    mainline commit containing them is the merge that brought them back, after the work between.
    Containment is monotonic along a first-parent line, so a binary search suffices.
    """
    if not mainline or not repo.is_ancestor(mainline[0], commit):
        return None
    return (
        bisect_left(range(len(mainline)), True, key=lambda position: not repo.is_ancestor(mainline[position], commit))
        - 1
    )


def is_feature_release(version: Version, previous: Version | None) -> bool:
    """A release that opens a new major or minor line (X.Y.0 after X.(Y-1).z), as opposed to a patch."""
    return previous is None or version.release[:2] != previous.release[:2]


def feature_releases(tags: list[Tag], skip_prereleases: bool = True) -> list[tuple[Version, Tag]]:
    """Tags that open a new major or minor version, oldest version first (one tag per version)."""
    versions: dict[Version, Tag] = {}
    for tag in tags:
        version = parse_version(tag.name)
        if version is None or (skip_prereleases and (version.is_prerelease or version.is_devrelease)):
            continue
        versions.setdefault(version, tag)
    found, previous = [], None
    for version in sorted(versions):
        if is_feature_release(version, previous):
            found.append((version, versions[version]))
        previous = version
    return found


def remote_tags(url: str, timeout: int = 60) -> list[str]:
    """Tag names of a remote (URL or path) by `git ls-remote`: no clone, no objects fetched."""
    try:
        listing = Git().execute(
            ["git", "ls-remote", "--tags", "--refs", url], kill_after_timeout=timeout, env={"GIT_TERMINAL_PROMPT": "0"}
        )
    except GitCommandError as e:
        fatal = [
            output_line.split("fatal:", 1)[1].strip()
            for output_line in str(e.stderr).splitlines()
            if "fatal:" in output_line
        ]
        raise RepoError(f"{url}: cannot list its tags: {fatal[0] if fatal else e}") from None
    return [line.split("refs/tags/", 1)[1] for line in listing.splitlines() if "refs/tags/" in line]


def newest_release(tags: list[str], skip_prereleases: bool = True) -> str | None:
    """The tag with the highest release version (None when no tag parses as a release)."""
    versions = [(version, tag) for tag in tags if (version := parse_version(tag)) is not None]
    if skip_prereleases:
        versions = [(version, tag) for version, tag in versions if not (version.is_prerelease or version.is_devrelease)]
    return max(versions)[1] if versions else None


def merged_back_entries(
    repo: GitRepo,
    releases: list[Release],
    entries: list[ChangelogEntry],
    start: str,
    index: dict[str, int],
    span: tuple[int, int],
) -> dict[str, list[ChangelogEntry]]:
    """Mainline commit -> the entries of the maintenance releases it merges back into the range: released off
    the line after the chain's start (which lacks their fixes), first contained by that commit."""
    first, last = span
    out: dict[str, list[ChangelogEntry]] = {}
    for release in releases:
        if release.maintenance and first < index[release.mainline_commit] <= last:
            if not repo.is_ancestor(release.commit, start):
                notes = [entry for entry in entries if entry.release == release.version]
                out.setdefault(release.mainline_commit, []).extend(notes)
    return {sha: notes for sha, notes in out.items() if notes}
