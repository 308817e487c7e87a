"""Segmentation: cut the mainline between two refs into contiguous milestones shaped by features.

1. Every unit (mainline commit) gets a role: `feature` (code work: a feature, performance change,
   bug fix or refactor), `test_only`, `housekeeping` (CI, docs, pins, bumps, releases: never a
   title) or `backport` (a maintenance branch merged back). Units sharing a changelog entry or a
   linked issue belong to one feature group.
2. Seeds open milestones: features the release notes describe (or, with no release notes in
   range, every feature unit). A group's span (first..last unit) may not be cut; overlapping spans
   (interleaved PRs) merge into one atom. Atoms without a seed fold into their neighbours.
3. Atoms are taken in order; a milestone closes once it holds a seed and meets the minimum size
   (source files, lines, a changed test), and the next atom holds another seed, would break the
   maximum, or a release tag lies between them.
A single feature larger than the maximum is split at unit boundaries and flagged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..files import FileClassifier
from ..models import ChangelogEntry
from ..models.history import CommitRole
from ..rules import Kind, PlanningRules
from .footprint import WHOLE_FILE, shared
from .housekeeping import Chore
from .kinds import KindReader, strongest
from .pulls import Unit

Role = str  # feature | test_only | housekeeping | backport


@dataclass
class UnitInfo:
    unit: Unit
    role: Role
    kind: Kind | None = None  # the work kind of a feature (or a linked test_only) unit
    # release-note entries describing it (a backport's: the maintenance releases it merges back into the range)
    entries: list[ChangelogEntry] = field(default_factory=list)
    seed: bool = False  # may open a milestone
    groups: set[int] = field(default_factory=set)  # feature-group ids
    housekeeping: str | None = None  # why a housekeeping unit is: its type (ci, packaging, formatting, wording, ...)
    reason: str | None = None
    footprint: set[str] = field(default_factory=set)  # the definitions its code changes (`footprint.footprint`)

    def code(self, is_source: Callable[[str], bool]) -> set[str]:
        """What its work changes: its footprint once read, else each source file whole."""
        if self.footprint:
            return self.footprint
        return {f"{file.path}:{WHOLE_FILE}" for file in self.unit.files if is_source(file.path)}

    def record(self) -> CommitRole:
        """The unit's classification as the plan records it."""
        unit = self.unit
        return CommitRole(
            sha=unit.sha,
            subject=unit.commit.subject,
            pr=unit.pr,
            role=self.role,
            kind=self.kind,
            housekeeping=self.housekeeping,
            reason=self.reason,
        )

    @property
    def described(self) -> bool:
        """The milestone's description covers this unit's work (so its tests count)."""
        return self.role == "feature" or (self.role in ("test_only", "backport") and bool(self.entries))


@dataclass
class MilestoneCut:
    """The contiguous mainline units one milestone will hold, with what is unusual about it
    (`undersized`, `oversized`, `split_feature`, `no_tests`)."""

    units: list[Unit]
    flags: list[str] = field(default_factory=list)


class _UnionFind:
    def __init__(self, size: int):
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, first: int, second: int) -> None:
        self.parent[self.find(first)] = self.find(second)


class RoleReader:
    """Decides each unit's role and kind from its entries, labels, title and files."""

    def __init__(self, rules: PlanningRules, classify: FileClassifier, maintenance_commits: set[str] = frozenset()):
        self.kinds = KindReader(rules)
        self.classify = classify
        self.maintenance_commits = set(maintenance_commits)
        self.backport_subjects = [re.compile(pattern, re.I) for pattern in rules.backport_subjects]
        self.described_seed_share = rules.described_seed_share
        self.tested_work_opens = rules.tested_work_opens

    def opens(self, info: UnitInfo, well_described: bool) -> bool:
        """Whether the unit may open a milestone: work the release notes describe; where they describe little,
        any work; and (`tested_work_opens`) work they leave out that changes its own tests and is no refactor,
        so a tested fix no note mentions is a task of its own, not a rider whose tests grade a grab-bag."""
        if info.role != "feature":
            return False
        if info.entries or not well_described:
            return True
        tests = any(self.classify.is_test(file.path) for file in info.unit.files)
        return self.tested_work_opens and tests and info.kind != "refactor"

    def is_backport(self, unit: Unit) -> bool:
        """A maintenance branch merged back: it brings in a maintenance release, or says so (also when
        squashed: "Merge stable into main (#3674)")."""
        if unit.commit.is_merge and self.maintenance_commits & set(unit.side_commits):
            return True
        return any(
            pattern.search(text) for pattern in self.backport_subjects for text in (unit.commit.subject, unit.title)
        )

    def role(
        self, unit: Unit, entries: list[ChangelogEntry], labels: list[str] = (), chore: Chore | None = None
    ) -> tuple[Role, Kind | None, str | None, str | None]:
        """(role, kind, housekeeping type, reason). What the diff says comes first: a commit that changes
        only CI, packaging, docs or formatting is housekeeping whatever its entries or title say."""
        if self.is_backport(unit):
            return "backport", None, "merge", "a maintenance branch merged back"
        if chore is not None:
            return "housekeeping", None, chore.type, chore.reason
        paths = [file.path for file in unit.files]
        has_source = any(self.classify.is_source(path) for path in paths)
        work = strongest(
            [work_kind for work_kind in map(self.kinds.entry_kind, entries) if work_kind != "housekeeping"]
        )
        if work is not None:  # entries that only say housekeeping leave the decision to the title and files
            return ("feature" if has_source else "test_only"), work, None, None
        kind = self.kinds.title(unit.title, labels)
        if not paths:
            return "housekeeping", None, "empty", "it changes no file"
        if kind == "housekeeping":
            return "housekeeping", None, "wording", f"its title reads as housekeeping: {unit.title[:80]!r}"
        if all(self.classify.is_noise(path) for path in paths):
            return "housekeeping", None, "files", "it changes housekeeping files only"
        if not has_source:
            return "test_only", None, None, None
        return "feature", kind or "feature", None, None


