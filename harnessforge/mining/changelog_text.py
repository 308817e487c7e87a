"""Changelog text: finding changelog files in a tree, and parsing one document into entries.

Text changelogs (Markdown: Keep a Changelog or free form; reStructuredText with Sphinx roles; plain
text), per-release files (`docs/releases/4.2.txt`) and GitHub release bodies (Markdown) all go
through one parser: a stream of headings, bullets and paragraphs, where a heading naming a version
opens a release.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..models import ChangelogEntry
from ..refs import extract_refs, strip_refs
from .releases import parse_version

CHANGELOG_NAME = re.compile(
    r"^(?:change[-_]?log|changes|history|news|releases?|release[-_]notes|versions?|(?:version|release)[-_]?history|whats[-_]?new)"
    r"(?:\.(?:md|markdown|rst|txt))?$",
    re.I,
)
CHANGELOG_DIRS = ("", "docs", "doc", "docs/source", "doc/source")
RELEASE_DIRS = (
    "docs/releases/",
    "docs/release-notes/",
    "docs/release_notes/",
    "docs/whatsnew/",
    "docs/changelog/",
    "release-notes/",
)
# `123.feature.md`, `123.feature.1.md`, `+orphan.misc.md`, `123.bugfix` (towncrier's names)
VERSION_TOKEN = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|rc|alpha|beta|dev|post)\.?\d*)?)(?![\w.])", re.I)
UNRELEASED = re.compile(
    r"\b(?:unreleased|in development|not (?:yet )?released|upcoming|under development|development version)\b", re.I
)
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*+#`':.\"_])\1{2,}\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)])\s+(.*)$")
_BOLD_LABEL = re.compile(r"^\s*(?:\*\*|__)([^*_]{1,80}?)(?:\*\*|__)\s*:?\s*$")
# a release named in bold on its own line, its date after it: typeguard's "**4.5.2** (2026-05-14)", "**UNRELEASED**"
_BOLD_RELEASE = re.compile(
    r"^(?:\*\*|__)(v?\d+(?:\.\d+)+[\w.+-]*|unreleased)(?:\*\*|__)\s*(?:[(\[]?\d{4}-\d{2}-\d{2}[)\]]?)?\s*:?$", re.I
)
BOLD_RELEASE_LEVEL = 99  # below a bold label's 100 (a category), above every real heading's
_DIRECTIVE = re.compile(r"^(\s*)\.\.(?:\s|$)")  # RST comment or directive: `.. note::`, `.. include::`
_CODE_DIRECTIVE = re.compile(r"^\s*\.\. (?:code|code-block|sourcecode)::")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`__?")
_NOT_ENTRY = re.compile(
    r"^(?:\(?released\b|release date\b|date:|\(?\d{4}-\d{2}-\d{2}\)?\.?$|\*\*full changelog\*\*|full changelog\b)",
    re.I,
)
# a link alone ("- https://github.com/jazzband/tablib/releases" under "3.9.0 and newer"): it points, it says no change
_LINK_ALONE = re.compile(r"^\s*(?:<?https?://\S+?>?|\[[^\]\n]*\]\(https?://[^)\s]*\))[.,;]?\s*$")
# towncrier's rendered prefix: "`#12 <https://...>`_, `#13 <...>`_: " or "[#12](https://...): " (refs are kept apart)
_LEADING_LINKS = re.compile(r"^(?:(?:`#\d+ <[^>]*>`__?|\[#\d+\]\([^)]*\))[,\s]*)+:\s*")
# arrow's "[ADDED] ...", "[FIX] ...", "[INTERNAL] ...": the entry's category, written at its start
_KIND_TAG = re.compile(r"^\[([A-Z][A-Z -]{1,23})\]\s*")
# a shouted lead-in that says nothing of the change: "IMPORTANT: ...", "**Note:** ..."
_SHOUTED_PREFIX = re.compile(
    r"^(?:\*\*)?(?:important|note|notice|warning|attention|heads up)(?:\*\*)?\s*[:!]\s*(?:\*\*)?\s*", re.I
)
_SKIPPED_SECTIONS = re.compile(r"^(?:new contributors|contributors|thanks|acknowledge?ments)\b", re.I)


@dataclass
class ChangelogFile:
    path: str
    text: str
    release: str | None = None  # for per-release files and release bodies: the version they describe
    source: str | None = None  # what entries name as their source (default: "path (format)")


# ---- finding files -----------------------------------------------------------------------------
def find_changelog_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(single changelog files, per-release note files) among a tree's paths."""
    singles, per_release = [], []
    for path in paths:
        pure = PurePosixPath(path)
        parent = str(pure.parent) if str(pure.parent) != "." else ""
        if parent in CHANGELOG_DIRS and CHANGELOG_NAME.match(pure.name):
            singles.append(path)
        elif (
            path.startswith(RELEASE_DIRS) and pure.suffix in (".md", ".rst", ".txt") and VERSION_TOKEN.search(pure.stem)
        ):
            per_release.append(path)
    singles.sort(key=lambda path: (path.count("/"), not path.lower().startswith(("changelog", "changes")), path))
    return singles, per_release


