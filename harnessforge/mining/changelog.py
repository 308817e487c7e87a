"""Changelog parsing for the formats real projects use.

Markdown (`## [1.2.0] - date`, `## Version 1.2`), reStructuredText section titles, per-release
files (`docs/releases/4.2.txt`) and towncrier fragments (`changelog.d/123.feature.md`, read from
the commit that added them, so each fragment is tied to its PR). All text formats go through one
parser: a stream of headings and bullets, where a heading naming a version opens a release.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..gitio import GitRepo, display
from ..models import ChangelogEntry
from .pulls import Unit
from .refs import extract_refs, strip_refs
from .releases import parse_version

CHANGELOG_NAME = re.compile(
    r"^(?:changelog|changes|history|news|releases?|release[-_]notes)(?:\.(?:md|markdown|rst|txt))?$", re.I
)
RELEASE_DIRS = (
    "docs/releases/",
    "docs/release-notes/",
    "docs/release_notes/",
    "docs/whatsnew/",
    "docs/changelog/",
    "release-notes/",
    "releasenotes/notes/",
)
FRAGMENT_DIRS = ("changelog.d/", "newsfragments/", "changes/", ".changelog/", "news/")
FRAGMENT_NAME = re.compile(r"^(\d+)\.(\w+)(?:\.\d+)?(?:\.(?:md|rst|txt))?$")
VERSION_TOKEN = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|rc|alpha|beta|dev|post)\.?\d*)?)(?![\w.])", re.I)
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*+#`':.\"_])\1{2,}\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")


@dataclass
class ChangelogFile:
    path: str
    text: str
    release: str | None = None  # for per-release files: the version in the file name


def find_changelog_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(single changelog files, per-release note files) among a tree's paths."""
    singles, per_release = [], []
    for p in paths:
        pp = PurePosixPath(p)
        parent = str(pp.parent) if str(pp.parent) != "." else ""
        if parent in ("", "docs", "doc") and CHANGELOG_NAME.match(pp.name):
            singles.append(p)
        elif p.startswith(RELEASE_DIRS) and pp.suffix in (".md", ".rst", ".txt") and VERSION_TOKEN.search(pp.stem):
            per_release.append(p)
    singles.sort(key=lambda p: (p.count("/"), not p.lower().startswith(("changelog", "changes")), p))
    return singles, per_release


def version_in(text: str) -> str | None:
    for m in VERSION_TOKEN.finditer(text):
        v = parse_version(m[1])
        if v is not None:
            return str(v)
    return None


def _headings_and_lines(lines: list[str]):
    """Yield ("heading", level, text) and ("line", text) items; RST/setext levels by first use."""
    styles: dict[str, int] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        m = _ATX.match(line)
        if m:
            yield ("heading", len(m[1]), m[2])
            i += 1
            continue
        if (
            line.strip()
            and not _UNDERLINE.match(line)
            and _UNDERLINE.match(nxt)
            and len(nxt.strip()) >= len(line.strip()) * 0.6
        ):
            over = i > 0 and _UNDERLINE.match(lines[i - 1] or "") is not None
            style = ("over" if over else "") + nxt.strip()[0]
            level = styles.setdefault(style, 10 + len(styles))
            yield ("heading", level, line.strip())
            i += 2
            continue
        if _UNDERLINE.match(line):
            i += 1
            continue
        yield ("line", line)
        i += 1


