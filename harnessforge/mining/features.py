"""The features a milestone presents: its units grouped by feature, titled from the repository.

A feature is a group of units (PRs, commits) that share a changelog entry or an issue. It is named,
in order, by the issue's title (GitHub), its release-note entry, its PR titles (`describe` takes the
first that reads whole and short).
Housekeeping and backports are never features. Seeds (what the release notes describe, or every
PR when there are none) come first, by kind priority (feature > performance > bug fix > refactor);
work no release note mentions follows, so it is described but never titles the milestone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..github import IssueText
from ..models import ChangelogEntry
from ..refs import strip_refs
from ..rules import Kind
from .describe import Feature, Source
from .footprint import WHOLE_FILE
from .footprint import shared as shared_code
from .kinds import WORK_KINDS, KindReader, strongest
from .markup import syntax_of
from .segment import UnitInfo

# a sentence about the change's own housekeeping, not why it was made: "Also added tests.", "Updated the docs.",
# "And updated README." (go-toml's commit body, a section's whole text)
_HOUSEKEEPING_SENTENCE = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s))(?:and\s+)?(?:(?:i|we|this pr|this commit|this change)\s+)?(?:also\s+)?"
    r"(?:(?:have|has)\s+)?"
    r"(?:add(?:ed|s|ing)?|updat(?:ed|es|ing|e)|fix(?:ed|es|ing)?|improv(?:ed|es|ing|e)|increas(?:ed|es|ing|e)|"
    r"wr(?:ote|ite|ites|itten)|extend(?:ed|s)?|adjust(?:ed|s)?)\b[^.!?\n]*"
    r"\b(?:tests?|unit ?tests?|docs?|documentation|coverage|lint\w*|changelog|typos?|docstrings?|readme)\b"
    r"[^.!?\n]*(?:[.!?]+\s*|$)",
    re.I,
)
# a sentence about how the tests behave, not about the work: "The test fails without this commit because the mypy
# output creates line breaks ..." (typeguard's commit body, the fourteenth set)
_TESTS_SENTENCE = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s))(?:the|these|this|new|added|existing|both)\s+(?:\w+\s+)?tests?\s+"
    r"(?:now\s+)?(?:fails?|failed|failing|pass(?:es|ed)?|breaks?|broke|would fail)\b[^.!?\n]*(?:[.!?]+\s*|$)",
    re.I,
)
_CODE_BLOCK = re.compile(r"^(?:```|~~~|(?: {4}|\t)\S)")


def _without_housekeeping(paragraph: str) -> str:
    return _TESTS_SENTENCE.sub("", _HOUSEKEEPING_SENTENCE.sub("", paragraph)).strip()


def _first_paragraph(body: str) -> str:
    """The first paragraph of a message or issue body that is prose (not a list, a heading, a template's
    comment, a reference, a pointer such as "See:", a trailer or a revert notice), without sentences about
    tests or docs; the example a colon introduces comes with it, fenced."""
    paragraphs = [paragraph.strip("\n") for paragraph in body.strip().split("\n\n")]
    for index, paragraph in enumerate(paragraphs):
        if (
            paragraph.strip()
            and not paragraph.lstrip().startswith(
                ("*", "-", "#", "<!--", ">", "```", "~~~", "Co-authored-by", "Signed-off-by", "This reverts")
            )
            and not re.match(r"\s*see(?: also)?\s*:", paragraph, re.I)
            and not _CODE_BLOCK.match(paragraph)
            and re.search(r"[A-Za-z]{2}", strip_refs(_without_housekeeping(paragraph.strip())))
        ):
            text = _without_housekeeping(paragraph.strip())
            if text.endswith(":") and index + 1 < len(paragraphs) and _CODE_BLOCK.match(paragraphs[index + 1]):
                text += "\n\n" + _fenced(paragraphs[index + 1 :])
            return text
    return ""


def _fenced(paragraphs: list[str]) -> str:
    """The code block that opens `paragraphs` (fenced, or indented four spaces), as a fence."""
    if paragraphs[0].lstrip().startswith(("```", "~~~")):
        fence, lines = paragraphs[0].lstrip()[:3], []
        for line in "\n\n".join(paragraphs).splitlines():
            lines.append(line)
            if len(lines) > 1 and line.strip().startswith(fence):
                break
        return "\n".join(lines)
    lines = []
    for paragraph in paragraphs:
        if not _CODE_BLOCK.match(paragraph):
            break
        lines += [line[4:] if line.startswith("    ") else line.lstrip("\t") for line in paragraph.splitlines()] + [""]
    return "```\n" + "\n".join(lines).strip("\n") + "\n```"


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

    def feature(self, kinds: KindReader, is_test: Callable[[str], bool] = lambda path: False) -> Feature:
        """The feature as the repository describes it: named by its issue, its release-note entry or its PR;
        its entries as points (its PRs' titles when no entry describes it); why, from the issue or the PR;
        tested when its commits changed a test file (`is_test`)."""
        code = [info.unit for info in self.infos if info.role == "feature"] or [info.unit for info in self.infos]
        main = next((unit for unit in code if unit.pr), None) or max(
            code, key=lambda unit: unit.lines
        )  # the PR that opened it
        unit_source = "pull request" if main.pr else "commit"
        titles = [(Source(issue.title), "issue") for issue in self.issues[:1]]
        titles += [(entry_source(entry, kinds, context=False), "changelog") for entry in self.entries[:1]]
        titles += [
            (Source(kinds.without_prefix(unit.title)), unit_source)
            for unit in code
            if kinds.title(unit.title) != "housekeeping"
        ]
        if self.issues and self.issues[0].body.strip():
            motivation = Source(_first_paragraph(self.issues[0].body))
        elif not self.entries:  # no release notes: the PR's (or commit's) own first paragraph says why
            motivation = Source(_first_paragraph(main.body)) if _first_paragraph(main.body) else None
        else:
            motivation = None
        # a refactor's entry beside user-facing ones is said once, as context: behaviour kept is nothing to ask for
        asides = [entry for entry in self.entries if "refactor" in (kinds.entry_kind(entry), kinds.words(entry.text))]
        asides = asides if len(asides) < len(self.entries) else []
        entries = [entry_source(entry, kinds) for entry in self.entries if entry not in asides]
        points = entries or [Source(text) for text in dict.fromkeys(kinds.without_prefix(unit.title) for unit in code)]
        tested = any(is_test(change.path) for info in self.infos for change in info.unit.files)
        return Feature(
            titles=titles,
            points=points,
            motivation=motivation,
            seed=self.seed,
            entries=entries,
            tested=tested,
            refactor=self.kind == "refactor",
            asides=[entry_source(entry, kinds, context=False) for entry in asides],
        )


def entry_source(entry: ChangelogEntry, kinds: KindReader | None = None, context: bool = True) -> Source:
    """An entry as a point of its feature: its text (without a generated changelog's conventional-commit prefix:
    node-jsonwebtoken's "feat: add PS JWA support" reads "Add PS JWA support"), then the release notes' prose and
    examples that explain it (`context`)."""
    text = kinds.without_prefix(entry.text) if kinds else entry.text
    text = text[:1].upper() + text[1:] if text != entry.text else text
    text = f"{text}\n\n{entry.context}" if entry.context and context else text
    return Source(text, syntax_of(entry.source, entry.text))


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


def merged_back_feature(entries: list[ChangelogEntry]) -> Feature:
    """What a maintenance branch merged back into the range brings: fixes already released on that line (the
    range's start lacks them), described so that their tests do not fail unexplained. Never a title."""
    versions = ", ".join(dict.fromkeys(entry.release or "unreleased" for entry in entries))
    heading = Source(f"Fixes released on the maintenance line in {versions}, merged back")
    points = [entry_source(entry) for entry in entries]
    return Feature(titles=[(heading, "changelog")], points=points, entries=points, seed=False)


def cohesion(groups: list[FeatureGroup], is_source) -> tuple[bool, str]:
    """Whether a milestone's features (its seeds: what its release notes describe) belong together, and why: one
    feature, or features whose code shares definitions (directly or through one another: `footprint`); else the
    unrelated parts, named by their entries (or first commits). Undescribed work riding along is no part, nor a
    refactor (behaviour kept: nothing a user sees) beside user-facing features."""
    parts = []
    seeds = [group for group in groups if group.seed] or groups  # what rides along is no part
    user_facing = [group for group in seeds if group.kind != "refactor"]  # nor is a refactor beside what users see
    for group in user_facing or seeds:
        if code := set().union(*(info.code(is_source) for info in group.infos if info.role == "feature")):
            parts.append((group, code))
    if len(parts) <= 1:
        return True, "one feature"
    components: list[tuple[list[FeatureGroup], set[str], set[str]]] = []  # (groups, code, code shared)
    for group, files in parts:
        touching = [component for component in components if shared_code(component[1], files)]
        shared = set().union(*(shared_code(component[1], files) for component in touching)) if touching else set()
        merged = ([group], set(files), shared)
        for component in touching:
            components.remove(component)
            merged = (component[0] + merged[0], component[1] | merged[1], component[2] | merged[2])
        components.append(merged)
    if len(components) == 1:
        shared = sorted(key.removesuffix(f":{WHOLE_FILE}") for key in components[0][2])
        named = ", ".join(shared[:3]) + (f" and {len(shared) - 3} more" if len(shared) > 3 else "")
        return True, f"{len(parts)} features sharing code ({named})"
    names = [_name(component[0][0]) for component in components]
    return False, f"{len(components)} parts sharing no code: " + " | ".join(names)


def _name(group: FeatureGroup) -> str:
    entry = group.entries[0].text if group.entries else None
    unit = next((info.unit for info in group.infos if info.role == "feature"), group.infos[0].unit)
    return (entry or unit.title).splitlines()[0][:60]
