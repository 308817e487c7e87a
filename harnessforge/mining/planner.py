"""Planning: a repository's history between two releases -> a MilestonePlan with its files.

mine_history: the range (the to-ref's first-parent line) -> releases -> mainline commits -> units
(PRs) -> the range's changelog entries linked to units -> (GitHub enrichment) -> roles and feature
groups (granularity pr: one per unit of work) -> segments; build_plan: per milestone: patches,
acceptance tests, features, description, type, hint ladder; and the plan's report (release-note
coverage, type mix, size outliers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..diffs import FileDiff, parse_text, split_diff
from ..envs.declared_tests import trace_tests
from ..errors import GitHubError
from ..files import FileClassifier
from ..github import IssueText, PullText
from ..gitio import GitRepo, display
from ..models import (
    ChangelogEntry,
    Granularity,
    HintLadder,
    MergedPart,
    Milestone,
    MilestonePlan,
    Provenance,
    Release,
    RepoSpec,
    milestone_id,
)
from ..models.plan import title_headlines
from ..models.task import compose
from ..refs import linked_issues
from ..repos import open_repo, spec_for
from ..rules import PlanningRules, Rules
from ..store import Store
from .changelog import read_changelog
from .describe import describe
from .entry_commits import link_entry_commits
from .features import cohesion, feature_groups, merged_back_feature, milestone_type
from .footprint import unit_footprint
from .granularity import effective_rules, flag_several, one_per_unit, replaced_granularity
from .hints import level0_problems, milestone_ladder
from .housekeeping import HousekeepingReader
from .kinds import KindReader
from .placement import EntryPlacer
from .pulls import Unit, attribute
from .ranges import plan_range
from .releases import find_releases, merged_back_entries
from .segment import MilestoneCut, RoleReader, Segmenter, UnitInfo, group_features
from .sizing import difficulty, expected_turns, is_far
from .task_text import carried_entries, plan_report, task_parts, text_warnings, with_task
from .task_text import withholding as task_withholding
from .unit_diffs import UnitDiff, unit_diffs

Progress = Callable[[str], None]


@dataclass
class PlanResult:
    plan: MilestonePlan
    patches: dict[str, tuple[bytes, bytes]]  # mid -> (ground_truth.patch, test.patch)
    hints: dict[str, HintLadder]
    replaced: Granularity | None = None  # the granularity of a plan of another kind this one replaced
    archived: Path | None = None  # where the plan this one replaced went (another clone, range or granularity)


@dataclass
class _Context:
    """What every milestone of one plan draws on."""

    repo: GitRepo
    rules: Rules
    classify: FileClassifier
    releases: list[Release]  # chain releases only (maintenance releases never bound a milestone)
    mainline_index: dict[str, int]
    planning: PlanningRules  # rules.planning with the granularity's size rules
    issues: dict[int, IssueText] = field(default_factory=dict)
    pulls: dict[int, PullText] = field(default_factory=dict)
    diffs: dict[str, UnitDiff] = field(default_factory=dict)  # each unit's changed lines
    said: set[str] = field(default_factory=set)  # the parts earlier milestones of the plan present, by name


def _enrich(github, full_name: str, units: list[Unit], ctx: _Context, warnings: list[str], progress: Progress) -> bool:
    """Fetch PR descriptions and issue texts; an outage becomes a warning (and False), not a lost plan."""
    try:
        for unit in units:
            if unit.pr:
                pull = github.pull(full_name, unit.pr)
                if pull:
                    ctx.pulls[unit.pr] = pull
                    unit.issues |= linked_issues(pull.body) - {unit.pr}
        progress(f"GitHub: {len(ctx.pulls)} pull requests")
        for number in sorted({issue_number for unit in units for issue_number in unit.issues}):
            issue = github.issue(full_name, number)
            if issue:
                ctx.issues[number] = issue
        progress(f"GitHub: {len(ctx.issues)} issues")
        return True
    except GitHubError as e:
        warnings.append(f"{e}; hints fall back to git history for what was not fetched")
        return False


def _milestone(
    ordinal: int,
    base: str,
    infos: list[UnitInfo],
    flags: list[str],
    ctx: _Context,
    carried: set[str] = frozenset(),
    merging: bool = False,
) -> tuple[Milestone, bytes, bytes, HintLadder]:
    """One milestone from its units: its patches, traced tests, description, size and hint ladder. `carried`:
    the commits of untested milestones merged into it, described in its task but never heading its title
    (no test of theirs could grade a headline). `merging`: it merges into the next milestone, whose parts its parts
    become (they are not said before that one)."""
    members = infos  # what the milestone's features are, for its cohesion
    if any(info.seed for info in infos if info.unit.sha not in carried):
        infos = [replace(info, seed=False) if info.unit.sha in carried else info for info in infos]
    units = [info.unit for info in infos]
    verify = units[-1].sha
    files = split_diff(ctx.repo.diff(base, verify))
    tests: list[FileDiff] = [file for file in files if ctx.classify.is_test(file.path)]
    others: list[FileDiff] = [file for file in files if not ctx.classify.is_test(file.path)]
    unreadable: list[str] = []
    text = {parsed.path: parsed for parsed in parse_text(files, unreadable)}  # binary files have no text entry
    accepted, excluded = _traced_tests(ctx, base, verify, infos, tests, text)
    release = next(
        (
            release.tag
            for release in ctx.releases
            if ctx.mainline_index[release.mainline_commit] >= ctx.mainline_index[verify]
        ),
        None,
    )
    changed = [display(file.path) for file in files]
    groups = feature_groups(infos, ctx.issues)
    kinds = KindReader(ctx.planning)
    withholding = task_withholding(others, text, ctx.classify)
    features = [group.feature(kinds, ctx.classify.is_test) for group in groups]
    backports = [info for info in infos if info.role == "backport" and info.entries]
    features += [merged_back_feature(info.entries) for info in backports]
    task = describe(features, withholding, lambda words: kinds.is_housekeeping(words, subject=True))
    sources = [(group.infos, group.entries) for group in groups] + [([info], info.entries) for info in backports]
    parts = task_parts(task, sources, ctx.classify, ctx.diffs, ctx.repo)
    parts = [part.model_copy(update={"housekeeping": kinds.is_housekeeping(part.name, subject=True)}) for part in parts]
    # an entry an earlier milestone presented (a fix merged back from a maintenance branch, placed twice) is that
    # milestone's: said again here, it would be asked twice or named as this task's context
    fresh = [part for part in parts if part.name.lower() not in ctx.said]
    parts = fresh or parts
    if not merging:
        ctx.said |= {part.name.lower() for part in parts}
    composed = compose(parts, release)
    title, description, title_source = composed.title, composed.description, composed.title_source
    prs = [unit.pr for unit in units if unit.pr]
    added = sum(parsed.added for parsed in text.values())
    deleted = sum(parsed.removed for parsed in text.values())
    planning = ctx.planning
    turns = expected_turns(infos, text, ctx.classify, planning)
    if not accepted:
        flags = [*flags, "no_traced_tests"]  # an annotation only: validation finds the tests by running them
    coherent, why = cohesion(feature_groups(members, ctx.issues), ctx.classify.is_source)
    if not coherent:
        flags = [*flags, "unrelated_parts"]
    if is_far(turns, planning):
        flags = [*flags, "expected_turns_far_from_target"]
    milestone = Milestone(
        id=milestone_id(ordinal),
        ordinal=ordinal,
        title=title,
        description=description,
        base_commit=base,
        verify_commit=verify,
        release=release,
        source_prs=prs,
        issues=sorted({issue for unit in units for issue in unit.issues}),
        commits=[unit.sha for unit in units],
        changed_files=changed,
        test_files=[display(file.path) for file in tests],
        lines_added=added,
        lines_deleted=deleted,
        difficulty=difficulty(added + deleted, len(others), len(prs), planning.difficulty_lines),
        type=milestone_type(groups),
        title_source=title_source,
        expected_turns=turns,
        acceptance_tests=accepted,
        excluded_tests=excluded,
        headlines=title_headlines(parts, composed),
        parts=parts,
        cohesion=why,
        flags=sorted(set(flags)),
    )
    milestone = with_task(milestone, task, composed, ctx.repo, ctx.classify, ctx.planning, kinds)
    if unreadable:
        why = (
            f"{milestone.id}: its diff could not be parsed ({unreadable[0]}); "
            "its hunks, line counts and traced tests are not read"
        )
        quality = milestone.quality.model_copy(update={"warnings": [*milestone.quality.warnings, why]})
        milestone = milestone.model_copy(update={"quality": quality})
    ladder = milestone_ladder(
        milestone, infos, groups, others, text, (ctx.planning, ctx.classify, ctx.pulls), withholding
    )
    if hint_problems := level0_problems(ladder):
        quality = milestone.quality.model_copy(update={"hint_problems": hint_problems})
        milestone = milestone.model_copy(update={"quality": quality})
    return milestone, b"".join(file.raw for file in others), b"".join(file.raw for file in tests), ladder


def _traced_tests(
    ctx: _Context, base: str, verify: str, infos: list[UnitInfo], tests: list[FileDiff], text: dict
) -> tuple[list[str], list]:
    """(acceptance tests, excluded tests) by the static trace of the test files' added lines."""
    changed_lines = {
        file.path: [line.target_line_no for hunk in text[display(file.path)] for line in hunk if line.is_added]
        for file in tests
        if display(file.path) in text and not file.deleted
    }
    described = {info.unit.sha: info.described for info in infos}
    labels = {info.unit.sha: f"commit {info.unit.sha[:10]} ({info.unit.commit.subject[:60]!r})" for info in infos}
    touched_by: dict[str, set[str]] = {}
    for info in infos:
        for file in info.unit.files:
            touched_by.setdefault(file.path, set()).add(info.unit.sha)
    return trace_tests(ctx.repo, base, verify, changed_lines, touched_by, described, labels)


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
    entries: list[ChangelogEntry]  # every entry of the range's releases (and unreleased), with its placement
    entry_links: list[set[int]]  # the units each entry is placed on (indexes into `units`; empty: unplaced)
    backport_entries: int
    sources: list[str]
    ctx: _Context
    notes: list[str]
    warnings: list[str]
    granularity: Granularity = "feature"