def parse_changelog(doc: ChangelogFile, fmt: str = "text") -> list[ChangelogEntry]:
    """Entries of one changelog document (Markdown or reStructuredText).

    Bullets are entries (continuation lines and nested bullets join their parent). A release
    section without bullets (Django-style prose) uses its paragraphs instead.
    """
    entries: list[ChangelogEntry] = []
    section: list[tuple[bool, ChangelogEntry]] = []  # (is_paragraph, entry) of the open release
    release, release_level, category = doc.release, None, None
    in_release = doc.release is not None
    chunk: list[str] = []
    chunk_is_paragraph = False
    bullet_indent = None

    def flush_chunk() -> None:
        nonlocal chunk
        text = " ".join(s.strip() for s in chunk).strip()
        chunk = []
        if in_release and text and not text.startswith((".. ", "<!--")):
            refs = extract_refs(text)
            section.append(
                (
                    chunk_is_paragraph,
                    ChangelogEntry(
                        text=text,
                        release=release,
                        category=category,
                        source=f"{doc.path} ({fmt})",
                        prs=sorted(refs.prs),
                        issues=sorted(refs.issues),
                        refs=sorted(refs.bare),
                    ),
                )
            )

    def close_section() -> None:
        flush_chunk()
        has_bullets = any(not para for para, _ in section)
        entries.extend(e for para, e in section if not (para and has_bullets))
        section.clear()

    for item in _headings_and_lines(doc.text.splitlines()):
        if item[0] == "heading":
            _, level, text = item
            version = version_in(text)
            if version or re.match(r"^\[?unreleased\b", text, re.I):
                close_section()
                release, release_level, category, in_release = version, level, None, True
                bullet_indent = None
            elif release_level is not None and level > release_level:
                flush_chunk()
                category = strip_refs(text).strip(":") or None
            elif doc.release is None:
                close_section()
                in_release = False
            continue
        line = item[1]
        m = _BULLET.match(line)
        if m and (bullet_indent is None or len(m[1]) <= bullet_indent):
            flush_chunk()
            bullet_indent, chunk_is_paragraph, chunk = len(m[1]), False, [m[2]]
        elif not line.strip():
            if chunk_is_paragraph:
                flush_chunk()
        elif chunk:
            chunk.append(line)  # continuation line or nested bullet: part of the same entry
        else:
            chunk_is_paragraph, chunk = True, [line]
    close_section()
    return entries


def parse_fragment(path: str, text: str, release: str | None, pr: int | None) -> ChangelogEntry | None:
    """A towncrier fragment: the file name gives the issue (or PR) number and the category."""
    m = FRAGMENT_NAME.match(PurePosixPath(path).name)
    if not m or not text.strip():
        return None
    refs = extract_refs(text)
    return ChangelogEntry(
        text=" ".join(text.split()),
        release=release,
        category=m[2],
        source=f"{display(path)} (towncrier fragment)",
        prs=sorted(refs.prs | ({pr} if pr else set())),
        issues=sorted(refs.issues),
        refs=sorted(refs.bare | {int(m[1])}),
    )


def is_fragment(path: str) -> bool:
    return path.startswith(FRAGMENT_DIRS) and FRAGMENT_NAME.match(PurePosixPath(path).name) is not None


def format_of(path: str) -> str:
    return "restructuredtext" if path.endswith((".rst", ".txt")) else "markdown"


def read_changelog(
    repo: GitRepo, end: str, units: list[Unit], release_of: Callable[[str], str | None]
) -> tuple[list[ChangelogEntry], list[str]]:
    """Entries of the changelog files at `end`, per-release notes, and towncrier fragments
    (read from the commit that added each)."""
    singles, per_release = find_changelog_files(repo.files(end))
    entries: list[ChangelogEntry] = []
    sources: list[str] = []
    for path in singles:
        found = parse_changelog(
            ChangelogFile(path, (repo.show(end, path) or b"").decode("utf-8", "replace")), format_of(path)
        )
        if found:
            entries += found
            sources.append(path)
    for path in per_release:  # the file name carries the version of per-release notes
        doc = ChangelogFile(
            path, (repo.show(end, path) or b"").decode("utf-8", "replace"), release=version_in(path.rsplit("/", 1)[-1])
        )
        found = parse_changelog(doc, format_of(path))
        if found:
            entries += found
            sources.append(path)
    for u in units:
        for f in u.files:
            if is_fragment(f.path) and f.added:
                blob = repo.show(u.sha, f.path)
                entry = parse_fragment(f.path, (blob or b"").decode("utf-8", "replace"), release_of(u.sha), u.pr)
                if entry:
                    entries.append(entry)
                    if "towncrier fragments" not in sources:
                        sources.append("towncrier fragments")
    return entries, sources
