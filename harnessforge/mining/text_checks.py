"""The words a rendering of a source text (a changelog entry, an issue body) lost, references and withheld paths
aside: the plan reports them per milestone. Holes and leftovers a reader would see are `text_lint`'s."""

from __future__ import annotations

import re
from collections import Counter

from ..refs import strip_refs

_LINK_TARGET = re.compile(r"\]\([^)\s]*\)|\s*<[^<>\s]+>(?=`)")
_REFERENCE_ROLE_NAMES = r"(?!(?:pr|pull|pull_request|issue|gh|github|bpo|cve|ghsa|user|commit|bug)\b)"
_ROLE_NAME = re.compile(
    rf"(?<![\w`]):(?:[\w-]+:)*{_REFERENCE_ROLE_NAMES}[\w-]+:(?=`)|\{{(?:[\w-]+:)*{_REFERENCE_ROLE_NAMES}[\w-]+\}}(?=`)"
)
_DIRECTIVE_LINE = re.compile(r"^\s*(?:\.\. [\w-]+::.*|:::+.*)$", re.M)
_SHORTENED = re.compile(r"`~([\w.]+)\.(\w+(?:\(\))?)`")  # Sphinx shows `~a.b.C` as C
_BARE_LABEL = re.compile(r":ref:`[\w.:-]*[_:-][\w.:-]*`")  # `markup` reads an anchor as "the documentation"


def _words(text: str) -> Counter:
    return Counter(word.lower() for word in re.findall(r"[A-Za-z0-9]+", text))


def source_words(raw: str) -> Counter:
    """The words a source text says: references, link targets and role names are not words."""
    text = _ROLE_NAME.sub(
        "", _DIRECTIVE_LINE.sub("", _SHORTENED.sub(r"`\2`", _BARE_LABEL.sub("the documentation", raw)))
    )
    return _words(_LINK_TARGET.sub("]", strip_refs(text)))


def words_lost(raw: str, rendered: str, withheld: list[str] = ()) -> list[str]:
    """The words of `raw` that `rendered` lacks, but for those of withheld paths (sorted, repeats kept)."""
    missing = source_words(raw) - _words(rendered) - _words(" ".join(withheld))
    return sorted(missing.elements())
