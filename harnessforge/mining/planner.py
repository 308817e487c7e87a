"""Planning: a repository's history between two releases -> a MilestonePlan with its files.

mine_history: releases -> mainline commits -> units (PRs) -> changelog entries linked to units
-> (GitHub enrichment) -> features -> segments; build_plan: per milestone: patches, acceptance tests,
description, hint ladder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import GitHubError, PlanningError
from ..gitio import GitRepo, display
from ..models import ChangelogEntry, HintLadder, Milestone, MilestonePlan, Provenance, Release, RepoSpec, milestone_id
from ..repos import open_repo, spec_for
from ..rules import Rules
from ..store import Store
from .acceptance import trace_tests
from .changelog import read_changelog
from .classify import FileClassifier
from .describe import Feature, describe
from .hints import IssueText, PullText, build_ladder
from .patches import FileDiff, parse_text, split_diff
from .pulls import Unit, attribute
from .refs import Refs, linked_issues
from .releases import find_releases
from .segment import Segment, Segmenter, UnitInfo, group_features

Progress = Callable[[str], None]


@dataclass
class PlanResult:
    plan: MilestonePlan
    patches: dict[str, tuple[bytes, bytes]]  # mid -> (ground_truth.patch, test.patch)
    hints: dict[str, HintLadder]


@dataclass
class _Context:
    """What every milestone of one plan draws on."""

    repo: GitRepo
    rules: Rules
    classify: FileClassifier
    releases: list[Release]
    mainline_index: dict[str, int]
    entries_by_unit: dict[str, list[ChangelogEntry]]
    issues: dict[int, IssueText] = field(default_factory=dict)
    pulls: dict[int, PullText] = field(default_factory=dict)


def _resolve_end(repo: GitRepo, ref: str, releases: list[Release], index: dict[str, int]) -> str:
    for r in releases:
        if ref in (r.tag, r.version):
            return r.mainline_commit
    sha = repo.rev(ref)
    if sha not in index:
        raise PlanningError(f"{ref!r} is not on the mainline (first-parent) history of the default branch")
    return sha


def _range(
    repo: GitRepo, releases: list[Release], index: dict[str, int], from_ref: str | None, to_ref: str | None
) -> tuple[str, str, str, str]:
    if (from_ref is None or to_ref is None) and len(releases) < 2:
        what = "no release tags" if not releases else f"only one release ({releases[0].tag})"
        raise PlanningError(
            f"{repo.path.name} has {what}; planning needs two releases to plan between, "
            "or explicit --from and --to revisions"
        )
    from_ref = from_ref or releases[0].tag
    to_ref = to_ref or releases[-1].tag
    start, end = _resolve_end(repo, from_ref, releases, index), _resolve_end(repo, to_ref, releases, index)
    if index[start] >= index[end]:
        raise PlanningError(f"--from {from_ref} is not older than --to {to_ref} on the mainline")
    return from_ref, to_ref, start, end


def _link_entries(entries: list[ChangelogEntry], units: list[Unit]) -> tuple[list[ChangelogEntry], list[set[int]]]:
    """Resolve bare refs against the PRs history knows; link each entry to the units it cites."""
    known = {u.pr for u in units if u.pr}
    by_pr = {u.pr: i for i, u in enumerate(units) if u.pr}
    by_issue: dict[int, set[int]] = {}
    for i, u in enumerate(units):
        for n in u.issues:
            by_issue.setdefault(n, set()).add(i)
    linked_entries, links = [], []
    for e in entries:
        prs, issues = Refs(set(e.prs), set(e.issues), set(e.refs)).resolve(known)
        idx = {by_pr[p] for p in prs if p in by_pr}
        idx |= {i for n in issues for i in by_issue.get(n, ())}
        if not idx:
            continue
        for i in idx:
            units[i].issues |= set(issues)
            for n in issues:
                by_issue.setdefault(n, set()).add(i)
        linked_entries.append(e.model_copy(update={"prs": prs, "issues": issues, "refs": []}))
        links.append(idx)
    return linked_entries, links


def _enrich(github, full_name: str, units: list[Unit], ctx: _Context, warnings: list[str], progress: Progress) -> None:
    """Fetch PR descriptions and issue texts; an outage becomes a warning, not a lost plan."""
    try:
        for u in units:
            if u.pr:
                pr = github.pull(full_name, u.pr)
                if pr:
                    ctx.pulls[u.pr] = pr
                    u.issues |= linked_issues(pr.body) - {u.pr}
        progress(f"GitHub: {len(ctx.pulls)} pull requests")
        for n in sorted({i for u in units for i in u.issues}):
            issue = github.issue(full_name, n)
            if issue:
                ctx.issues[n] = issue
        progress(f"GitHub: {len(ctx.issues)} issues")
    except GitHubError as e:
        warnings.append(f"{e}; hints fall back to git history for what was not fetched")


def _difficulty(lines: int, files: int, prs: int, thresholds: list[int]) -> int:
    level = 1 + sum(lines >= t for t in thresholds)
    if files > 15 or prs > 4:
        level += 1
    return min(level, 5)


def _features(infos: list[UnitInfo], ctx: _Context) -> tuple[list[Feature], list[IssueText], list[str]]:
    """Description features in order of first appearance, plus the issues and entries behind them."""
    groups: dict[int, list[Unit]] = {}
    for info in infos:
        if info.role == "feature":
            key = next(iter(info.groups))
            groups.setdefault(key, []).append(info.unit)
    features, all_issues, all_entries = [], [], []
    for units in groups.values():
        issue_numbers = sorted({i for u in units for i in u.issues})
        issues = [ctx.issues[i] for i in issue_numbers if i in ctx.issues]
        entries = list(dict.fromkeys(e.text for u in units for e in ctx.entries_by_unit.get(u.sha, [])))
        title = issues[0].title if issues else units[0].title
        motivation = issues[0].body.split("\n\n", 1)[0] if issues else ""
        points = entries or [u.title for u in units]
        features.append(Feature(title=title, points=points, motivation=motivation))
        all_issues += issues
        all_entries += entries
    return features, all_issues, all_entries


def _milestone(
    ordinal: int, base: str, infos: list[UnitInfo], flags: list[str], ctx: _Context
) -> tuple[Milestone, bytes, bytes, HintLadder]:
    mid = milestone_id(ordinal)
    units = [i.unit for i in infos]
    verify = units[-1].sha
    files = split_diff(ctx.repo.diff(base, verify))
    tests: list[FileDiff] = [f for f in files if ctx.classify.is_test(f.path)]
    others: list[FileDiff] = [f for f in files if not ctx.classify.is_test(f.path)]
    text = {pf.path: pf for pf in parse_text(files)}  # binary files have no text entry
    source_stats = []
    for f in others:
        pf = text.get(display(f.path))
        source_stats.append((f.path, pf.added if pf else 0, pf.removed if pf else 0))
    changed_lines = {
        f.path: [ln.target_line_no for h in text[display(f.path)] for ln in h if ln.is_added]
        for f in tests
        if display(f.path) in text and not f.deleted
    }
    described = {i.unit.sha: i.role == "feature" for i in infos}
    labels = {i.unit.sha: f"commit {i.unit.sha[:10]} ({i.unit.commit.subject[:60]!r})" for i in infos}
    touched_by: dict[str, set[str]] = {}
    for i in infos:
        for f in i.unit.files:
            touched_by.setdefault(f.path, set()).add(i.unit.sha)
    accepted, excluded = trace_tests(ctx.repo, base, verify, changed_lines, touched_by, described, labels)

    release = next(
        (r.tag for r in ctx.releases if ctx.mainline_index[r.mainline_commit] >= ctx.mainline_index[verify]), None
    )
    changed = [display(f.path) for f in files]
    features, issues, entries = _features(infos, ctx)
    title, description = describe(features, changed, release)
    prs = [u.pr for u in units if u.pr]
    added = sum(p.added for p in text.values())
    deleted = sum(p.removed for p in text.values())
    if not accepted:
        flags = [*flags, "no_acceptance_tests"]
    milestone = Milestone(
        id=mid,
        ordinal=ordinal,
        title=title,
        description=description,
        base_commit=base,
        verify_commit=verify,
        release=release,
        source_prs=prs,
        issues=sorted({i for u in units for i in u.issues}),
        commits=[u.sha for u in units],
        changed_files=changed,
        test_files=[display(f.path) for f in tests],
        lines_added=added,
        lines_deleted=deleted,
        difficulty=_difficulty(added + deleted, len(others), len(prs), ctx.rules.planning.difficulty_lines),
        acceptance_tests=accepted,
        excluded_tests=excluded,
        flags=sorted(set(flags)),
    )
    hint_units = [i.unit for i in infos if i.role != "noise"] or units
    ladder = build_ladder(
        mid,
        hint_units,
        issues,
        entries,
        ctx.pulls,
        source_stats,
        [text[display(f.path)] for f in others if display(f.path) in text],
        ctx.rules.planning.hint_l4_max_chars,
        ctx.rules.planning.hint_l4_max_hunks,
    )
    return milestone, b"".join(f.raw for f in others), b"".join(f.raw for f in tests), ladder


@dataclass
class Mined:
    """The history between two releases, attributed and segmented (no files read yet)."""

    from_ref: str
    to_ref: str
    start: str
    end: str
    releases: list[Release]
    units: list[Unit]
    infos: list[UnitInfo]
    segments: list[Segment]
    entries: list[ChangelogEntry]
    sources: list[str]
    ctx: _Context
    warnings: list[str]


def mine_history(
    repo: GitRepo,
    spec: RepoSpec,
    rules: Rules,
    from_ref: str | None = None,
    to_ref: str | None = None,
    github=None,
    progress: Progress = lambda msg: None,
) -> Mined:
    """Releases, PR attribution, changelog links, features and segments: one pass over history."""
    mainline_all = repo.text("rev-list", "--first-parent", "--reverse", "HEAD").split()
    index = {sha: i for i, sha in enumerate(mainline_all)}
    releases, warnings = find_releases(repo, repo.tags(), mainline_all, rules.planning.skip_prereleases)
    progress(f"{len(releases)} releases")
    from_ref, to_ref, start, end = _range(repo, releases, index, from_ref, to_ref)

    commits = repo.first_parent_log(start, end)
    units = attribute(repo, commits, start)
    progress(f"{len(units)} mainline commits, {sum(1 for u in units if u.pr)} pull requests")

    def release_of(sha: str) -> str | None:
        return next((r.version for r in releases if index[r.mainline_commit] >= index[sha]), None)

    classify = FileClassifier(rules.planning)
    raw_entries, sources = read_changelog(repo, end, units, release_of)
    ctx = _Context(repo, rules, classify, releases, index, {})
    if github is not None and spec.github:
        _enrich(github, spec.github, units, ctx, warnings, progress)
    entries, links = _link_entries(raw_entries, units)
    for e, idx in zip(entries, links):
        for i in idx:
            ctx.entries_by_unit.setdefault(units[i].sha, []).append(e)
    if not sources:
        warnings.append("no changelog found; PR titles and commit subjects stand in for changelog entries")
    else:
        versions = {r.version for r in releases if index[start] < index[r.mainline_commit] <= index[end]}
        linked = {e.text for e in entries}
        orphans = [e for e in raw_entries if e.text not in linked and (e.release is None or e.release in versions)]
        if orphans:
            warnings.append(
                f"{len(orphans)} changelog entries in this range cite no PR or issue; they are not in any description"
            )

    infos = group_features(units, links, classify)
    segments = Segmenter(rules.planning, classify).segment(infos, {r.mainline_commit for r in releases})
    return Mined(from_ref, to_ref, start, end, releases, units, infos, segments, entries, sources, ctx, warnings)


def build_plan(mined: Mined, spec: RepoSpec, progress: Progress = lambda msg: None) -> PlanResult:
    """Turn mined history into milestones: patches, acceptance tests, descriptions, hint ladders."""
    rules = mined.ctx.rules
    info_of = {i.unit.sha: i for i in mined.infos}
    milestones, patches, hints = [], {}, {}
    base = mined.start
    for ordinal, seg in enumerate(mined.segments, start=1):
        m, gt, tp, ladder = _milestone(ordinal, base, [info_of[u.sha] for u in seg.units], seg.flags, mined.ctx)
        milestones.append(m)
        patches[m.id] = (gt, tp)
        hints[m.id] = ladder
        base = m.verify_commit
        progress(f"{m.id}: {m.title}")
    warnings = list(mined.warnings)
    for m in milestones:
        for ex in m.excluded_tests:
            warnings.append(f"{m.id}: left out {ex.test}: {ex.reason}")

    index = mined.ctx.mainline_index
    in_range = [r for r in mined.releases if index[mined.start] <= index[r.mainline_commit] <= index[mined.end]]
    plan = MilestonePlan(
        repo=spec,
        from_ref=mined.from_ref,
        to_ref=mined.to_ref,
        from_commit=mined.start,
        to_commit=mined.end,
        releases=in_range,
        changelog_sources=mined.sources,
        pulls=[u.to_pull() for u in mined.units if u.pr],
        changelog=mined.entries,
        milestones=milestones,
        warnings=warnings,
        provenance=Provenance(rules_hash=rules.hash),
    )
    return PlanResult(plan, patches, hints)


def plan(
    store: Store,
    arg: "str | RepoSpec",
    rules: Rules,
    from_ref: str | None = None,
    to_ref: str | None = None,
    github_factory=None,
    progress: Progress = lambda msg: None,
    clone_progress=None,
) -> PlanResult:
    """Resolve, clone (or fetch), plan, and write `repos/<key>/plan.json` and the milestone files."""
    spec = spec_for(store, arg)
    repo = open_repo(store, spec, progress=clone_progress)
    github = github_factory(spec) if github_factory else None
    result = build_plan(mine_history(repo, spec, rules, from_ref, to_ref, github, progress), spec, progress)
    store.save_plan(result.plan, result.patches, result.hints)
    return result
