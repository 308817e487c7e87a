"""Where each release-note entry goes: to the code that implements it, not to the commit that wrote
it down (often a release commit two milestones later).

In order of trust: the PRs and issues the entry cites (`reference`), the commit that added its
towncrier fragment or reno note (`fragment`), the work that added its own changelog line
(`entry_commit`); then, for an entry none of those tie, the unit of work of its release whose diff
holds the identifiers it names, rare ones weighing most (`identifiers`), or whose title says what
it says (`topic`); last, the work nearest before the commit that wrote the entry (`added_by`), among
the work whose diff names what the entry names when any does. What
none of these place is `unplaced`, and the plan says so. The thresholds are `planning.placement`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..models import ChangelogEntry
from ..refs import Refs
from ..rules import PlacementRules
from .markup import render, syntax_of
from .pulls import Unit
from .unit_diffs import UnitDiff

_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_NAMED = re.compile(r"\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[a-z]\w*_\w+\b|(?<![\w-])--[a-z][\w-]+")
_TOKEN = re.compile(r"--?[A-Za-z][\w-]*|[A-Za-z_]\w*")
_STOP = set(
    "a an and are as at be by can for from has have in into is it its no not now of on or that the this to "
    "was were when which while will with you your also more than only new use uses used using add adds added "
    "fix fixes fixed support supports allow allows make makes instead other".split()
)


def entry_identifiers(text: str) -> set[str]:
    """The names an entry names: its code spans' identifiers, CamelCase and snake_case words, `--flags`."""
    names = {token for _, span in _CODE.findall(text) for token in _TOKEN.findall(span)}
    names |= set(_NAMED.findall(_CODE.sub(" ", text)))
    return {name for name in names if len(name.strip("-_")) >= 3 and name.lower() not in _STOP}


def _words(text: str) -> set[str]:
    words = {word.lower() for word in re.findall(r"[A-Za-z][A-Za-z0-9_]+", text)}
    return {re.sub(r"(ing|ed|es|s)$", "", word) for word in words if word not in _STOP and len(word) > 2}


@dataclass
class Placement:
    units: set[int]  # indexes into the range's units
    placed_by: str


