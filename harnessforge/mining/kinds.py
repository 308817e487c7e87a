"""What kind of work a change is: a feature, a performance change, a bug fix, a refactor, or
housekeeping (CI, docs, linters and type-checker pins, dependency bumps, releases), which never
seeds, titles or describes a milestone.

The evidence, in order of trust: the changelog section an entry sits in, the PR's GitHub labels,
a conventional-commit prefix (`feat(x):`), the first words of the entry or title. Every pattern is
a rule (`planning.kinds`, `planning.noise_subjects`), so a repository's conventions are config.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from ..models import ChangelogEntry
from ..refs import strip_refs
from ..rules import Kind, PlanningRules

# Seed priority, highest first: what titles a milestone and decides its type on a tie.
WORK_KINDS: tuple[Kind, ...] = ("feature", "performance", "bug fix", "refactor")
_PREFIX = re.compile(r"^\s*(?:(\w+)(?:\([^)]*\))?!?:|\[(\w+)\])\s*")  # `feat(cli):`, `[docs]`
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
AMBIGUOUS, NEUTRAL = "feature?", "neutral"


# a gitmoji, as a character or a `:shortcode:` (`🥅 improve error handling`, `:bug: fix x`), with its variation selector
_EMOJI = r"[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]"
_GITMOJI = re.compile(rf"^\s*(?:(?::[a-z0-9_+-]+:|{_EMOJI})[\ufe0f\u200d]*\s*)+")


def without_prefix(title: str, types: Collection[str]) -> str:
    """A title without its conventional-commit prefix and gitmoji: `feat(cli): add --json` -> `add --json`,
    `[docs] x` -> `x`, `🔒️ fix orphaned files` -> `fix orphaned files`. A prefix that is no commit type in `types` is
    the component the change is about and stays: without it, "DurationSlice: implementation and tests" names
    nothing."""
    title = _GITMOJI.sub("", title, count=1) or title
    match = _PREFIX.match(title)
    if match and (match[2] or match[1].lower() in types):
        return _GITMOJI.sub("", title[match.end() :], count=1) or title[match.end() :]
    return title


def plain(text: str) -> str:
    """The words of an entry or title: no references, links, roles or leading markup (`` `x` ``, bold)."""
    text = strip_refs(_MD_LINK.sub(r"\1", text))
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    return re.sub(r"^[\s*_`\"'>•+-]+", "", text)


class KindReader:
    """Reads kinds with one compiled set of rules."""

    def __init__(self, rules: PlanningRules):
        self.rules = rules
        kind_rules = rules.kinds

        def compiled(table: dict, whole_words: bool = False) -> list[tuple[str, re.Pattern]]:
            wrap = (lambda pattern: rf"(?<![a-z])(?:{pattern})(?![a-z])") if whole_words else (lambda pattern: pattern)
            return [(kind, re.compile(wrap(pattern), re.I)) for kind, patterns in table.items() for pattern in patterns]

        self._sections = compiled(
            {**kind_rules.sections, AMBIGUOUS: kind_rules.ambiguous_sections, NEUTRAL: kind_rules.neutral_sections},
            whole_words=True,
        )
        self._labels, self._words, self._says = (
            compiled(kind_rules.labels),
            compiled(kind_rules.words),
            compiled(kind_rules.says),
        )
        self._housekeeping = [re.compile(pattern, re.I) for pattern in kind_rules.housekeeping_text]
        self._chores = [re.compile(pattern, re.I) for pattern in rules.noise_subjects]

    def section(self, category: str | None) -> str | None:
        """A changelog section, towncrier type or reno section -> a kind, `feature?` (a feature unless
        the text says otherwise) or None (nothing, or two kinds of work: the text decides)."""
        if not category:
            return None
        kinds = {kind for kind, pattern in self._sections if pattern.search(category)}
        if "housekeeping" in kinds:  # "Improved Documentation", "Trivial/Internal Changes"
            return "housekeeping"
        kinds.discard(NEUTRAL)
        return kinds.pop() if len(kinds) == 1 else None

    def label(self, labels: list[str]) -> Kind | None:
        kinds = {kind for kind, pattern in self._labels for name in labels if pattern.search(name.strip())}
        return next((found for found in (*WORK_KINDS, "housekeeping") if found in kinds), None)

    def without_prefix(self, title: str) -> str:
        return without_prefix(title, self.rules.kinds.prefixes)

    def prefix(self, title: str) -> Kind | None:
        match = _PREFIX.match(title)
        return self.rules.kinds.prefixes.get((match[1] or match[2]).lower()) if match else None

    def words(self, text: str) -> Kind | None:
        """The kind the opening words say, else the words anywhere (None when nothing says)."""
        words = plain(_PREFIX.sub("", text, count=1)).strip()
        for table in (self._words, self._says):
            kind = next((kind for kind, pattern in table if pattern.search(words)), None)
            if kind:
                return kind
        return None

    def is_housekeeping(self, text: str, subject: bool = False) -> bool:
        """Text that names housekeeping: support windows, pins, docs; for a commit subject or PR title
        also the chores of `planning.noise_subjects` (CI, bumps, linters, releases)."""
        words = plain(text).strip()
        patterns = self._housekeeping + (self._chores if subject else [])
        return any(pattern.search(words) for pattern in patterns)

    def entry(self, category: str | None, text: str) -> Kind:
        """A changelog entry's kind: housekeeping text first, then its section, then its words; an entry
        nothing classifies is a feature (it made the release notes)."""
        if self.is_housekeeping(text, subject=True):
            return "housekeeping"
        section = self.section(category)
        said = self.words(text)
        if section == AMBIGUOUS:
            return said if said in ("bug fix", "performance", "refactor") else "feature"
        return section or said or "feature"

    def entry_kind(self, entry: ChangelogEntry) -> Kind:
        return self.entry(entry.category, entry.text)

    def title(self, title: str, labels: list[str] = ()) -> Kind | None:
        """A PR or commit title's kind: labels, then the conventional prefix, then housekeeping
        subjects, then its words (None when nothing says)."""
        return (
            self.label(list(labels))
            or self.prefix(title)
            or ("housekeeping" if self.is_housekeeping(title, subject=True) else None)
            or self.words(title)
        )


def strongest(kinds: list[Kind]) -> Kind | None:
    """The highest-priority work kind among `kinds` (housekeeping only when nothing else)."""
    return next((kind for kind in WORK_KINDS if kind in kinds), "housekeeping" if "housekeeping" in kinds else None)