def version_in(text: str) -> str | None:
    for match in VERSION_TOKEN.finditer(text):
        version = parse_version(match[1])
        if version is not None:
            return str(version)
    return None


def _unlink(text: str) -> str:
    """Link texts without their targets: `[1.2.0](https://.../compare/1.1.0...1.2.0)` -> `[1.2.0]`."""
    return _RST_LINK.sub(r"\1", _MD_LINK.sub(r"[\1]", text))


# ---- the text parser ---------------------------------------------------------------------------
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_heading_text(line: str) -> bool:
    return bool(line.strip()) and not _UNDERLINE.match(line) and not _BULLET.match(line) and _indent(line) == 0


def _blocks(lines: list[str]) -> Iterator[tuple]:
    """("heading", level, text), ("bullet", [lines]), ("paragraph", [lines]) and ("code", [lines]) blocks.

    A bullet keeps its continuation lines, nested bullets and code blocks; other code fences are blocks of
    their own; RST directives and comments, and HTML comments are skipped. RST/setext heading levels follow
    first use."""
    styles: dict[str, int] = {}
    block: list[str] = []
    kind = None  # "bullet" | "paragraph" | None
    blank = False
    fence = None
    directive_indent: int | None = None  # inside an entry's code directive
    code_indent: int | None = None  # inside a code directive between entries (a block of its own)
    skip_deeper_than: int | None = None  # inside an RST directive: skip what is indented under it
    in_comment = False
    position = 0

    def flush():
        nonlocal block, kind
        out = (kind, block) if kind and block else None
        block, kind = [], None
        return out

    while position < len(lines):
        line = lines[position].rstrip()
        following = lines[position + 1].rstrip() if position + 1 < len(lines) else ""
        position += 1
        inside_bullet = kind == "bullet" and (not line.strip() or _indent(line) > _indent(block[0]))
        if fence:  # a code block inside an entry is part of it (an example of its interface); else its own block
            block.append(line)
            if line.strip().startswith(fence):
                fence = None
                if kind == "code" and (out := flush()):
                    yield out
            continue
        if match := _FENCE.match(line):
            fence = match[1]
            if inside_bullet:
                block += ["", line] if blank else [line]
                blank = False
            else:  # an example between entries or in prose: a code block of its own (context, never an entry)
                if out := flush():
                    yield out
                kind, block = "code", [line]
            continue
        if code_indent is not None:
            if not line.strip() or _indent(line) > code_indent:
                block.append(line)
                continue
            code_indent = None
            while block and not block[-1].strip():
                block.pop()
            if out := flush():
                yield out
        if in_comment:
            in_comment = "-->" not in line
            continue
        if line.strip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        if skip_deeper_than is not None:
            if not line.strip() or _indent(line) > skip_deeper_than:
                continue
            skip_deeper_than = None
        if inside_bullet and _CODE_DIRECTIVE.match(line):  # an entry's example: kept with it
            block += ["", line] if blank else [line]
            directive_indent, blank = _indent(line), False
            continue
        if directive_indent is not None and inside_bullet and (not line.strip() or _indent(line) > directive_indent):
            block.append(line)
            continue
        directive_indent = None
        if _CODE_DIRECTIVE.match(line) and _indent(line) == 0:  # an example between entries: context, like a fence
            if out := flush():
                yield out
            kind, block, code_indent = "code", [line], 0
            continue
        if match := _DIRECTIVE.match(line):
            if kind != "bullet" or _indent(line) <= _indent(block[0]):
                if out := flush():
                    yield out
            skip_deeper_than = len(match[1])
            continue
        if match := _ATX.match(line):
            if out := flush():
                yield out
            yield ("heading", len(match[1]), match[2])
            continue
        if _is_heading_text(line) and _UNDERLINE.match(following) and len(following.strip()) >= len(line.strip()) * 0.6:
            if out := flush():
                yield out
            over = position >= 2 and _UNDERLINE.match(lines[position - 2].rstrip()) is not None
            level = styles.setdefault(("over" if over else "") + following.strip()[0], 10 + len(styles))
            yield ("heading", level, line.strip())
            position += 1
            continue
        if _UNDERLINE.match(line):  # an RST overline or transition, a Markdown rule
            if out := flush():
                yield out
            continue
        if not line.strip():
            blank = True
            if kind == "paragraph":
                if out := flush():
                    yield out
            continue
        if match := _BOLD_RELEASE.match(line):
            if out := flush():
                yield out
            yield ("heading", BOLD_RELEASE_LEVEL, line.strip().replace("*", "").replace("__", ""))
            blank = False
            continue
        if match := _BOLD_LABEL.match(line):
            if out := flush():
                yield out
            yield ("heading", 100, match[1])
            blank = False
            continue
        bullet = _BULLET.match(line)
        if bullet and (kind != "bullet" or _indent(line) <= _indent(block[0])):
            if out := flush():
                yield out
            kind, block = "bullet", [line]
        elif kind == "bullet" and not (blank and _indent(line) <= _indent(block[0])):
            block += ["", line] if blank else [line]  # continuation, nested bullet, or a further paragraph
        elif kind == "paragraph":
            block.append(line)
        else:
            if out := flush():
                yield out
            kind, block = "paragraph", [line]
        blank = False
    if out := flush():
        yield out