class EntryPlacer:
    """Places the range's entries on its units (one placer per plan)."""

    def __init__(
        self,
        units: list[Unit],
        diffs: dict[str, UnitDiff],
        is_work: Callable[[Unit], bool],
        code_paths: Callable[[str], bool],
        release_of: Callable[[str], str | None],
        rules: PlacementRules,
    ):
        """`is_work`: a unit that may carry an entry (not housekeeping, not a backport); `code_paths`: the
        files whose changed lines count (source and tests); `release_of`: a unit's release."""
        self.units, self.rules = units, rules
        self.work = [position for position, unit in enumerate(units) if is_work(unit)]
        self.tokens: dict[int, set[str]] = {}
        for position in self.work:
            diff = diffs[units[position].sha]
            self.tokens[position] = diff.tokens([path for path in {*diff.added, *diff.removed} if code_paths(path)])
        self.release = {position: release_of(unit.sha) for position, unit in enumerate(units)}
        self.by_pr = {unit.pr: position for position, unit in enumerate(units) if unit.pr}
        self.by_sha = {unit.sha: position for position, unit in enumerate(units)}

    def by_reference(self, entry: ChangelogEntry) -> tuple[ChangelogEntry, Placement | None]:
        """The entry's cited PRs and issues resolved against history, and the units they name."""
        prs, issues = Refs(set(entry.prs), set(entry.issues), set(entry.refs)).resolve(set(self.by_pr))
        entry = entry.model_copy(update={"prs": prs, "issues": issues, "refs": []})
        linked = {self.by_pr[pr] for pr in prs if pr in self.by_pr}
        linked |= {position for position, unit in enumerate(self.units) if unit.issues & set(issues)}
        for position in linked:  # the PRs an entry ties to an issue belong to that issue's feature
            self.units[position].issues |= set(issues)
        tied = {self.by_sha[sha] for sha in entry.commits if sha in self.by_sha}  # its fragment's or line's commit
        if linked:
            # the commit that wrote its line joins what it cites only within its release: an entry of a later
            # release whose line an earlier change wrote would bind two releases' work into one feature
            tied = {position for position in tied if entry.release in (None, self.release[position])}
            return entry, Placement(linked | tied, "reference")
        if tied:
            by = "fragment" if "fragment" in entry.source or "reno" in entry.source else "entry_commit"
            return entry, Placement(tied, by)
        return entry, None

    def _window(self, entry: ChangelogEntry) -> list[int]:
        """The work of the entry's release (all the work when none of it is that release's)."""
        mine = [position for position in self.work if self.release[position] == entry.release]
        return mine or self.work

    def by_content(self, entry: ChangelogEntry) -> Placement | None:
        """The work whose diff names what the entry names, else whose title says it, else the work nearest
        before the commit that wrote the entry."""
        text = render(entry.text, syntax_of(entry.source, entry.text)).text
        window = self._window(entry)
        names = entry_identifiers(text)
        if names and window:
            frequency = Counter(name for position in window for name in names & self.tokens[position])
            scores = {
                position: sum(math.log(1 + len(window) / frequency[name]) for name in names & self.tokens[position])
                for position in window
            }
            ranked = sorted(scores.items(), key=lambda item: -item[1])
            best = ranked[0][1]
            second = ranked[1][1] if len(ranked) > 1 else 0.0
            if best >= self.rules.min_identifier_score and best >= self.rules.margin * second:
                return Placement({ranked[0][0]}, "identifiers")
        topic = self._topic(text, window)
        if topic and topic[1] >= self.rules.min_topic_overlap:
            return Placement({topic[0]}, "topic")
        if entry.written_by in self.by_sha:
            writer = self.by_sha[entry.written_by]
            before = [position for position in self.work if position <= writer]
            # among the work before the writer, the nearest whose diff names something the entry names: a fix
            # merged just before the release commit is not what a deprecation entry of the release describes
            naming = [position for position in before if names & self.tokens[position]]
            if naming:
                return Placement({naming[-1]}, "added_by")
            if before:
                return Placement({before[-1]}, "nearest")
        return None

    def _topic(self, text: str, window: list[int]) -> tuple[int, float] | None:
        """The unit of `window` whose title shares the most words with the entry's first line, and how much."""
        words = _words(text.split("\n", 1)[0])
        if not words or not window:
            return None
        overlap = {
            position: len(words & _words(self.units[position].title)) / len(words | _words(self.units[position].title))
            for position in window
        }
        return max(overlap.items(), key=lambda item: item[1])

    def _said_elsewhere(self, entry: ChangelogEntry, placement: Placement) -> Placement:
        """An entry placed on the work that added its line, when another unit's title says it better: one commit
        that writes several entries at once (with its own feature) wrote down the others' work too."""
        text = render(entry.text, syntax_of(entry.source, entry.text)).text
        topic = self._topic(text, self._window(entry))
        if topic is None or topic[0] in placement.units or topic[1] < self.rules.min_topic_overlap:
            return placement
        own = self._topic(text, sorted(placement.units))
        return Placement({topic[0]}, "topic") if own is None or topic[1] > own[1] else placement

    def place(self, entries: list[ChangelogEntry]) -> tuple[list[ChangelogEntry], list[set[int]]]:
        """Every entry with its `placed_by`, and the units each is placed on (empty: unplaced). Placed by
        proximity alone, an entry is `added_by`, unless its writer wrote down more such entries than
        `nearest_per_writer`: then they are unplaced."""
        resolved: list[tuple[ChangelogEntry, Placement | None]] = []
        for entry in entries:
            entry, placement = self.by_reference(entry)
            if placement is not None and placement.placed_by == "entry_commit":
                placement = self._said_elsewhere(entry, placement)
            resolved.append((entry, placement or self.by_content(entry)))
        nearest = Counter(
            entry.written_by for entry, placement in resolved if placement and placement.placed_by == "nearest"
        )
        placed, links = [], []
        for entry, placement in resolved:
            if placement is not None and placement.placed_by == "nearest":
                crowded = nearest[entry.written_by] > self.rules.nearest_per_writer
                placement = None if crowded else Placement(placement.units, "added_by")
            placed.append(entry.model_copy(update={"placed_by": placement.placed_by if placement else "unplaced"}))
            links.append(placement.units if placement else set())
        return placed, links
