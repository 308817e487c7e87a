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
    for paragraph in body.strip().split("\n\n"):
        paragraph = paragraph.strip()
        if (
            paragraph
            and not paragraph.startswith(("*", "-", "Co-authored-by", "Signed-off-by"))
            and strip_refs(paragraph)
        ):
            return paragraph
    return ""


@dataclass
class FeatureGroup:
    """The units of one feature inside one milestone, with what describes them."""

    infos: list[UnitInfo]
    entries: list[ChangelogEntry] = field(default_factory=list)
    issues: list[IssueText] = field(default_factory=list)

    @property
    def seed(self) -> bool:
        return any(info.seed for info in self.infos)

    @property
    def kind(self) -> Kind:
        return strongest([info.kind for info in self.infos if info.kind]) or "feature"

    @property
    def lines(self) -> int:
        return sum(info.unit.lines for info in self.infos)

    def feature(self, kinds: KindReader) -> Feature:
        code = [info.unit for info in self.infos if info.role == "feature"] or [info.unit for info in self.infos]
        main = next((unit for unit in code if unit.pr), None) or max(
            code, key=lambda unit: unit.lines
        )  # the PR that opened it
        unit_source = "pull request" if main.pr else "commit"
        unit_title = without_prefix(main.title) if kinds.title(main.title) != "housekeeping" else None
        # Release notes name a feature best, unless sanitising them (no code, no paths) left a stub.
        candidates = [
            *((info.title, "issue") for info in self.issues[:1]),
            *((readable_title(entry.text), "changelog") for entry in self.entries[:1]),
            (unit_title and readable_title(unit_title, limit=100), unit_source),
            *((entry.text, "changelog") for entry in self.entries[:1]),
            (without_prefix(main.title), unit_source),
        ]
        title, source = next((text, named_by) for text, named_by in candidates if text)
        if self.issues:
            motivation = self.issues[0].body.split("\n\n", 1)[0]
        elif not self.entries:  # no release notes: the PR's (or commit's) own first paragraph says why
            motivation = _first_paragraph(main.body)
        else:
            motivation = ""
        points = list(dict.fromkeys(entry.text for entry in self.entries))
        points = points or list(dict.fromkeys(without_prefix(unit.title) for unit in code))
        return Feature(title=title, points=points, motivation=motivation, seed=self.seed, source=source)


def feature_groups(infos: list[UnitInfo], issues: dict[int, IssueText]) -> list[FeatureGroup]:
    """A milestone's feature groups: seeds first by kind priority, then the rest, each in history order."""
    groups: dict[int, FeatureGroup] = {}
    for info in infos:
        if info.groups:
            group = groups.setdefault(next(iter(info.groups)), FeatureGroup([]))
            group.infos.append(info)
    for group in groups.values():
        group.entries = list({id(entry): entry for member in group.infos for entry in member.entries}.values())
        numbers = sorted({number for member in group.infos for number in member.unit.issues})
        group.issues = [issues[number] for number in numbers if number in issues]
    ordered = list(groups.values())
    return sorted(ordered, key=lambda ranked: (not ranked.seed, WORK_KINDS.index(ranked.kind) if ranked.seed else 0))


def milestone_type(groups: list[FeatureGroup]) -> Kind:
    """The kind most of the milestone's seed work is (by lines changed), ties broken by priority."""
    weight: Counter = Counter()
    for group in [group for group in groups if group.seed] or groups:
        weight[group.kind] += max(group.lines, 1)
    if not weight:
        return "housekeeping"
    best = max(weight.values())
    return next(kind for kind in WORK_KINDS if weight.get(kind) == best)