def _join(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines if line.strip())


# an entry that introduces its details ("Added benchmarking tools:"), not a group's name
_ENTRY_VERB = re.compile(
    r"^(?:\w+ed|add|adds|fix|fixes|update|updates|implement|support|allow|use|make|remove|deprecate|drop)\b", re.I
)


def _is_label(text: str) -> bool:
    """A bullet or paragraph that names a group of entries ("New functions", "Changes to x:")."""
    text = text.strip()
    if not text or len(text) > 80 or extract_refs(text).any:
        return False
    words = len(text.split())
    if words > 2 and _ENTRY_VERB.match(text) and not text.isupper():
        return False
    return (text.endswith(":") and words <= 8) or (words <= 5 and not text.endswith((".", "!", "?", ")", "`")))


def _raw_item(lines: list[str]) -> str:
    """A bullet's text as its source has it: the first line without its marker, the others dedented to
    the column its text starts at, so nested bullets, further paragraphs and code keep their shape."""
    first = _BULLET.match(lines[0])
    column = first.start(2)
    out = [first[2]]
    for line in lines[1:]:
        out.append(line[min(column, _indent(line)) :] if line.strip() else "")
    return "\n".join(out).strip("\n")


def _bullet_items(lines: list[str]) -> tuple[str | None, list[str]]:
    """(label, item texts) of a top-level bullet: a label bullet ("New functions:", "POSSIBLE
    BREAKING CHANGES") gives one item per nested bullet, and its intro paragraphs are dropped;
    any other bullet is one item (its nested bullets are details of it, kept as its source has them)."""
    first = _BULLET.match(lines[0])
    label, rest = [first[2]], lines[1:]
    while rest and rest[0].strip() and not _BULLET.match(rest[0]):
        label.append(rest.pop(0))
    nested = [line for line in rest if _BULLET.match(line)]
    if not nested or not _is_label(_join(label)):
        return None, [_raw_item(lines)]
    base = min(_indent(line) for line in nested)
    items: list[list[str]] = []
    for line in rest:
        match = _BULLET.match(line)
        if match and _indent(line) == base:
            items.append([line])
        elif items and (_indent(line) > base or not line.strip()):
            items[-1].append(line)
    return _join(label).rstrip(":").strip(), [_raw_item(item) for item in items]


@dataclass
class _Item:
    release: str | None
    category: str | None
    text: str
    kind: str  # bullet | paragraph | code
    section: str | None = None  # the release's heading it sits under (not a bold label)

    @property
    def is_paragraph(self) -> bool:
        return self.kind != "bullet"


# Sections of a release that explain entries rather than list them: their prose and examples are context.
_CONTEXT_SECTIONS = re.compile(
    r"\b(?:migrat\w*|upgrad\w*|tips?|how to|notes?|details?|examples?|incompatib\w*|porting|guide|faq)\b", re.I
)
_STOPWORDS = set(
    "this that with from have will when into your more than then also which there their been were they them only "
    "what some such like used using does done make made each other were here these those about after before "
    "because would could should must still even just very much many most over under while where".split()
)


def _context_words(text: str) -> set[str]:
    """The words and code names that tie context to an entry: long words (a plural's `s` dropped), code names."""
    words = {word.lower().removesuffix("s") for word in re.findall(r"[A-Za-z][A-Za-z0-9]{3,}", text)}
    return words - _STOPWORDS


def _attach_context(groups: list[tuple[str, str]], entries: list[ChangelogEntry]) -> None:
    """Each context group (its label, its text) goes to the release's entry it shares the most words with (at
    least two, and more than any other entry); one no entry matches is left out."""
    for label, text in groups:
        wanted = _context_words(f"{label} {text}")
        scores = sorted(((len(wanted & _context_words(entry.text)), index) for index, entry in enumerate(entries)))
        if not scores or scores[-1][0] < 2 or (len(scores) > 1 and scores[-2][0] == scores[-1][0]):
            continue
        entry = entries[scores[-1][1]]
        entry.context = f"{entry.context}\n\n{text}".strip("\n")


