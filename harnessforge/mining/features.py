"""The features a milestone presents: its units grouped by feature, titled from the repository.

A feature is a group of units (PRs, commits) that share a changelog entry or an issue. Its title
is, in order: the issue's title (GitHub), its release-note entry, its PR title, its commit subject.
Housekeeping and backports are never features. Seeds (what the release notes describe, or every
PR when there are none) come first, by kind priority (feature > performance > bug fix > refactor);
work no release note mentions follows, so it is described but never titles the milestone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..github import IssueText
from ..models import ChangelogEntry
from ..rules import Kind
from .describe import Feature, readable_title
from .kinds import WORK_KINDS, KindReader, strongest, without_prefix
from .refs import strip_refs
from .segment import UnitInfo


def _first_paragraph(body: str) -> str:
    """The first paragraph of a message body that is prose (not a list, a reference or a trailer)."""
    for para in body.strip().split("\n\n"):
        para = para.strip()
        if para and not para.startswith(("*", "-", "Co-authored-by", "Signed-off-by")) and strip_refs(para):
            return para
    return ""


@dataclass
class FeatureGroup:
    """The units of one feature inside one milestone, with what describes them."""

    infos: list[UnitInfo]
    entries: list[ChangelogEntry] = field(default_factory=list)
    issues: list[IssueText] = field(default_factory=list)

    @property
    def seed(self) -> bool:
        return any(i.seed for i in self.infos)

    @property
    def kind(self) -> Kind:
        return strongest([i.kind for i in self.infos if i.kind]) or "feature"

    @property
    def lines(self) -> int:
        return sum(i.unit.lines for i in self.infos)

    def feature(self, kinds: KindReader) -> Feature:
        code = [i.unit for i in self.infos if i.role == "feature"] or [i.unit for i in self.infos]
        main = next((u for u in code if u.pr), None) or max(code, key=lambda u: u.lines)  # the PR that opened it
        unit_source = "pull request" if main.pr else "commit"
        unit_title = without_prefix(main.title) if kinds.title(main.title) != "housekeeping" else None
        # Release notes name a feature best, unless sanitising them (no code, no paths) left a stub.
        candidates = [
            *((i.title, "issue") for i in self.issues[:1]),
            *((readable_title(e.text), "changelog") for e in self.entries[:1]),
            (unit_title and readable_title(unit_title, limit=100), unit_source),
            *((e.text, "changelog") for e in self.entries[:1]),
            (without_prefix(main.title), unit_source),
        ]
        title, source = next((t, src) for t, src in candidates if t)
        if self.issues:
            motivation = self.issues[0].body.split("\n\n", 1)[0]
        elif not self.entries:  # no release notes: the PR's (or commit's) own first paragraph says why
            motivation = _first_paragraph(main.body)
        else:
            motivation = ""
        points = list(dict.fromkeys(e.text for e in self.entries))
        points = points or list(dict.fromkeys(without_prefix(u.title) for u in code))
        return Feature(title=title, points=points, motivation=motivation, seed=self.seed, source=source)


def feature_groups(infos: list[UnitInfo], issues: dict[int, IssueText]) -> list[FeatureGroup]:
    """A milestone's feature groups: seeds first by kind priority, then the rest, each in history order."""
    groups: dict[int, FeatureGroup] = {}
    for info in infos:
        if info.groups:
            group = groups.setdefault(next(iter(info.groups)), FeatureGroup([]))
            group.infos.append(info)
    for group in groups.values():
        group.entries = list({id(e): e for i in group.infos for e in i.entries}.values())
        numbers = sorted({n for i in group.infos for n in i.unit.issues})
        group.issues = [issues[n] for n in numbers if n in issues]
    ordered = list(groups.values())
    return sorted(ordered, key=lambda g: (not g.seed, WORK_KINDS.index(g.kind) if g.seed else 0))


def milestone_type(groups: list[FeatureGroup]) -> Kind:
    """The kind most of the milestone's seed work is (by lines changed), ties broken by priority."""
    weight: Counter = Counter()
    for g in [g for g in groups if g.seed] or groups:
        weight[g.kind] += max(g.lines, 1)
    if not weight:
        return "housekeeping"
    best = max(weight.values())
    return next(k for k in WORK_KINDS if weight.get(k) == best)
