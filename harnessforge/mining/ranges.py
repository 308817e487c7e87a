"""The range a plan spans: the to-ref's first-parent history, from the from-ref (or its fork point).

Real repositories tag patch releases on maintenance branches and merge those back, and some merge
an old line into the default branch as a second parent. So the mainline of a range is the to-ref's
own first-parent line, not the default branch's, and a from-ref off that line starts the chain
where its branch forked. Without --from/--to, the newest feature release range is planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import Version

from ..errors import PlanningError
from ..gitio import GitRepo, Tag, display
from ..rules import Rules
from .releases import feature_releases, fork_point, parse_version


@dataclass
class Range:
    """What a plan spans: the to-ref's first-parent line from `start` (exclusive) to `end`."""

    from_ref: str
    to_ref: str
    start: str
    end: str
    mainline: list[str]  # the to-ref's first-parent history, oldest first
    from_commit: str = ""  # what the from-ref names (the fork point `start` when that is off the line)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _resolve(repo: GitRepo, ref: str, tags: list[Tag]) -> str:
    """A tag name, a release version (`0.2.0` for tag `v0.2.0`) or any revision -> its commit."""
    for tag in tags:
        if display(tag.name) == ref:
            return tag.commit
    for tag in tags:
        version = parse_version(tag.name)
        if version is not None and str(version) == ref:
            return tag.commit
    return repo.rev(ref)


def _commits(repo: GitRepo, end: str, start: str) -> int:
    """First-parent commits of `end` that `start` does not contain."""
    return int(repo.text("rev-list", "--first-parent", "--count", end, f"^{start}"))


def _releases(tags: list[Tag], skip_prereleases: bool) -> list[tuple[Version, Tag]]:
    """One tag per release version, oldest version first."""
    versions: dict[Version, Tag] = {}
    for tag in tags:
        version = parse_version(tag.name)
        if version is not None and not (skip_prereleases and (version.is_prerelease or version.is_devrelease)):
            versions.setdefault(version, tag)
    return sorted(versions.items())


def _default_range(
    repo: GitRepo, tags: list[Tag], rules: Rules, from_ref: str | None, to_ref: str | None
) -> tuple[str, str, str]:
    """(from_ref, to_ref, note) when either is missing.

    The newest feature release (X.Y.0), reaching back over earlier feature releases until the range
    holds `planning.default_range_min_commits` mainline commits. Where development went on in patch
    releases (at least that many commits after the newest feature release, or only one feature
    release at all), the newest releases of any kind instead.
    """
    minimum = rules.planning.default_range_min_commits
    releases = _releases(tags, rules.planning.skip_prereleases)
    features = [
        (version, release_tag) for version, release_tag in feature_releases(tags, rules.planning.skip_prereleases)
    ]
    name = repo.path.name.removesuffix(".git")
    if not releases:
        raise PlanningError(
            f"{name} has no release tags; planning needs two releases to plan between, or explicit --from and --to "
            "revisions"
        )
    candidates, kind = features, "feature release"
    newest_release, newest_feature = releases[-1][1], features[-1][1]
    patches_after = (
        _commits(repo, newest_release.commit, newest_feature.commit) if newest_release is not newest_feature else 0
    )
    if len(features) < 2 or (to_ref is None and patches_after >= minimum):
        candidates, kind = releases, "release"
    if to_ref is None:
        to_ref = display(candidates[-1][1].name)
    if from_ref is not None:
        return from_ref, to_ref, f"no --to given: planning up to the newest {kind} {to_ref}"
    end, newest = _resolve(repo, to_ref, tags), parse_version(to_ref)
    # Older releases; one tagged on its own release branch need not be an ancestor of the to-ref (its fork
    # point then starts the chain), so versions decide when the to-ref has one.
    older = [
        release_tag
        for version, release_tag in candidates
        if release_tag.commit != end and (version < newest if newest else repo.is_ancestor(release_tag.commit, end))
    ]
    if not older:
        raise PlanningError(
            f"{name} has only one release ({to_ref}); planning needs two releases to plan between, or explicit --from "
            "and --to revisions"
        )
    for tag in reversed(older):
        from_ref, commits = display(tag.name), _commits(repo, end, tag.commit)
        if commits >= minimum:
            break
    why = (
        f"the newest {kind}s, reaching back to at least {minimum} commits"
        if commits >= minimum
        else f"every {kind}: fewer than {minimum} commits in all"
    )
    return (
        from_ref,
        to_ref,
        (
            f"no --from/--to given: planning the {kind} range {from_ref} → {to_ref}, {commits} mainline commits "
            f"({why}; planning.default_range_min_commits); pass --from/--to for another range"
        ),
    )


def plan_range(repo: GitRepo, tags: list[Tag], rules: Rules, from_ref: str | None, to_ref: str | None) -> Range:
    """The range follows the to-ref's first-parent history, whatever the default branch is. A from-ref
    off that line (a release tagged on a maintenance branch) starts the chain at its fork point."""
    notes = []
    if from_ref is None or to_ref is None:
        from_ref, to_ref, note = _default_range(repo, tags, rules, from_ref, to_ref)
        notes.append(note)
    end = _resolve(repo, to_ref, tags)
    mainline = repo.text("rev-list", "--first-parent", "--reverse", end).split()
    index = {sha: position for position, sha in enumerate(mainline)}
    first = _resolve(repo, from_ref, tags)
    warnings = []
    if first in index:
        start = first
    else:
        fork = fork_point(repo, first, mainline)
        if fork is None:
            raise PlanningError(
                f"--from {from_ref} shares no history with {to_ref}'s first-parent line: nothing to plan"
            )
        start = mainline[fork]
        subject = repo.text("log", "-1", "--format=%s", start)
        warnings.append(
            f"{from_ref} is not on {to_ref}'s first-parent history (it was tagged on another branch, e.g. a "
            f"maintenance branch), so the chain starts at the fork point {start[:10]} ({subject!r}): the newest "
            f"commit on that line that {from_ref} contains; the maintenance merges along the way are backports"
        )
    if index[start] >= index[end]:
        raise PlanningError(f"--from {from_ref} is not older than --to {to_ref} on {to_ref}'s first-parent history")
    return Range(from_ref, to_ref, start, end, mainline, first, notes, warnings)
