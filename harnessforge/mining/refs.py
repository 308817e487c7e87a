"""References to pull requests and issues in free text, in the spellings real projects use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TYPED = [
    (re.compile(r"(?::pr:|\{pr\})`(\d+)`"), "pr"),
    (re.compile(r"(?::issue:|\{issue\})`(\d+)`"), "issue"),
    (re.compile(r"github\.com/[\w.-]+/[\w.-]+/pull/(\d+)"), "pr"),
    (re.compile(r"github\.com/[\w.-]+/[\w.-]+/issues/(\d+)"), "issue"),
]
_BARE = re.compile(r"(?<![\w&/#])(?:GH-|gh-|#)(\d+)\b")
# "Fixes #3", "closes: GH-7", "Part of #12", "refs #5": a commit or PR pointing at an issue.
_LINKING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|refs?|references|see|part of|related to|addresses)"
    r"\s*:?\s+(?:[\w.-]+/[\w.-]+)?(?:#|GH-|gh-)(\d+)",
    re.I,
)


@dataclass
class Refs:
    prs: set[int] = field(default_factory=set)
    issues: set[int] = field(default_factory=set)
    bare: set[int] = field(default_factory=set)

    def resolve(self, known_prs: set[int]) -> tuple[list[int], list[int]]:
        """Bare `#N` is a PR when history has PR N, else an issue."""
        prs = self.prs | (self.bare & known_prs)
        issues = self.issues | (self.bare - known_prs)
        return sorted(prs), sorted(issues - prs)


def extract_refs(text: str) -> Refs:
    refs = Refs()
    rest = text
    for pattern, kind in _TYPED:
        for m in pattern.finditer(rest):
            (refs.prs if kind == "pr" else refs.issues).add(int(m[1]))
        rest = pattern.sub(" ", rest)
    refs.bare = {int(n) for n in _BARE.findall(rest)}
    return refs


def linked_issues(text: str) -> set[int]:
    """Issues a commit message or PR body says it fixes or belongs to."""
    return {int(n) for n in _LINKING.findall(text)}


def strip_refs(text: str) -> str:
    """The text without PR/issue references and the brackets they leave behind."""
    for pattern, _ in _TYPED:
        text = pattern.sub("", text)
    text = _LINKING.sub("", text)
    text = _BARE.sub("", text)
    text = re.sub(r"\(\s*(?:[,;]\s*)*\)", "", text)  # "(#4, part of #3)" -> "()" -> ""
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip()
