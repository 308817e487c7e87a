"""PM-style milestone descriptions: behaviour and motivation, never file paths or code.

Text comes from the repository (changelog entries, issue titles and bodies, PR titles); it is
sanitised, and `find_leaks` is the check that what remains names no path and shows no code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .refs import strip_refs

_EXT = (
    r"(?:py|pyi|pyx|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|toml|json|"
    r"yaml|yml|cfg|ini|txt|md|rst|lock|sh|sql|html|css|xml|proto)"
)
_FILE_TOKEN = re.compile(rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.{_EXT}\b")
_PATH_TOKEN = re.compile(r"(?<![\w/.:-])\.?[\w.-]+(?:/[\w.-]+)+/?")
_URL = re.compile(r"<?https?://[^\s)>\]]+>?")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(<?https?://[^)\s]*>?\)")  # [text](url): the text stays, its refs go
_FENCE = re.compile(r"```.*?```", re.S)
_CODE_SPAN = re.compile(r"``?([^`]+?)``?")
_ROLE = re.compile(r"(?<![\w`]):([\w:.-]+):`([^`]+)`")  # Sphinx roles: :class:`~pkg.Name` -> Name
_REFERENCE_ROLES = {"pr", "pull", "issue", "gh", "ghsa", "cve", "bpo", "commit"}
_IDENT = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*$")
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(\)")
_CODE_LIKE = re.compile(r"\b[A-Za-z_][\w.]*\([^()\n]*\)|^\s*(?:def|class|import|from \S+ import|>>>)\s", re.M)


_WORD_PAIRS = {"and/or", "input/output", "read/write", "on/off", "yes/no", "client/server", "either/or"}


def _path_token_is_path(token: str) -> bool:
    """In a PM-style text, words joined by slashes read as a path unless they are a common pair."""
    return token.strip("/").lower() not in _WORD_PAIRS


def sanitize(text: str) -> str:
    """Drop references, URLs, code blocks, paths and file names; unwrap identifier code spans."""
    text = _FENCE.sub(" ", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _URL.sub("", text)
    text = _ROLE.sub(
        lambda match: (
            "" if match[1] in _REFERENCE_ROLES else match[2].split("<")[0].strip().lstrip("~!.").rsplit(".", 1)[-1]
        ),
        text,
    )
    text = strip_refs(text)
    text = _CODE_SPAN.sub(lambda match: match[1] if _IDENT.match(match[1].strip()) else "", text)
    text = _CALL.sub(r"\1", text)
    text = _PATH_TOKEN.sub(lambda match: "" if _path_token_is_path(match[0]) else match[0], text)
    text = _FILE_TOKEN.sub("", text)
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip(" ,;:")


def find_leaks(text: str, changed_files: list[str]) -> list[str]:
    """Paths, file names and code that a description must not contain (empty list = clean)."""
    leaks = [path for path in changed_files if path in text]
    for path in changed_files:
        name = PurePosixPath(path).name
        if "." in name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            leaks.append(name)
    leaks += [match[0] for match in _FILE_TOKEN.finditer(text)]
    leaks += [match[0] for match in _PATH_TOKEN.finditer(text) if _path_token_is_path(match[0])]
    leaks += ["```"] if "```" in text else []
    leaks += [match[0] for match in _CODE_LIKE.finditer(text)]
    return sorted(set(leaks))


@dataclass
class Feature:
    """One feature of a milestone as the description presents it."""

    title: str
    points: list[str] = field(default_factory=list)
    motivation: str = ""
    seed: bool = True  # a release-note feature (or, without release notes, a PR): it may title the milestone
    source: str = "commit"  # where the title came from: changelog, issue, pull request, commit


def _sentence(text: str) -> str:
    text = sanitize(text)
    return text[:1].upper() + text[1:] if text else ""


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`'\"])[.;]\s+(?=[A-Z`*(])")


def _short_title(text: str, limit: int = 80) -> str:
    """The first sentence of `text`, sanitised, cut at a word boundary under `limit` characters."""
    text = _sentence(_SENTENCE_END.split(text, 1)[0]).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def readable_title(text: str, limit: int = 70) -> str | None:
    """`text`'s short title if sanitising (no paths, no code) kept it readable and under `limit`
    characters: most of its words, no dangling start. None otherwise, so another source can title."""
    first = _SENTENCE_END.split(text, 1)[0]
    title = _short_title(first, limit=10_000)
    raw_words = re.sub(r"[`*]|:\w+:|\{\w+\}", " ", strip_refs(first)).split()
    if not title or len(title) > limit or len(title.split()) < 0.75 * len(raw_words):
        return None
    if re.match(r"^(and|or|but|with|to|of|for|in|on|as|the)\b", title, re.I):
        return None
    return title


def describe(features: list[Feature], changed_files: list[str], release: str | None) -> tuple[str, str, str]:
    """(title, description, title source) for a milestone; the title names its seed features (in the
    order given: highest priority first); lines that would leak a path or code are dropped."""
    titled = [
        (short, feature.source)
        for feature in (feature for feature in features if feature.seed)
        if (short := _short_title(feature.title))
    ]
    titled = [
        (short, named_by) for short, named_by in titled if not find_leaks(short, changed_files)
    ]  # the next feature titles instead
    titles = [short for short, _ in titled]
    title = "; ".join(titles[:2]) + (f" (+{len(titles) - 2} more)" if len(titles) > 2 else "")
    source = titled[0][1] if titled else "none"
    lines: list[str] = []
    for feature in features:
        heading = _short_title(feature.title)
        if heading and len(features) > 1:
            lines += [f"### {heading}", ""]
        motivation = _sentence(feature.motivation)
        if motivation:
            lines += [motivation, ""]
        seen = set()
        for point in feature.points:
            sentence = _sentence(point)
            if sentence and sentence.lower() not in seen:
                seen.add(sentence.lower())
                lines.append(f"- {sentence}")
        lines.append("")
    shipped = f" They shipped in release {release}." if release else ""
    lines.append(f"Users should get the behaviour above.{shipped} Everything that worked before must keep working.")
    clean = [line for line in lines if not find_leaks(line, changed_files)]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(clean)).strip()
    if find_leaks(title, changed_files):
        title, source = "Milestone" + (f" towards {release}" if release else ""), "none"
    return title or "Untitled change", body, source
