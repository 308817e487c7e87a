"""Planning: a repository's history between two releases -> a MilestonePlan with its files.

mine_history: the range (the to-ref's first-parent line) -> releases -> mainline commits -> units
(PRs) -> the range's changelog entries linked to units -> (GitHub enrichment) -> roles and feature
groups -> segments; build_plan: per milestone: patches, acceptance tests, features, description,
type, hint ladder; and the plan's report (release-note coverage, type mix, size outliers).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..diffs import FileDiff, parse_text, split_diff
from ..envs.declared_tests import trace_tests
from ..errors import GitHubError
from ..files import FileClassifier
from ..github import IssueText, PullText
from ..gitio import GitRepo, display
from ..models import (
    ChangelogEntry,
    HintLadder,
    Milestone,
    MilestonePlan,
    PlanReport,
    Provenance,
    Release,
    RepoSpec,
    milestone_id,
)
from ..repos import open_repo, spec_for
from ..rules import PlanningRules, Rules
from ..store import Store
from .changelog import read_changelog
from .describe import describe
from .entry_commits import link_entry_commits
from .features import feature_groups, milestone_type
from .hints import build_ladder
from .kinds import KindReader, without_prefix
from .pulls import Unit, attribute
from .ranges import plan_range
from .refs import Refs, linked_issues
from .releases import find_releases
from .segment import MilestoneCut, RoleReader, Segmenter, UnitInfo, group_features

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
    releases: list[Release]  # chain releases only (maintenance releases never bound a milestone)
    mainline_index: dict[str, int]
    issues: dict[int, IssueText] = field(default_factory=dict)
    pulls: dict[int, PullText] = field(default_factory=dict)


def _link_entries(entries: list[ChangelogEntry], units: list[Unit]) -> tuple[list[ChangelogEntry], list[set[int]]]:
    """Resolve bare refs against the PRs history knows; link each entry to the units it cites (by PR,
    by issue, and by the commit that added its fragment or note)."""
    known = {u.pr for u in units if u.pr}
    by_pr = {u.pr: i for i, u in enumerate(units) if u.pr}
    by_issue: dict[int, set[int]] = {}
    for i, u in enumerate(units):
        for n in u.issues:
            by_issue.setdefault(n, set()).add(i)
    by_sha = {u.sha: i for i, u in enumerate(units)}
    linked_entries, links = [], []
    for e in entries:
        prs, issues = Refs(set(e.prs), set(e.issues), set(e.refs)).resolve(known)
        idx = {by_pr[p] for p in prs if p in by_pr}
        idx |= {i for n in issues for i in by_issue.get(n, ())}
        idx |= {by_sha[sha] for sha in e.commits if sha in by_sha}  # a fragment's or note's own commit
        if not idx:
            continue
        for i in idx:
            units[i].issues |= set(issues)
            for n in issues:
                by_issue.setdefault(n, set()).add(i)
        linked_entries.append(e.model_copy(update={"prs": prs, "issues": issues, "refs": []}))
        links.append(idx)
    return linked_entries, links


def _enrich(github, full_name: str, units: list[Unit], ctx: _Context, warnings: list[str], progress: Progress) -> bool:
    """Fetch PR descriptions and issue texts; an outage becomes a warning (and False), not a lost plan."""
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
        return True
    except GitHubError as e:
        warnings.append(f"{e}; hints fall back to git history for what was not fetched")
        return False


def _difficulty(lines: int, files: int, prs: int, thresholds: list[int]) -> int:
    level = 1 + sum(lines >= t for t in thresholds)
    if files > 15 or prs > 4:
        level += 1
    return min(level, 5)


def expected_turns(source_files: int, lines: int, rules: PlanningRules) -> int:
    """A rough estimate of the Dev turns a milestone takes: reported when far from the target, never used to cut."""
    e = rules.expected_turns
    return round(e.base + e.per_source_file * source_files + e.per_100_lines * lines / 100)


def _is_far(turns: int, rules: PlanningRules) -> bool:
    low, high = rules.expected_turns.target
    return turns < low / rules.expected_turns.far_factor or turns > high * rules.expected_turns.far_factor


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
    described = {i.unit.sha: i.described for i in infos}
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
    groups = feature_groups(infos, ctx.issues)
    kinds = KindReader(ctx.rules.planning)
    title, description, title_source = describe([g.feature(kinds) for g in groups], changed, release)
    prs = [u.pr for u in units if u.pr]
    added = sum(p.added for p in text.values())
    deleted = sum(p.removed for p in text.values())
    planning = ctx.rules.planning
    work = [i.unit for i in infos if i.described]
    work_files = {f.path for u in work for f in u.files if ctx.classify.is_source(f.path)}
    work_lines = sum(f.added + f.deleted for u in work for f in u.files if ctx.classify.is_source(f.path))
    turns = expected_turns(len(work_files), work_lines, planning)
    if not accepted:
        flags = [*flags, "no_traced_tests"]  # an annotation only: validation finds the tests by running them
    if _is_far(turns, planning):
        flags = [*flags, "expected_turns_far_from_target"]
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
        difficulty=_difficulty(added + deleted, len(others), len(prs), planning.difficulty_lines),
        type=milestone_type(groups),
        title_source=title_source,
        expected_turns=turns,
        acceptance_tests=accepted,
        excluded_tests=excluded,
        flags=sorted(set(flags)),
    )
    hint_units = [i.unit for i in infos if i.described] or units
    issues = [i for g in groups for i in g.issues]
    named = [(without_prefix(u.title), [u]) for g in groups for u in (i.unit for i in g.infos if i.role == "feature")]
    work_paths = {f.path for u in hint_units for f in u.files}
    # L3 lists what the work touched (source first): a reformatting chore riding along is not a hint.
    l3 = [s for s in source_stats if s[0] in work_paths and ctx.classify.is_source(s[0])] or source_stats
    hunks = [text[display(f.path)] for f in others if display(f.path) in text]
    l4 = [pf for pf in hunks if ctx.classify.is_source(pf.path)] or hunks  # code first: docs and config are no key
    ladder = build_ladder(
        mid,
        hint_units,
        issues,
        named,
        ctx.pulls,
        l3,
        l4,
        planning.hint_l4_max_chars,
        planning.hint_l4_max_hunks,
        description=f"{title}\n{description}",
    )
    return milestone, b"".join(f.raw for f in others), b"".join(f.raw for f in tests), ladder


@dataclass
class Mined:
    """The history between two releases, attributed and segmented (no files read yet)."""

    from_ref: str
    to_ref: str
    start: str
    end: str
    releases: list[Release]  # every release the range holds, maintenance releases included
    units: list[Unit]
    infos: list[UnitInfo]
    segments: list[MilestoneCut]
    entries: list[ChangelogEntry]  # the range's entries linked to units
    range_entries: list[ChangelogEntry]  # every entry of the range's releases (and unreleased)
    backport_entries: int
    sources: list[str]
    ctx: _Context
    notes: list[str]
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
    """Range, releases, PR attribution, changelog links, roles, features and segments: one pass over history."""
    tags = repo.tags()
    rng = plan_range(repo, tags, rules, from_ref, to_ref)
    index = {sha: i for i, sha in enumerate(rng.mainline)}
    lo, hi = index[rng.start], index[rng.end]
    releases, release_warnings = find_releases(repo, tags, rng.mainline, rules.planning.skip_prereleases, (lo, hi))
    releases = [r for r in releases if index[r.mainline_commit] <= hi]
    chain = [r for r in releases if not r.maintenance]
    warnings = [*rng.warnings, *release_warnings]
    progress(f"{len(chain)} releases, {len(releases) - len(chain)} maintenance releases")

    commits = repo.first_parent_log(rng.start, rng.end)
    units = attribute(repo, commits, rng.start)
    progress(f"{len(units)} mainline commits, {sum(1 for u in units if u.pr)} pull requests")

    def release_of(sha: str) -> str | None:
        return next((r.version for r in chain if index[r.mainline_commit] >= index[sha]), None)

    classify = FileClassifier(rules.planning)
    ctx = _Context(repo, rules, classify, chain, index)
    release_texts = None
    if github is not None and spec.github:
        if _enrich(github, spec.github, units, ctx, warnings, progress):
            try:
                release_texts = github.releases(spec.github)
            except GitHubError as e:
                warnings.append(f"{e}; release notes come from the repository's files only")
    raw_entries, sources = read_changelog(repo, rng.end, units, release_of, release_texts, warnings)
    # The range's releases: after its start and not the from-ref's own (tagged off the line, a from-ref's
    # release first shows up on it later); unreleased notes only when the range does not end at a release.
    released = [
        r for r in releases if lo < index[r.mainline_commit] and not repo.is_ancestor(r.commit, rng.from_commit)
    ]
    in_range = {r.version for r in released if not r.maintenance}
    patches = {r.version for r in released if r.maintenance}
    ends_at_release = any(r.commit == rng.end for r in chain)
    range_entries = [e for e in raw_entries if e.release in in_range or (e.release is None and not ends_at_release)]
    backport_entries = sum(1 for e in raw_entries if e.release in patches and e.release not in in_range)
    range_entries = link_entry_commits(repo, units, range_entries, classify, KindReader(rules.planning))
    entries, links = _link_entries(range_entries, units)
    if not sources:
        warnings.append("no changelog found; PR titles and commit subjects stand in for changelog entries")
    else:
        linked = {e.text for e in entries}
        orphans = [e for e in range_entries if e.text not in linked]
        if orphans:
            warnings.append(
                f"{len(orphans)} changelog entries in this range cite no PR, issue or commit in it; "
                "they are not in any description"
            )

    roles = RoleReader(rules.planning, classify, {r.commit for r in releases if r.maintenance})
    labels = {n: p.labels for n, p in ctx.pulls.items()}
    infos = group_features(units, links, entries, roles, labels)
    segments = Segmenter(rules.planning, classify).segment(infos, {r.mainline_commit for r in chain})
    return Mined(
        rng.from_ref, rng.to_ref, rng.start, rng.end, releases, units, infos, segments, entries, range_entries,
        backport_entries, sources, ctx, rng.notes, warnings,
    )  # fmt: skip


def _entry_key(e: ChangelogEntry) -> tuple:
    return (e.text, e.release, e.source)


def plan_report(mined: Mined, milestones: list[Milestone]) -> PlanReport:
    """Release-note coverage (what the range's entries that cite a PR, an issue or a commit became),
    the milestones' type mix, how many are titled by a feature, and the size outliers."""
    kinds = KindReader(mined.ctx.rules.planning)
    covered = {_entry_key(e) for info in mined.infos if info.described for e in info.entries}
    citing = [e for e in mined.range_entries if e.prs or e.issues or e.refs or e.commits]
    housekeeping = [e for e in mined.range_entries if kinds.entry_kind(e) == "housekeeping"]
    work = [e for e in citing if kinds.entry_kind(e) != "housekeeping"]
    planning = mined.ctx.rules.planning
    low, high = planning.expected_turns.target
    return PlanReport(
        entries_in_range=len(mined.range_entries),
        entries_citing=len(work),
        entries_covered=sum(1 for e in work if _entry_key(e) in covered),
        housekeeping_entries=len(housekeeping),
        backport_entries=mined.backport_entries,
        uncovered=[e.text[:200] for e in work if _entry_key(e) not in covered][:20],
        type_mix=dict(Counter(m.type or "housekeeping" for m in milestones)),
        feature_titled=sum(1 for m in milestones if m.title_source not in (None, "none")),
        size_outliers=[
            f"{m.id}: ~{m.expected_turns} Dev turns expected (target {low}-{high})"
            for m in milestones
            if "expected_turns_far_from_target" in m.flags
        ],
    )


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
    report = plan_report(mined, milestones)
    for outlier in report.size_outliers:
        warnings.append(f"{outlier}: its size is far from what one milestone should take")

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
        report=report,
        notes=mined.notes,
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