def mine_history(
    repo: GitRepo,
    spec: RepoSpec,
    rules: Rules,
    from_ref: str | None = None,
    to_ref: str | None = None,
    github=None,
    progress: Progress = lambda message: None,
    granularity: Granularity | None = None,
) -> Mined:
    """Range, releases, PR attribution, changelog links, roles, features and segments: one pass over history.
    `granularity` (default: `planning.granularity`): a milestone per feature, or one per PR."""
    granularity = granularity or rules.planning.granularity
    tags = repo.tags()
    chosen = plan_range(repo, tags, rules, from_ref, to_ref)
    index = {sha: position for position, sha in enumerate(chosen.mainline)}
    first, last = index[chosen.start], index[chosen.end]
    releases, release_warnings = find_releases(
        repo, tags, chosen.mainline, rules.planning.skip_prereleases, (first, last)
    )
    releases = [release for release in releases if index[release.mainline_commit] <= last]
    chain = [release for release in releases if not release.maintenance]
    warnings = [*chosen.warnings, *release_warnings]
    progress(f"{len(chain)} releases, {len(releases) - len(chain)} maintenance releases")

    commits = repo.first_parent_log(chosen.start, chosen.end)
    units = attribute(repo, commits, chosen.start)
    progress(f"{len(units)} mainline commits, {sum(1 for unit in units if unit.pr)} pull requests")

    def release_of(sha: str) -> str | None:
        return next((release.version for release in chain if index[release.mainline_commit] >= index[sha]), None)

    classify = FileClassifier(rules.planning)
    ctx = _Context(repo, rules, classify, chain, index, effective_rules(rules.planning, granularity))
    release_texts = None
    if github is not None and spec.github:
        if _enrich(github, spec.github, units, ctx, warnings, progress):
            try:
                release_texts = github.releases(spec.github)
            except GitHubError as e:
                warnings.append(f"{e}; release notes come from the repository's files only")
    raw_entries, sources = read_changelog(repo, chosen.end, units, release_of, release_texts, warnings)
    # The range's releases: after its start and not the from-ref's own (tagged off the line, a from-ref's
    # release first shows up on it later); unreleased notes only when the range does not end at a release.
    released = [
        release
        for release in releases
        if first < index[release.mainline_commit] and not repo.is_ancestor(release.commit, chosen.from_commit)
    ]
    in_range = {release.version for release in released if not release.maintenance}
    ends_at_release = any(release.commit == chosen.end for release in chain)
    range_entries = [
        entry for entry in raw_entries if entry.release in in_range or (entry.release is None and not ends_at_release)
    ]
    kinds = KindReader(rules.planning)
    range_entries = link_entry_commits(repo, units, range_entries, classify, kinds)
    diffs = ctx.diffs = unit_diffs(repo, units)
    warnings += [
        f"commit {unit.sha[:10]} ({unit.commit.subject[:60]!r}): its diff could not be parsed; "
        "its changed lines are not read (housekeeping, placement)"
        for unit in units
        if diffs[unit.sha].unreadable
    ]
    housekeeping = HousekeepingReader(repo, rules.planning, classify)
    chores = housekeeping.reverted_pairs(units)
    for unit in units:
        if unit.sha not in chores and (chore := housekeeping.of(unit, diffs[unit.sha])):
            chores[unit.sha] = chore
    roles = RoleReader(rules.planning, classify, {release.commit for release in releases if release.maintenance})

    def is_work(unit: Unit) -> bool:
        return (
            unit.sha not in chores
            and not roles.is_backport(unit)
            and kinds.title(unit.title) != "housekeeping"
            and any(classify.is_source(file.path) or classify.is_test(file.path) for file in unit.files)
        )

    placer = EntryPlacer(
        units, diffs, is_work, lambda path: not classify.is_noise(path), release_of, rules.planning.placement
    )
    entries, links = placer.place(range_entries)
    if not sources:
        warnings.append("no changelog found; PR titles and commit subjects stand in for changelog entries")
    else:
        unplaced = [entry for entry in entries if entry.placed_by == "unplaced"]
        if unplaced:
            warnings.append(
                f"{len(unplaced)} changelog entries in this range could be tied to no commit of it "
                "(by reference, identifiers, topic or the commit that wrote them); no task carries them"
            )

    labels = {number: pull.labels for number, pull in ctx.pulls.items()}
    infos = group_features(units, links, entries, roles, labels, chores)
    for info in infos:
        if info.role in ("feature", "test_only"):
            info.footprint = unit_footprint(repo, info.unit, diffs[info.unit.sha], classify.is_source)
    merged_back = merged_back_entries(repo, releases, raw_entries, chosen.start, index, (first, last))
    for info in infos:
        if info.role == "backport" and info.unit.sha in merged_back:
            info.entries = merged_back[info.unit.sha]  # what its tests check is described, not left unexplained
    backport_entries = sum(len(notes) for notes in merged_back.values())
    if granularity == "pr":
        infos = one_per_unit(infos)
    segmenter = Segmenter(ctx.planning, classify, split_oversized=granularity == "feature")
    segments = segmenter.segment(infos, {release.mainline_commit for release in chain})
    if granularity == "pr":
        segments = flag_several(segments, infos)
    return Mined(
        chosen.from_ref,
        chosen.to_ref,
        chosen.start,
        chosen.end,
        releases,
        units,
        infos,
        segments,
        entries,
        links,
        backport_entries,
        sources,
        ctx,
        chosen.notes,
        warnings,
        granularity,
    )