def group_features(
    units: list[Unit],
    entry_links: list[set[int]],
    entries: list[ChangelogEntry],
    roles: RoleReader,
    labels: dict[int, list[str]] | None = None,
    chores: dict[str, Chore] | None = None,
) -> list[UnitInfo]:
    """`entry_links[k]`: the indexes of the units that `entries[k]` is placed on (by PR, issue, commit or
    identifiers); `chores`: the housekeeping verdicts of the units' diffs, by sha."""
    by_unit: dict[int, list[ChangelogEntry]] = {}
    for entry, linked in zip(entries, entry_links):
        for position in linked:
            by_unit.setdefault(position, []).append(entry)
    infos = []
    for position, unit in enumerate(units):
        mine = by_unit.get(position, [])
        role, kind, housekeeping, reason = roles.role(
            unit, mine, (labels or {}).get(unit.pr or 0, []), (chores or {}).get(unit.sha)
        )
        described = [cited for cited in mine if roles.kinds.entry_kind(cited) != "housekeeping"]
        infos.append(UnitInfo(unit, role, kind, described, housekeeping=housekeeping, reason=reason))
    # Where the release notes describe most of the work, they decide what opens a milestone; where they
    # tie to little of it (notes that cite no PR), every piece of work may.
    work = [info for info in infos if info.role == "feature"]
    described = sum(info.unit.lines for info in work if info.entries)
    well_described = bool(work) and described >= roles.described_seed_share * sum(
        position.unit.lines for position in work
    )
    for info in infos:
        info.seed = roles.opens(info, well_described)
    union_find = _UnionFind(len(units))
    linkable = {"feature", "test_only"}
    for linked in entry_links:
        linked = sorted(position for position in linked if infos[position].role in linkable)
        for position in linked[1:]:
            union_find.union(linked[0], position)
    by_issue: dict[int, int] = {}
    for position, info in enumerate(infos):
        if info.role != "feature":
            continue
        for issue in info.unit.issues:
            if issue in by_issue:
                union_find.union(by_issue[issue], position)
            else:
                by_issue[issue] = position
    for position, info in enumerate(infos):
        if info.role == "feature" or (info.role == "test_only" and info.entries):
            info.groups = {union_find.find(position)}
    return infos


@dataclass
class _Stats:
    files: set[str] = field(default_factory=set)
    source_files: set[str] = field(default_factory=set)
    lines: int = 0
    has_tests: bool = False

    def add(self, unit: Unit, classify: FileClassifier) -> None:
        for file in unit.files:
            self.files.add(file.path)
            if classify.is_source(file.path):
                self.source_files.add(file.path)
            if classify.is_test(file.path):
                self.has_tests = True
        self.lines += unit.lines


WORK_ROLES = ("feature", "test_only")


def _stats(infos: list[UnitInfo], classify: FileClassifier) -> _Stats:
    """The size of the work in `infos`: housekeeping and backports ride along but do not count."""
    stats = _Stats()
    for info in infos:
        if info.role in WORK_ROLES:
            stats.add(info.unit, classify)
    return stats


