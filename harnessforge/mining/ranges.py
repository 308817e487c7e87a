"""The range a plan spans: the to-ref's first-parent history, from the from-ref (or its fork point).

Real repositories tag patch releases on maintenance branches and merge those back, and some merge
an old line into the default branch as a second parent. So the mainline of a range is the to-ref's
own first-parent line, not the default branch's, and a from-ref off that line starts the chain
where its branch forked. Without --from/--to, the newest feature release range is planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


def _default_range(
    repo: GitRepo, tags: list[Tag], rules: Rules, from_ref: str | None, to_ref: str | None
) -> tuple[str, str, str]:
    """(from_ref, to_ref, note) when either is missing: the newest feature release, reaching back over
    earlier feature releases until the range holds `planning.default_range_min_commits` mainline commits."""
    head = repo.head()
    features = [
        t for _, t in feature_releases(tags, rules.planning.skip_prereleases) if repo.is_ancestor(t.commit, head)
    ]
    name = repo.path.name.removesuffix(".git")
    if to_ref is None:
        if not features:
            raise PlanningError(
                f"{name} has no release tags; planning needs two releases to plan between, "
                "or explicit --from and --to revisions"
            )
        to_ref = display(features[-1].name)
    end = _resolve(repo, to_ref, tags)
    if from_ref is not None:
        return from_ref, to_ref, f"no --to given: planning up to the newest feature release {to_ref}"
    older = [t for t in features if t.commit != end and repo.is_ancestor(t.commit, end)]
    if not older:
        what = f"only one release ({to_ref})" if features else "no release tags"
        raise PlanningError(
            f"{name} has {what}; planning needs two releases to plan between, or explicit --from and --to revisions"
        )
    minimum = rules.planning.default_range_min_commits
    for tag in reversed(older):
        from_ref = display(tag.name)
        commits = int(repo.text("rev-list", "--first-parent", "--count", end, f"^{tag.commit}"))
        if commits >= minimum:
            break
    why = (
        f"the newest feature releases, reaching back to at least {minimum} commits"
        if commits >= minimum
        else f"every feature release: fewer than {minimum} commits in all"
    )
    return (
        from_ref,
        to_ref,
        (
            f"no --from/--to given: planning the feature release range {from_ref} → {to_ref}, {commits} mainline "
            f"commits ({why}; planning.default_range_min_commits); pass --from/--to for another range"
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
    index = {sha: i for i, sha in enumerate(mainline)}
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
    return Range(from_ref, to_ref, start, end, mainline, notes, warnings)