def build_plan(
    mined: Mined, spec: RepoSpec, progress: Progress = lambda message: None, merged: dict[str, str] | None = None
) -> PlanResult:
    """Turn mined history into milestones: patches, acceptance tests, descriptions, hint ladders.

    `merged` (milestone id -> its validation status): milestones validation found untested; each keeps its
    own record, marked merged, and the next milestone's task holds its work too (from its base)."""
    rules = mined.ctx.rules
    merged = merged or {}
    info_of = {info.unit.sha: info for info in mined.infos}
    milestones, patches, hints = [], {}, {}
    base = mined.start
    pending: list[Milestone] = []  # merged milestones the next one carries
    for ordinal, cut in enumerate(mined.segments, start=1):
        infos = [info_of[unit.sha] for unit in cut.units]
        if pending and milestone_id(ordinal) not in merged:
            carried = [info_of[sha] for part in pending for sha in part.commits]
            carried_commits = {sha for part in pending for sha in part.commits}
            milestone, ground_truth, test_patch, ladder = _milestone(
                ordinal, pending[0].base_commit, carried + infos, cut.flags, mined.ctx, carried_commits
            )
            parts = [
                MergedPart(id=part.id, title=part.title, status=merged[part.id], commits=part.commits)
                for part in pending
            ]
            milestone = milestone.model_copy(update={"merged": parts})
            carried_ids = {part.id for part in pending}
            milestones = [
                done.model_copy(update={"merged_into": milestone.id}) if done.id in carried_ids else done
                for done in milestones
            ]
            pending = []
        else:
            merging = milestone_id(ordinal) in merged
            milestone, ground_truth, test_patch, ladder = _milestone(
                ordinal, base, infos, cut.flags, mined.ctx, merging=merging
            )
        if milestone.id in merged:
            milestone = milestone.model_copy(update={"status": "merged"})  # `merged_into`: once its carrier is built
            pending.append(milestone)
        milestones.append(milestone)
        patches[milestone.id] = (ground_truth, test_patch)
        hints[milestone.id] = ladder
        base = milestone.verify_commit
        progress(f"{milestone.id}: {milestone.title}")
    warnings = list(mined.warnings)
    for milestone in milestones:
        for exclusion in milestone.excluded_tests:
            warnings.append(f"{milestone.id}: left out {exclusion.test}: {exclusion.reason}")
        warnings += text_warnings(milestone)
    entries = carried_entries(mined.entries, mined.entry_links, mined.infos, milestones)
    report = plan_report(milestones, entries, mined.ctx.planning, mined.backport_entries)
    for outlier in report.size_outliers:
        warnings.append(f"{outlier}: its size is far from what one milestone should take")

    index = mined.ctx.mainline_index
    in_range = [
        release
        for release in mined.releases
        if index[mined.start] <= index[release.mainline_commit] <= index[mined.end]
    ]
    plan = MilestonePlan(
        repo=spec,
        from_ref=mined.from_ref,
        to_ref=mined.to_ref,
        from_commit=mined.start,
        to_commit=mined.end,
        granularity=mined.granularity,
        releases=in_range,
        changelog_sources=mined.sources,
        pulls=[unit.to_pull() for unit in mined.units if unit.pr],
        changelog=entries,
        commits=[info.record() for info in mined.infos],
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
    progress: Progress = lambda message: None,
    clone_progress=None,
    granularity: Granularity | None = None,
) -> PlanResult:
    """Resolve, clone (or fetch), plan, and write `repos/<key>/plan.json` and the milestone files.

    A repository holds one plan (milestones, runs and tables are addressed by repo key and milestone
    id), so a plan of the other granularity replaces the one there; `replaced` says when it did."""
    spec = spec_for(store, arg)
    repo = open_repo(store, spec, progress=clone_progress)
    github = github_factory(spec) if github_factory else None
    mined = mine_history(repo, spec, rules, from_ref, to_ref, github, progress, granularity)
    result = build_plan(mined, spec, progress)
    result.replaced = replaced_granularity(store, spec.key, result.plan.granularity)
    result.archived = store.archive_other_plan(result.plan)  # another clone, range or granularity: kept apart
    store.save_plan(result.plan, result.patches, result.hints)
    return result