def _release_heading(text: str) -> tuple[bool, str | None]:
    """(names a release, its version or None when unreleased)."""
    text = _unlink(text)
    if re.match(r"^\W*(?:unreleased|upcoming release|next release|in development)\b", text, re.I):
        return True, None
    version = version_in(text)
    if version is None:
        return False, None
    return True, (None if UNRELEASED.search(text) else version)


def parse_changelog(document: ChangelogFile, text_format: str = "text") -> list[ChangelogEntry]:
    """Entries of one changelog document (Markdown, reStructuredText or plain text).

    List items are entries (continuation lines, nested bullets and code join their item, unless the item is
    a label such as "New functions:"). Prose and examples between or after them (a migration guide's "Old
    code:") are never entries: they are context for the entry they explain (`ChangelogEntry.context`).
    Paragraphs are entries only in a release that lists nothing (Django-style prose)."""
    entries: list[ChangelogEntry] = []
    release, category = document.release, None
    headed = False  # the category is a heading's, not a label paragraph's ("Deprecations:")
    release_level: int | None = None
    in_release = document.release is not None
    skipping = False  # inside a "New Contributors" section
    items: list[_Item] = []
    source = document.source or f"{document.path} ({text_format})"

    section: str | None = None  # the heading (not a bold label) the items sit under

    def close_release() -> None:
        """The release's entries: its list items; its prose and examples are context for the entries they explain,
        unless the release lists nothing (Django-style prose, each paragraph an entry, explanations aside)."""
        listed = any(item.kind == "bullet" for item in items)
        found: list[ChangelogEntry] = []
        groups: list[tuple[str, str]] = []  # (label, text): consecutive context under one label
        last_label = None
        for item in items:
            explains = (
                item.kind == "code"
                or item.text.rstrip().endswith(":")
                or bool(item.section and _CONTEXT_SECTIONS.search(item.section))
            )
            if item.is_paragraph and (listed or explains):
                label = f"{item.section}/{item.category}"
                if groups and last_label == label:
                    groups[-1] = (groups[-1][0], f"{groups[-1][1]}\n\n{item.text}")
                else:
                    groups.append((item.category or "", item.text))
                last_label = label
                continue
            last_label = None
            prs, issues, bare = extract_refs(item.text).for_entry()
            text, category = _LEADING_LINKS.sub("", item.text), item.category
            if tag := _KIND_TAG.match(text):
                text, category = text[tag.end() :], tag[1].strip().capitalize()
            if (shouted := _SHOUTED_PREFIX.match(text)) and text[shouted.end() :].strip():
                text = text[shouted.end() :][:1].upper() + text[shouted.end() + 1 :]
            found.append(
                ChangelogEntry(
                    text=text,
                    release=item.release,
                    category=category,
                    source=source,
                    prs=prs,
                    issues=issues,
                    refs=bare,
                )
            )
        _attach_context(groups, found)
        entries.extend(found)
        items.clear()

    def add(text: str, kind: str, label: str | None = None) -> None:
        if kind == "paragraph" and _NOT_ENTRY.match(text) or _LINK_ALONE.match(text):
            return  # "Released 2024-11-13", "**Full Changelog**: ...", a bare link
        if in_release and not skipping and text and (kind == "code" or strip_refs(text)):
            items.append(_Item(release, label or category, text, kind, section))

    for block in _blocks(document.text.splitlines()):
        if block[0] == "heading":
            _, level, text = block
            is_release, version = _release_heading(text)
            if is_release and (release_level is None or level <= release_level) and level < 100:
                close_release()
                release = version if document.release is None else document.release
                release_level, category, in_release, skipping, headed = level, None, True, False, False
                section = None
            elif release_level is not None and level > release_level or document.release is not None:
                category = strip_refs(_unlink(text)).strip(" :*_`") or None
                headed = category is not None
                skipping = bool(category and _SKIPPED_SECTIONS.match(category))
                section = category if level < 100 else section
            else:  # a heading beside the releases ("Required Python versions"): not release notes
                close_release()
                in_release = False
            continue
        kind, lines = block
        if kind == "bullet":
            label, texts = _bullet_items(lines)
            for text in texts:
                add(text, "bullet", label)
            continue
        if kind == "code":
            add("\n".join(lines), "code")
            continue
        text = _join(lines)
        if in_release and not items and UNRELEASED.fullmatch(text.strip(" .*_")):
            release = None  # "Version 3.2.0" / "Unreleased": not shipped yet
        elif len(lines) == 1 and text.endswith(":") and _is_label(text) and not headed:
            category = text.rstrip(":").strip(" *_") or category  # under a heading, "For example:" is prose
        else:
            add(text, "paragraph")
    close_release()
    return entries
