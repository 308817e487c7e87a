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
from dataclasses import dataclass, field

from ..files import FileClassifier
from ..models import ChangelogEntry
from ..rules import Kind, PlanningRules
from .kinds import KindReader, strongest
from .pulls import Unit

Role = str  # feature | test_only | housekeeping | backport


@dataclass
class UnitInfo:
    unit: Unit
    role: Role
    kind: Kind | None = None  # the work kind of a feature (or a linked test_only) unit
    entries: list[ChangelogEntry] = field(default_factory=list)  # release-note entries describing it
    seed: bool = False  # may open a milestone
    groups: set[int] = field(default_factory=set)  # feature-group ids

    @property
    def described(self) -> bool:
        """The milestone's description covers this unit's work (so its tests count)."""
        return self.role == "feature" or (self.role == "test_only" and bool(self.entries))


@dataclass
class MilestoneCut:
    """The contiguous mainline units one milestone will hold, with what is unusual about it
    (`undersized`, `oversized`, `split_feature`, `no_tests`)."""

    units: list[Unit]
    flags: list[str] = field(default_factory=list)


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


class RoleReader:
    """Decides each unit's role and kind from its entries, labels, title and files."""

    def __init__(self, rules: PlanningRules, classify: FileClassifier, maintenance_commits: set[str] = frozenset()):
        self.kinds = KindReader(rules)
        self.classify = classify
        self.maintenance_commits = set(maintenance_commits)
        self.backport_subjects = [re.compile(p, re.I) for p in rules.backport_subjects]
        self.described_seed_share = rules.described_seed_share

    def is_backport(self, unit: Unit) -> bool:
        """A maintenance branch merged back: it brings in a maintenance release, or says so."""
        if not unit.commit.is_merge:
            return False
        return bool(self.maintenance_commits & set(unit.side_commits)) or any(
            p.search(unit.commit.subject) for p in self.backport_subjects
        )

    def role(self, unit: Unit, entries: list[ChangelogEntry], labels: list[str] = ()) -> tuple[Role, Kind | None]:
        if self.is_backport(unit):
            return "backport", None
        paths = [f.path for f in unit.files]
        has_source = any(self.classify.is_source(p) for p in paths)
        if entries:
            work = strongest([k for k in map(self.kinds.entry_kind, entries) if k != "housekeeping"])
            if work is None:
                return "housekeeping", None
            return ("feature" if has_source else "test_only"), work
        kind = self.kinds.title(unit.title, labels)
        if not paths or kind == "housekeeping" or all(self.classify.is_noise(p) for p in paths):
            return "housekeeping", None
        if not has_source:
            return "test_only", None
        return "feature", kind or "feature"


def group_features(
    units: list[Unit],
    entry_links: list[set[int]],
    entries: list[ChangelogEntry],
    roles: RoleReader,
    labels: dict[int, list[str]] | None = None,
) -> list[UnitInfo]:
    """`entry_links[k]`: the indexes of the units that `entries[k]` cites (by PR, issue or commit)."""
    by_unit: dict[int, list[ChangelogEntry]] = {}
    for entry, linked in zip(entries, entry_links):
        for i in linked:
            by_unit.setdefault(i, []).append(entry)
    infos = []
    for i, u in enumerate(units):
        mine = by_unit.get(i, [])
        role, kind = roles.role(u, mine, (labels or {}).get(u.pr or 0, []))
        infos.append(UnitInfo(u, role, kind, [e for e in mine if roles.kinds.entry_kind(e) != "housekeeping"]))
    # Where the release notes describe most of the work, they decide what opens a milestone; where they
    # tie to little of it (notes that cite no PR), every piece of work may.
    work = [info for info in infos if info.role == "feature"]
    described = sum(info.unit.lines for info in work if info.entries)
    well_described = bool(work) and described >= roles.described_seed_share * sum(i.unit.lines for i in work)
    for info in infos:
        info.seed = info.role == "feature" and (bool(info.entries) or not well_described)
    uf = _UnionFind(len(units))
    linkable = {"feature", "test_only"}
    for linked in entry_links:
        linked = sorted(i for i in linked if infos[i].role in linkable)
        for i in linked[1:]:
            uf.union(linked[0], i)
    by_issue: dict[int, int] = {}
    for i, info in enumerate(infos):
        if info.role != "feature":
            continue
        for issue in info.unit.issues:
            if issue in by_issue:
                uf.union(by_issue[issue], i)
            else:
                by_issue[issue] = i
    for i, info in enumerate(infos):
        if info.role == "feature" or (info.role == "test_only" and info.entries):
            info.groups = {uf.find(i)}
    return infos


