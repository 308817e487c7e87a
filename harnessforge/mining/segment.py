"""Segmentation: cut the mainline between two refs into contiguous, coherent milestones.

1. Units (mainline commits) are grouped into features: units sharing a changelog entry or a
   linked issue belong together.
2. A feature's span (first..last unit) may not be cut; overlapping spans (interleaved PRs) merge.
   Housekeeping units (docs, CI, version bumps) and test-only units fold into their neighbours.
3. Atoms are taken in order; a milestone closes once it meets the minimum size (source files,
   lines, a changed test) and the next atom is another feature, would break the maximum, or a
   release tag lies between them.
A single feature larger than the maximum is split at unit boundaries and flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rules import PlanningRules
from .classify import FileClassifier
from .pulls import Unit


@dataclass
class UnitInfo:
    unit: Unit
    role: str  # feature | noise | test_only
    groups: set[int] = field(default_factory=set)  # feature-group ids


@dataclass
class Segment:
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


def role_of(unit: Unit, classify: FileClassifier) -> str:
    paths = [f.path for f in unit.files]
    if not paths or classify.is_noise_subject(unit.title) or all(classify.is_noise(p) for p in paths):
        return "noise"
    if not any(classify.is_source(p) for p in paths):
        return "test_only"
    return "feature"


def group_features(units: list[Unit], entry_links: list[set[int]], classify: FileClassifier) -> list[UnitInfo]:
    """`entry_links`: for each changelog entry, the indexes of the units it cites."""
    infos = [UnitInfo(u, role_of(u, classify)) for u in units]
    uf = _UnionFind(len(units))
    for linked in entry_links:
        linked = sorted(i for i in linked if infos[i].role == "feature")
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
        if info.role == "feature":
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


def _stats(units: list[Unit], classify: FileClassifier) -> _Stats:
    s = _Stats()
    for u in units:
        s.add(u, classify)
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

    def segment(self, infos: list[UnitInfo], release_ends: set[str]) -> list[Segment]:
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
        segments = self._merge_small_tail(infos, segments)
        out: list[Segment] = []
        for seg in segments:
            out.extend(self._split_oversized(infos, seg))
        return out

    def _cut_before(self, infos, current: list[int], atom: list[int], release_ends: set[str]) -> bool:
        if all(infos[i].role != "feature" for i in atom):
            return False  # housekeeping folds into the milestone before it
        cur = _stats([infos[i].unit for i in current], self.classify)
        if not self.meets_min(cur):
            return False
        if self.rules.cut_at_releases and infos[current[-1]].unit.sha in release_ends:
            return True
        both = _stats([infos[i].unit for i in current + atom], self.classify)
        if self.exceeds_max(both):
            return True
        # Atoms are feature-closed, so two grouped atoms are always different features; an
        # ungrouped change (no changelog entry, no linked issue) stays if it touches the same code.
        if any(infos[i].groups for i in current) and any(infos[i].groups for i in atom):
            return True
        return not self._shares_source(infos, current, atom)

    def _shares_source(self, infos, current: list[int], atom: list[int]) -> bool:
        last_feature = next((i for i in reversed(current) if infos[i].role == "feature"), None)
        if last_feature is None:
            return True
        before = {f.path for f in infos[last_feature].unit.files if self.classify.is_source(f.path)}
        after = {f.path for i in atom for f in infos[i].unit.files if self.classify.is_source(f.path)}
        return bool(before & after)

    def _merge_small_tail(self, infos, segments: list[list[int]]) -> list[list[int]]:
        if len(segments) < 2:
            return segments
        tail = _stats([infos[i].unit for i in segments[-1]], self.classify)
        both = _stats([infos[i].unit for i in segments[-2] + segments[-1]], self.classify)
        if not self.meets_min(tail) and not self.exceeds_max(both):
            return segments[:-2] + [segments[-2] + segments[-1]]
        return segments

    def _split_oversized(self, infos, seg: list[int]) -> list[Segment]:
        units = [infos[i].unit for i in seg]
        stats = _stats(units, self.classify)
        if not self.exceeds_max(stats):
            flags = [] if self.meets_min(stats) else ["undersized"]
            if not stats.has_tests:
                flags.append("no_tests")
            return [Segment(units, flags)]
        if len(units) == 1:
            return [Segment(units, ["oversized"])]
        pieces: list[list[Unit]] = [[]]
        for u in units:
            if pieces[-1] and self.exceeds_max(_stats(pieces[-1] + [u], self.classify)):
                pieces.append([])
            pieces[-1].append(u)
        out = []
        for p in pieces:
            s = _stats(p, self.classify)
            flags = ["split_feature"] + (["oversized"] if self.exceeds_max(s) else [])
            flags += [] if s.has_tests else ["no_tests"]
            out.append(Segment(p, flags))
        return out
