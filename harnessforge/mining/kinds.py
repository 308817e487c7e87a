"""What kind of work a change is: a feature, a performance change, a bug fix, a refactor, or
housekeeping (CI, docs, linters and type-checker pins, dependency bumps, releases), which never
seeds, titles or describes a milestone.

The evidence, in order of trust: the changelog section an entry sits in, the PR's GitHub labels,
a conventional-commit prefix (`feat(x):`), the first words of the entry or title. Every pattern is
a rule (`planning.kinds`, `planning.noise_subjects`), so a repository's conventions are config.
"""

from __future__ import annotations

import re
from functools import cached_property

from ..models import ChangelogEntry
from ..rules import Kind, PlanningRules

# Seed priority, highest first: what titles a milestone and decides its type on a tie.
WORK_KINDS: tuple[Kind, ...] = ("feature", "performance", "bug fix", "refactor")
_PREFIX = re.compile(r"^\s*(\w+)(?:\([^)]*\))?!?:\s*")
_BULLET_NOISE = re.compile(r"^[\s*\-+•]+|^\W+")


class KindReader:
    """Reads kinds with one compiled set of rules."""

    def __init__(self, rules: PlanningRules):
        self.rules = rules

    @cached_property
    def _tables(self) -> dict[str, list[tuple[Kind, re.Pattern]]]:
        k = self.rules.kinds
        return {
            name: [(kind, re.compile(p, re.I)) for kind, patterns in table.items() for p in patterns]
            for name, table in (("sections", k.sections), ("labels", k.labels), ("words", k.words))
        }

    @cached_property
    def _housekeeping(self) -> list[re.Pattern]:
        return [re.compile(p, re.I) for p in [*self.rules.kinds.housekeeping_text, *self.rules.noise_subjects]]

    def _lookup(self, table: str, text: str) -> Kind | None:
        text = text.strip()
        return next((kind for kind, p in self._tables[table] if p.search(text)), None)

    def section(self, category: str | None) -> Kind | None:
        """A changelog section, towncrier type or reno section -> kind (None if unknown)."""
        if not category:
            return None
        return self._lookup("sections", re.sub(r"[^\w\s-]", "", category).strip().lower())

    def label(self, labels: list[str]) -> Kind | None:
        kinds = [k for k in (self._lookup("labels", name) for name in labels) if k]
        return next((k for k in (*WORK_KINDS, "housekeeping") if k in kinds), None)

    def prefix(self, title: str) -> Kind | None:
        m = _PREFIX.match(title)
        return self.rules.kinds.prefixes.get(m[1].lower()) if m else None

    def words(self, text: str) -> Kind | None:
        return self._lookup("words", _PREFIX.sub("", _BULLET_NOISE.sub("", text), count=1))

    def is_housekeeping(self, text: str) -> bool:
        """Text that names housekeeping whatever its section: support windows, pins, docs, CI."""
        text = _BULLET_NOISE.sub("", text).strip()
        return any(p.search(text) for p in self._housekeeping)

    def entry(self, category: str | None, text: str) -> Kind:
        """A changelog entry's kind: housekeeping text first, then its section, then its first words;
        an entry nothing classifies is a feature (it made the release notes)."""
        if self.is_housekeeping(text):
            return "housekeeping"
        return self.section(category) or self.words(text) or "feature"

    def entry_kind(self, entry: ChangelogEntry) -> Kind:
        return self.entry(entry.category, entry.text)

    def title(self, title: str, labels: list[str] = ()) -> Kind | None:
        """A PR or commit title's kind: labels, then the conventional prefix, then housekeeping
        subjects, then the first words (None when nothing says)."""
        return (
            self.label(list(labels))
            or self.prefix(title)
            or ("housekeeping" if self.is_housekeeping(title) else None)
            or self.words(title)
        )


def strongest(kinds: list[Kind]) -> Kind | None:
    """The highest-priority work kind among `kinds` (housekeeping only when nothing else)."""
    return next((k for k in WORK_KINDS if k in kinds), "housekeeping" if "housekeeping" in kinds else None)