@dataclass
class _Stats:
    files: set[str] = field(default_factory=set)
    source_files: set[str] = field(default_factory=set)
    lines: int = 0
    has_tests: bool = False

    def add(self, unit: Unit, classify: FileClassifier) -> None:
        for f in unit.files:
            self.files.add(f.path)
            if classify.is_source(f.path):
                self.source_files.add(f.path)
            if classify.is_test(f.path):
                self.has_tests = True
        self.lines += unit.lines


WORK_ROLES = ("feature", "test_only")


def _stats(infos: list[UnitInfo], classify: FileClassifier) -> _Stats:
    """The size of the work in `infos`: housekeeping and backports ride along but do not count."""
    s = _Stats()
    for info in infos:
        if info.role in WORK_ROLES:
            s.add(info.unit, classify)
    return s


class Segmenter:
    def __init__(self, rules: PlanningRules, classify: FileClassifier):
        self.rules = rules
        self.classify = classify

    def meets_min(self, s: _Stats) -> bool:
        r = self.rules
        return (
            len(s.source_files) >= r.min_source_files
            and s.lines >= r.min_lines
            and (s.has_tests or not r.require_tests)
        )

    def exceeds_max(self, s: _Stats) -> bool:
        return len(s.files) > self.rules.max_files or s.lines > self.rules.max_lines

    def atoms(self, infos: list[UnitInfo]) -> list[list[int]]:
        """Maximal runs of unit indexes that no milestone boundary may split."""
        last_of: dict[int, int] = {}
        for i, info in enumerate(infos):
            for g in info.groups:
                last_of[g] = i
        atoms: list[list[int]] = []
        open_until = -1
        for i, info in enumerate(infos):
            if i > open_until:
                atoms.append([])
            atoms[-1].append(i)
            for g in info.groups:
                open_until = max(open_until, last_of[g])
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
        for seg in segments:
            out.extend(self._split_oversized(infos, seg))
        return out

    def _cut_before(self, infos, current: list[int], atom: list[int], release_ends: set[str]) -> bool:
        if not any(infos[i].seed for i in current):
            return False
        if not self.meets_min(_stats([infos[i] for i in current], self.classify)):
            return False
        if self.rules.cut_at_releases and infos[current[-1]].unit.sha in release_ends:
            return True  # a milestone ends at its release tag; what follows opens the next one
        # Atoms are feature-closed, so two atoms holding seeds are always different features;
        # an atom without a seed (housekeeping, backports, undescribed work) folds into this one.
        return any(infos[i].seed for i in atom)

    def _merge_seedless(self, infos, segments: list[list[int]]) -> list[list[int]]:
        """A segment without a seed (housekeeping after the last release, say) joins its neighbour."""
        out: list[list[int]] = []
        for seg in segments:
            if out and not any(infos[i].seed for i in seg):
                out[-1] = out[-1] + seg
            elif out and not any(infos[i].seed for i in out[-1]):
                out[-1] = out[-1] + seg
            else:
                out.append(seg)
        return out

    def _merge_small_tail(self, infos, segments: list[list[int]]) -> list[list[int]]:
        if len(segments) < 2:
            return segments
        tail = _stats([infos[i] for i in segments[-1]], self.classify)
        both = _stats([infos[i] for i in segments[-2] + segments[-1]], self.classify)
        if not self.meets_min(tail) and not self.exceeds_max(both):
            return segments[:-2] + [segments[-2] + segments[-1]]
        return segments

    def _split_oversized(self, infos, seg: list[int]) -> list[MilestoneCut]:
        """A segment over the maximum is split at unit boundaries, each piece keeping a seed."""
        stats = _stats([infos[i] for i in seg], self.classify)
        if not self.exceeds_max(stats):
            flags = [] if self.meets_min(stats) else ["undersized"]
            if not stats.has_tests:
                flags.append("no_tests")
            return [MilestoneCut([infos[i].unit for i in seg], flags)]
        pieces: list[list[int]] = [[]]
        for i in seg:
            if pieces[-1] and self.exceeds_max(_stats([infos[j] for j in pieces[-1] + [i]], self.classify)):
                pieces.append([])
            pieces[-1].append(i)
        pieces = self._merge_seedless(infos, pieces)
        out = []
        for piece in pieces:
            s = _stats([infos[i] for i in piece], self.classify)
            flags = (["split_feature"] if len(pieces) > 1 else []) + (["oversized"] if self.exceeds_max(s) else [])
            flags += [] if s.has_tests else ["no_tests"]
            out.append(MilestoneCut([infos[i].unit for i in piece], flags))
        return out