class Segmenter:
    def __init__(self, rules: PlanningRules, classify: FileClassifier, split_oversized: bool = True):
        """`split_oversized`: False keeps a segment over the maximum whole, flagged (a PR is never split)."""
        self.rules = rules
        self.classify = classify
        self.split = split_oversized

    def meets_min(self, stats: _Stats) -> bool:
        rules = self.rules
        return (
            len(stats.source_files) >= rules.min_source_files
            and stats.lines >= rules.min_lines
            and (stats.has_tests or not rules.require_tests)
        )

    def exceeds_max(self, stats: _Stats) -> bool:
        return len(stats.files) > self.rules.max_files or stats.lines > self.rules.max_lines

    def atoms(self, infos: list[UnitInfo]) -> list[list[int]]:
        """Maximal runs of unit indexes that no milestone boundary may split."""
        last_of: dict[int, int] = {}
        for position, info in enumerate(infos):
            for group in info.groups:
                last_of[group] = position
        atoms: list[list[int]] = []
        open_until = -1
        for position, info in enumerate(infos):
            if position > open_until:
                atoms.append([])
            atoms[-1].append(position)
            for group in info.groups:
                open_until = max(open_until, last_of[group])
        return atoms

    def segment(self, infos: list[UnitInfo], release_ends: set[str]) -> list[MilestoneCut]:
        """`release_ends`: mainline shas at which a release tag sits."""
        segments: list[list[int]] = []
        current: list[int] = []
        for atom in self.atoms(infos):
            if current and self._cut_before(infos, current, atom, release_ends):
                segments.append(current)
                current = []
            current.extend(atom)
        if current:
            segments.append(current)
        segments = self._merge_small_tail(infos, self._merge_seedless(infos, segments))
        out: list[MilestoneCut] = []
        for cut in segments:
            out.extend(self._split_oversized(infos, cut))
        return out

    def _cut_before(self, infos, current: list[int], atom: list[int], release_ends: set[str]) -> bool:
        if not any(infos[position].seed for position in current):
            return False
        stats = _stats([infos[position] for position in current], self.classify)
        if not self.meets_min(stats):
            # below the minimum a milestone grows, but by another feature only when the two share code (one no
            # test grades yet grows whatever comes: untested, it would be no task)
            tested = stats.has_tests or not self.rules.require_tests
            return self.rules.related_features_only and tested and self._unrelated(infos, current, atom)
        if self.rules.cut_at_releases and infos[current[-1]].unit.sha in release_ends:
            return True  # a milestone ends at its release tag; what follows opens the next one
        # Atoms are feature-closed, so two atoms holding seeds are always different features;
        # an atom without a seed (housekeeping, backports, undescribed work) folds into this one.
        return any(infos[position].seed for position in atom)

    def _unrelated(self, infos, current: list[int], atom: list[int]) -> bool:
        """The atom holds another feature whose code shares no definition with the seeds' code so far."""

        def code(positions: list[int]) -> set[str]:
            seeds = [infos[position] for position in positions if infos[position].seed]
            return set().union(*(seed.code(self.classify.is_source) for seed in seeds))

        return any(infos[position].seed for position in atom) and not shared(code(current), code(atom))

    def _merge_seedless(self, infos, segments: list[list[int]]) -> list[list[int]]:
        """A segment without a seed (housekeeping after the last release, say) joins its neighbour."""
        out: list[list[int]] = []
        for cut in segments:
            if out and not any(infos[position].seed for position in cut):
                out[-1] = out[-1] + cut
            elif out and not any(infos[position].seed for position in out[-1]):
                out[-1] = out[-1] + cut
            else:
                out.append(cut)
        return out

    def _merge_small_tail(self, infos, segments: list[list[int]]) -> list[list[int]]:
        if len(segments) < 2:
            return segments
        tail = _stats([infos[position] for position in segments[-1]], self.classify)
        both = _stats([infos[position] for position in segments[-2] + segments[-1]], self.classify)
        if self.rules.related_features_only and self._unrelated(infos, segments[-2], segments[-1]):
            return segments  # a small last feature sharing no code with the one before stays apart
        if not self.meets_min(tail) and not self.exceeds_max(both):
            return segments[:-2] + [segments[-2] + segments[-1]]
        return segments

    def _split_oversized(self, infos, cut: list[int]) -> list[MilestoneCut]:
        """A segment over the maximum is split at unit boundaries, each piece keeping a seed."""
        stats = _stats([infos[position] for position in cut], self.classify)
        if not self.exceeds_max(stats) or not self.split:
            flags = ([] if self.meets_min(stats) else ["undersized"]) + (
                ["oversized"] if self.exceeds_max(stats) else []
            )
            if not stats.has_tests:
                flags.append("no_tests")
            return [MilestoneCut([infos[position].unit for position in cut], flags)]
        pieces: list[list[int]] = [[]]
        for position in cut:
            if pieces[-1] and self.exceeds_max(
                _stats([infos[other] for other in pieces[-1] + [position]], self.classify)
            ):
                pieces.append([])
            pieces[-1].append(position)
        pieces = self._merge_seedless(infos, pieces)
        out = []
        for piece in pieces:
            piece_stats = _stats([infos[position] for position in piece], self.classify)
            flags = (["split_feature"] if len(pieces) > 1 else []) + (
                ["oversized"] if self.exceeds_max(piece_stats) else []
            )
            flags += [] if piece_stats.has_tests else ["no_tests"]
            out.append(MilestoneCut([infos[position].unit for position in piece], flags))
        return out
