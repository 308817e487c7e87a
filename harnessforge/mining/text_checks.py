"""Checks of the text a Dev is given, read as a reader would: holes, leftovers, lost words.

`text_problems` finds what stripping used to leave ("with instead of.", "from to.", "()", "{class}")
outside code; `words_lost` counts the words of a source text (a changelog entry, an issue body) that
its rendering no longer has, references and withheld paths aside. The plan's self-check fails on
any problem, and the plan reports both per milestone.
"""

from __future__ import annotations

import re
from collections import Counter

from .refs import strip_refs

_FENCED = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(?:[:{][\w:.-]+[:}])?(`+)(?!`).+?(?<!`)\1(?!`)")  # a role's target is code too
_PREPOSITIONS = r"with|from|of|by|via|than|instead of|as|into|using|between|vs|versus|the|an?"
# (pattern over text whose code spans read `CODE`, what a reader sees)
_HOLES = [
    (  # "instead of." ends a sentence; "a :port" is a word (punctuation then a space or the end is the end)
        re.compile(rf"\b(?:{_PREPOSITIONS})\s*(?=[.;:!?)](?:\s|$)|$)", re.I | re.M),
        "a sentence ends where a word was removed",
    ),
    (
        re.compile(
            r"\b(?!as of\b)(?:with|from|to|in|of|by|for|as|than)\s+(?:instead of|to|from|of|with|by|as|than)\b", re.I
        ),
        "two prepositions meet where a word was removed",
    ),
    (re.compile(r",\s*(?:or|and)\s*(?:,\s*)?(?:instead\b|[.;)]|$)", re.M), "a list lost its items"),
    (
        re.compile(r"[-\u2013\u2014,;]\s*(?:fixes|closes|resolves|refs|see)\s*(?=[.;:!?)]|$)", re.I | re.M),
        "a link lost its target",
    ),
    (
        re.compile(r"\b(?:if|when|unless|whether|because)\s+(?:is|are|was|were|has|have)\b", re.I),
        "a subject is missing",
    ),
    (
        re.compile(
            r"(?:^|[.!?]\s+|^\s*[-*]\s+)(?:add|use|remove|deprecate|rename)\s+(?:to|for|with|of|as|and)\b", re.I | re.M
        ),
        "an object is missing",
    ),
    (re.compile(r"(?<![\w.\]])\(\s*[,;]?\s*\)|\[\s*\]"), "empty brackets"),  # `GetHost()` is a call: not a hole
    (re.compile(r"\{\w[\w:.-]*\}|(?<![\w`]):[\w-]+:(?=`|\s)"), "markup left in the text"),
    (re.compile(r"(?<![\w`])_{1,2}(?![\w`])"), "a lone underscore"),
    (re.compile(r"\s[.,;:](?=\s|$)|[,;]{2,}|\.\s*,"), "punctuation without its words"),
    (re.compile(r"…"), "text cut mid-sentence"),
    (re.compile(r"`"), "unbalanced backticks"),
]


def prose(text: str) -> str:
    """`text` as a reader scans its sentences: fenced blocks gone, each code span (a role's too) one word, `CODE`."""
    return _CODE_SPAN.sub("CODE", _FENCED.sub(" CODE", text))


def _holes(text: str) -> list[tuple[str, str, str]]:
    """(what, key, context) of each hole: the key is the match with the word before it."""
    found = []
    scanned = prose(text)
    for pattern, what in _HOLES:
        for match in pattern.finditer(scanned):
            before = scanned[: match.start()].split()[-1:]
            key = " ".join([*before, match[0].strip()]).lower()
            start = max(match.start() - 30, 0)
            found.append((what, key, " ".join(scanned[start : match.end() + 30].split())))
    return found


def text_problems(text: str, source: str | None = None, where: str = "") -> list[str]:
    """Holes and leftovers a reader would stumble on, one line each (empty: the text reads whole).
    With `source` (what `text` was rendered from), only the holes the source did not have: an author
    may end a sentence with "registered with." and that is theirs."""
    theirs = {(what, key) for what, key, _ in _holes(source)} if source else set()
    problems = []
    for what, key, context in _holes(text):
        if (what, key) not in theirs:
            problems.append(f"{where + ': ' if where else ''}{what}: “…{context}…”")
    return list(dict.fromkeys(problems))


_LINK_TARGET = re.compile(r"\]\([^)\s]*\)|\s*<[^<>\s]+>(?=`)")
_REFERENCE_ROLE_NAMES = r"(?!(?:pr|pull|pull_request|issue|gh|github|bpo|cve|ghsa|user|commit|bug)\b)"
_ROLE_NAME = re.compile(
    rf"(?<![\w`]):(?:[\w-]+:)*{_REFERENCE_ROLE_NAMES}[\w-]+:(?=`)|\{{(?:[\w-]+:)*{_REFERENCE_ROLE_NAMES}[\w-]+\}}(?=`)"
)
_DIRECTIVE_LINE = re.compile(r"^\s*(?:\.\. [\w-]+::.*|:::+.*)$", re.M)
_SHORTENED = re.compile(r"`~([\w.]+)\.(\w+(?:\(\))?)`")  # Sphinx shows `~a.b.C` as C


def _words(text: str) -> Counter:
    return Counter(word.lower() for word in re.findall(r"[A-Za-z0-9]+", text))


def source_words(raw: str) -> Counter:
    """The words a source text says: references, link targets and role names are not words."""
    text = _ROLE_NAME.sub("", _DIRECTIVE_LINE.sub("", _SHORTENED.sub(r"`\2`", raw)))
    return _words(_LINK_TARGET.sub("]", strip_refs(text)))


def words_lost(raw: str, rendered: str, withheld: list[str] = ()) -> list[str]:
    """The words of `raw` that `rendered` lacks, but for those of withheld paths (sorted, repeats kept)."""
    missing = source_words(raw) - _words(rendered) - _words(" ".join(withheld))
    return sorted(missing.elements())
