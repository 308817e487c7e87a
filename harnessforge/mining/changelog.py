"""Changelog parsing for the formats real projects use.

Text changelogs (Markdown: Keep a Changelog or free form; reStructuredText with Sphinx roles;
plain text), per-release files (`docs/releases/4.2.txt`), GitHub release bodies (Markdown),
towncrier fragments (`changelog.d/123.feature.md`) and reno notes (`releasenotes/notes/*.yaml`).
All text goes through one parser: a stream of headings, bullets and paragraphs, where a heading
naming a version opens a release. Fragments and notes are read from the commit that added them,
which ties each entry to that commit (and its PR) even when the code landed elsewhere.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from ..gitio import GitRepo, display
from ..models import ChangelogEntry
from .kinds import plain
from .pulls import Unit
from .refs import extract_refs, strip_refs
from .releases import parse_version

CHANGELOG_NAME = re.compile(
    r"^(?:changelog|changes|history|news|releases?|release[-_]notes|versions?|whats[-_]?new)"
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
FRAGMENT_DIRS = ("changelog.d", "changelog", "newsfragments", "changes", ".changelog", "news", "docs/changelog.d")
# `123.feature.md`, `123.feature.1.md`, `+orphan.misc.md`, `123.bugfix` (towncrier's names)
FRAGMENT_NAME = re.compile(r"^(?:\+[\w-]*|(\d+))\.([A-Za-z][\w-]*)(?:\.\d+)?(?:\.(?:md|markdown|rst|txt))?$")
RENO_DIR = "releasenotes/notes"
VERSION_TOKEN = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|rc|alpha|beta|dev|post)\.?\d*)?)(?![\w.])", re.I)
UNRELEASED = re.compile(
    r"\b(?:unreleased|in development|not (?:yet )?released|upcoming|under development|development version)\b", re.I
)
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*+#`':.\"_])\1{2,}\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)])\s+(.*)$")
_BOLD_LABEL = re.compile(r"^\s*(?:\*\*|__)([^*_]{1,80}?)(?:\*\*|__)\s*:?\s*$")
_DIRECTIVE = re.compile(r"^(\s*)\.\.(?:\s|$)")  # RST comment or directive: `.. note::`, `.. include::`
_FENCE = re.compile(r"^\s*(```|~~~)")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`__?")
_NOT_ENTRY = re.compile(
    r"^(?:released\b|release date\b|date:|\(?\d{4}-\d{2}-\d{2}\)?\.?$|\*\*full changelog\*\*|full changelog\b)",
    re.I,
)
# towncrier's rendered prefix: "`#12 <https://...>`_, `#13 <...>`_: " or "[#12](https://...): " (refs are kept apart)
_LEADING_LINKS = re.compile(r"^(?:(?:`#\d+ <[^>]*>`__?|\[#\d+\]\([^)]*\))[,\s]*)+:\s*")
_SKIPPED_SECTIONS = re.compile(r"^(?:new contributors|contributors|thanks|acknowledge?ments)\b", re.I)
MAX_BYTES = 8_000_000  # a changelog larger than this is not read (no real one comes close)


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
    for p in paths:
        pp = PurePosixPath(p)
        parent = str(pp.parent) if str(pp.parent) != "." else ""
        if parent in CHANGELOG_DIRS and CHANGELOG_NAME.match(pp.name):
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


def _unlink(text: str) -> str:
    """Link texts without their targets: `[1.2.0](https://.../compare/1.1.0...1.2.0)` -> `[1.2.0]`."""
    return _RST_LINK.sub(r"\1", _MD_LINK.sub(r"[\1]", text))


# ---- the text parser ---------------------------------------------------------------------------
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_heading_text(line: str) -> bool:
    return bool(line.strip()) and not _UNDERLINE.match(line) and not _BULLET.match(line) and _indent(line) == 0


def _blocks(lines: list[str]) -> Iterator[tuple]:
    """("heading", level, text), ("bullet", [lines]) and ("paragraph", [lines]) blocks.

    A bullet keeps its continuation lines and nested bullets; code fences, RST directives and
    comments, and HTML comments are skipped. RST/setext heading levels follow first use."""
    styles: dict[str, int] = {}
    block: list[str] = []
    kind = None  # "bullet" | "paragraph" | None
    blank = False
    fence = None
    skip_deeper_than: int | None = None  # inside an RST directive: skip what is indented under it
    in_comment = False
    i = 0

    def flush():
        nonlocal block, kind
        out = (kind, block) if kind and block else None
        block, kind = [], None
        return out

    while i < len(lines):
        line = lines[i].rstrip()
        nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        i += 1
        if fence:
            if line.strip().startswith(fence):
                fence = None
            continue
        if m := _FENCE.match(line):
            fence = m[1]
            continue
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
        if m := _DIRECTIVE.match(line):
            if kind != "bullet" or _indent(line) <= _indent(block[0]):
                if out := flush():
                    yield out
            skip_deeper_than = len(m[1])
            continue
        if m := _ATX.match(line):
            if out := flush():
                yield out
            yield ("heading", len(m[1]), m[2])
            continue
        if _is_heading_text(line) and _UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()) * 0.6:
            if out := flush():
                yield out
            over = i >= 2 and _UNDERLINE.match(lines[i - 2].rstrip()) is not None
            level = styles.setdefault(("over" if over else "") + nxt.strip()[0], 10 + len(styles))
            yield ("heading", level, line.strip())
            i += 1
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
        if m := _BOLD_LABEL.match(line):
            if out := flush():
                yield out
            yield ("heading", 100, m[1])
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
    return " ".join(s.strip() for s in lines if s.strip())


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


def _bullet_items(lines: list[str]) -> tuple[str | None, list[str]]:
    """(label, item texts) of a top-level bullet: a label bullet ("New functions:", "POSSIBLE
    BREAKING CHANGES") gives one item per nested bullet, and its intro paragraphs are dropped;
    any other bullet is one item (its nested bullets are details of it)."""
    first = _BULLET.match(lines[0])
    label, rest = [first[2]], lines[1:]
    while rest and rest[0].strip() and not _BULLET.match(rest[0]):
        label.append(rest.pop(0))
    nested = [line for line in rest if _BULLET.match(line)]
    if not nested or not _is_label(_join(label)):
        return None, [_join([first[2], *lines[1:]])]
    base = min(_indent(line) for line in nested)
    items: list[list[str]] = []
    for line in rest:
        m = _BULLET.match(line)
        if m and _indent(line) == base:
            items.append([m[2]])
        elif items and _indent(line) > base:
            items[-1].append(line)
    return _join(label).rstrip(":").strip(), [_join(item) for item in items]


@dataclass
class _Item:
    release: str | None
    category: str | None
    text: str
    is_paragraph: bool


def _release_heading(text: str) -> tuple[bool, str | None]:
    """(names a release, its version or None when unreleased)."""
    text = _unlink(text)
    if re.match(r"^\W*(?:unreleased|upcoming release|next release|in development)\b", text, re.I):
        return True, None
    version = version_in(text)
    if version is None:
        return False, None
    return True, (None if UNRELEASED.search(text) else version)


def parse_changelog(doc: ChangelogFile, fmt: str = "text") -> list[ChangelogEntry]:
    """Entries of one changelog document (Markdown, reStructuredText or plain text).

    Bullets are entries (continuation lines and nested bullets join their parent, unless the parent
    is a label such as "New functions:"). Paragraphs are entries only in a section without bullets
    (Django-style prose), never the release's preamble when the release has bullets."""
    entries: list[ChangelogEntry] = []
    release, category = doc.release, None
    headed = False  # the category is a heading's, not a label paragraph's ("Deprecations:")
    release_level: int | None = None
    in_release = doc.release is not None
    skipping = False  # inside a "New Contributors" section
    items: list[_Item] = []
    source = doc.source or f"{doc.path} ({fmt})"

    def close_release() -> None:
        with_bullets = {it.category for it in items if not it.is_paragraph}
        for it in items:
            if it.is_paragraph and (it.category in with_bullets or (it.category is None and with_bullets)):
                continue
            prs, issues, bare = extract_refs(it.text).for_entry()
            entries.append(
                ChangelogEntry(
                    text=_LEADING_LINKS.sub("", it.text),
                    release=it.release,
                    category=it.category,
                    source=source,
                    prs=prs,
                    issues=issues,
                    refs=bare,
                )
            )
        items.clear()

    def add(text: str, is_paragraph: bool, label: str | None = None) -> None:
        if is_paragraph and _NOT_ENTRY.match(text):
            return  # "Released 2024-11-13", "**Full Changelog**: ..."
        if in_release and not skipping and text and strip_refs(text):
            items.append(_Item(release, label or category, text, is_paragraph))

    for block in _blocks(doc.text.splitlines()):
        if block[0] == "heading":
            _, level, text = block
            is_release, version = _release_heading(text)
            if is_release and (release_level is None or level <= release_level) and level < 100:
                close_release()
                release = version if doc.release is None else doc.release
                release_level, category, in_release, skipping, headed = level, None, True, False, False
            elif release_level is not None and level > release_level or doc.release is not None:
                category = strip_refs(_unlink(text)).strip(" :*_`") or None
                headed = category is not None
                skipping = bool(category and _SKIPPED_SECTIONS.match(category))
            else:  # a heading beside the releases ("Required Python versions"): not release notes
                close_release()
                in_release = False
            continue
        kind, lines = block
        if kind == "bullet":
            label, texts = _bullet_items(lines)
            for text in texts:
                add(text, False, label)
            continue
        text = _join(lines)
        if in_release and not items and UNRELEASED.fullmatch(text.strip(" .*_")):
            release = None  # "Version 3.2.0" / "Unreleased": not shipped yet
        elif len(lines) == 1 and text.endswith(":") and _is_label(text) and not headed:
            category = text.rstrip(":").strip(" *_") or category  # under a heading, "For example:" is prose
        else:
            add(text, True)
    close_release()
    return entries


# ---- fragments and notes ----------------------------------------------------------------------
def towncrier_config(repo: GitRepo, end: str, paths: set[str]) -> tuple[tuple[str, ...], str | None]:
    """(fragment directories, rendered changelog file) from towncrier's configuration; without one,
    the usual directory names."""
    dirs, filename = list(FRAGMENT_DIRS), None
    for name in ("towncrier.toml", ".towncrier.toml", "pyproject.toml"):
        if name not in paths:
            continue
        try:
            config = tomllib.loads((repo.show(end, name) or b"").decode("utf-8", "replace"))
        except tomllib.TOMLDecodeError:
            continue  # pyproject.toml is not ours to report on; the usual names still apply
        section = config.get("tool", {}).get("towncrier")
        if not isinstance(section, dict):
            continue
        if isinstance(section.get("directory"), str):
            dirs = [section["directory"].strip("/")]
        elif isinstance(section.get("package"), str):  # towncrier's default: next to the package
            dirs = [f"{str(section.get('package_dir', '')).strip('/')}/{section['package']}/newsfragments".lstrip("/")]
        if isinstance(section.get("filename"), str):
            filename = section["filename"].strip("/")
        break
    return tuple(dict.fromkeys(dirs)), filename


def fragment_parts(path: str, dirs: tuple[str, ...] = FRAGMENT_DIRS) -> tuple[int | None, str] | None:
    """(number or None for an orphan, type) of a towncrier fragment path, or None."""
    pp = PurePosixPath(path)
    if str(pp.parent) not in dirs:
        return None
    m = FRAGMENT_NAME.match(pp.name)
    return (int(m[1]) if m[1] else None, m[2]) if m else None


def is_fragment(path: str, dirs: tuple[str, ...] = FRAGMENT_DIRS) -> bool:
    return fragment_parts(path, dirs) is not None


def is_reno_note(path: str) -> bool:
    return path.startswith(RENO_DIR + "/") and path.endswith((".yaml", ".yml"))


def parse_fragment(
    path: str, text: str, release: str | None, pr: int | None, commit: str | None = None
) -> ChangelogEntry | None:
    """A towncrier fragment: the file name gives the issue or PR number (either, as on GitHub) and
    the type; the commit that added it ties it to that commit's PR."""
    parts = fragment_parts(path) or fragment_parts(path, (str(PurePosixPath(path).parent),))
    if not parts or not text.strip():
        return None
    number, category = parts
    text = " ".join(text.split())
    prs, issues, bare = extract_refs(text).for_entry()
    return ChangelogEntry(
        text=text,
        release=release,
        category=category,
        source=f"{display(path)} (towncrier fragment)",
        prs=sorted(set(prs) | ({pr} if pr else set())),
        issues=issues,
        refs=sorted((set(bare) | ({number} if number else set())) - {pr}),
        commits=[commit] if commit else [],
    )


def parse_reno_note(
    path: str, text: str, release: str | None, pr: int | None, commit: str | None = None
) -> list[ChangelogEntry]:
    """A reno note: one entry per item of each section (`features`, `fixes`, `upgrade`...).
    Raises ValueError when the note is not a YAML mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        problem = str(getattr(e, "problem", None) or e).splitlines()[0]
        mark = getattr(e, "problem_mark", None)
        raise ValueError(f"not valid YAML ({problem}{f' at line {mark.line + 1}' if mark else ''})") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ValueError(f"a reno note is a mapping of sections, not a {type(data).__name__}")
    entries = []
    for section, value in data.items():
        for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if not isinstance(item, str) or not item.strip():
                continue
            item = " ".join(item.split())
            prs, issues, bare = extract_refs(item).for_entry()
            entries.append(
                ChangelogEntry(
                    text=item,
                    release=release,
                    category=str(section),
                    source=f"{display(path)} (reno)",
                    prs=sorted(set(prs) | ({pr} if pr else set())),
                    issues=issues,
                    refs=sorted(set(bare) - {pr}),
                    commits=[commit] if commit else [],
                )
            )
    return entries


# ---- reading a repository ------------------------------------------------------------------------
def format_of(path: str) -> str:
    if path.endswith((".md", ".markdown")):
        return "markdown"
    return "restructuredtext" if path.endswith(".rst") else "text"


def _decode(path: str, blob: bytes | None, warnings: list[str]) -> str | None:
    """A file's text; binary or oversized files give a warning and None, non-UTF-8 text a warning."""
    if blob is None:
        return None
    if len(blob) > MAX_BYTES or b"\0" in blob[:8192]:
        what = "larger than 8 MB" if len(blob) > MAX_BYTES else "binary, not text"
        warnings.append(f"changelog {display(path)} cannot be parsed: {what}; its entries are left out")
        return None
    try:
        return blob.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        warnings.append(
            f"changelog {display(path)} is not valid UTF-8 (byte {e.start}); read with undecodable bytes replaced"
        )
        return blob.decode("utf-8", "replace")


def _key(entry: ChangelogEntry) -> str:
    """What makes two entries the same one (a fragment and its rendered line, a docs copy)."""
    return re.sub(r"\W+", "", plain(entry.text).lower())[:80]


def _merge(first: ChangelogEntry, other: ChangelogEntry) -> ChangelogEntry:
    """Two sightings of one change, with everyone's refs and commits. The release notes line (the
    first seen) gives the release and the final wording; a fragment or note gives its source and type."""
    tied = other if other.commits and not first.commits else first
    prs = set(first.prs) | set(other.prs)
    return tied.model_copy(
        update={
            "text": first.text,
            "release": first.release,
            "prs": sorted(prs),
            "issues": sorted(set(first.issues) | set(other.issues)),
            "refs": sorted((set(first.refs) | set(other.refs)) - prs),
            "commits": list(dict.fromkeys(first.commits + other.commits)),
        }
    )


def _numbers(entry: ChangelogEntry) -> set[int]:
    return set(entry.prs) | set(entry.issues) | set(entry.refs)


def _merge_duplicates(entries: list[ChangelogEntry]) -> list[ChangelogEntry]:
    """One entry per change: a towncrier fragment and its rendered changelog line (same text under
    whatever release: a backport's patch release; or, when the line was edited after rendering,
    the one line of the fragment's release that cites its number), or a changelog and its docs copy."""
    merged: dict[tuple, ChangelogEntry] = {}
    rendered: dict[str, tuple] = {}  # text -> key of the first file entry with that text
    unmatched: list[ChangelogEntry] = []  # fragments and notes no line has the text of
    for e in entries:
        text = _key(e)
        key = (e.release, text) if text else (e.release, id(e))
        if key not in merged and e.commits and text in rendered:
            key = rendered[text]
        if key in merged:
            merged[key] = _merge(merged[key], e)
        elif e.commits:
            unmatched.append(e)
        else:
            merged[key] = e
            rendered.setdefault(text, key)
    for e in unmatched:
        lines = [k for k, m in merged.items() if not m.commits and k[0] == e.release and _numbers(m) & _numbers(e)]
        if len(lines) == 1:
            merged[lines[0]] = _merge(merged[lines[0]], e)
        else:
            merged[(e.release, id(e))] = e
    return list(merged.values())


def _added_here(repo: GitRepo, unit: Unit, path: str) -> bool:
    """The unit created `path` (its first parent did not have it): a later edit is not a new entry."""
    parents = unit.commit.parents
    return not parents or repo.show(parents[0], path) is None


def _changelog_files(repo: GitRepo, end: str, paths: list[str], rendered: str | None, warnings: list[str]):
    """Entries and sources of the changelog files and per-release notes at `end`."""
    singles, per_release = find_changelog_files(paths)
    if rendered and rendered in paths and rendered not in singles:
        singles.insert(0, rendered)  # towncrier's output file, whatever its name
    entries: list[ChangelogEntry] = []
    sources: list[str] = []
    for path in singles + per_release:
        text = _decode(path, repo.show(end, path), warnings)
        if text is None:
            continue
        release = version_in(path.rsplit("/", 1)[-1]) if path in per_release else None
        found = parse_changelog(ChangelogFile(path, text, release=release), format_of(path))
        if found:
            entries += found
            sources.append(path)
    return entries, sources


def _fragments_and_notes(
    repo: GitRepo,
    end: str,
    units: list[Unit],
    release_of: Callable[[str], str | None],
    fragment_dirs: tuple[str, ...],
    warnings: list[str],
):
    """Entries of the towncrier fragments and reno notes that `units` added, each tied to the unit
    that added it; the text is the newest the range has (at `end`, or before the release removed it)."""
    added: list[tuple[Unit, str, bool]] = []
    latest: dict[str, str] = {}  # path -> the newest unit after which the file exists
    for u in units:
        for f in u.files:
            fragment, note = is_fragment(f.path, fragment_dirs), is_reno_note(f.path)
            if not (fragment or note) or repo.show(u.sha, f.path) is None:
                continue
            latest[f.path] = u.sha
            renamed = f.old_path and (is_fragment(f.old_path, fragment_dirs) or is_reno_note(f.old_path))
            if not renamed and _added_here(repo, u, f.path):  # a renamed one came with the commit that added it
                added.append((u, f.path, fragment))
    entries: list[ChangelogEntry] = []
    sources: list[str] = []
    for u, path, fragment in added:
        text = _decode(path, repo.show(end, path) or repo.show(latest[path], path), warnings)
        if text is None:
            continue
        if fragment:
            entry = parse_fragment(path, text, release_of(u.sha), u.pr, u.sha)
            found, source = ([entry] if entry else []), "towncrier fragments"
        else:
            try:
                found, source = parse_reno_note(path, text, release_of(u.sha), u.pr, u.sha), "reno release notes"
            except ValueError as e:
                warnings.append(f"reno note {display(path)} cannot be parsed: {e}; its entries are left out")
                continue
        entries += found
        if found and source not in sources:
            sources.append(source)
    return entries, sources


def read_changelog(
    repo: GitRepo,
    end: str,
    units: list[Unit],
    release_of: Callable[[str], str | None],
    release_texts: list[tuple[str, str]] | None = None,
    warnings: list[str] | None = None,
) -> tuple[list[ChangelogEntry], list[str]]:
    """Entries of the changelog files at `end`, per-release notes, towncrier fragments and reno notes
    added by `units` (tied to the commit that added each), and GitHub release bodies `(tag, body)` for
    releases no file describes; plus the sources found. Files that cannot be parsed go to `warnings`
    (one line each, naming the file); everything else is still read."""
    warnings = warnings if warnings is not None else []
    paths = repo.files(end)
    fragment_dirs, rendered = towncrier_config(repo, end, set(paths))
    entries, sources = _changelog_files(repo, end, paths, rendered, warnings)
    found, found_sources = _fragments_and_notes(repo, end, units, release_of, fragment_dirs, warnings)
    entries += found
    sources += found_sources
    described = {e.release for e in entries}
    for tag, body in release_texts or []:
        version = parse_version(tag)
        if version is None or str(version) in described or not (body or "").strip():
            continue
        doc = ChangelogFile(f"GitHub release {tag}", body, release=str(version), source=f"GitHub release {tag}")
        found = parse_changelog(doc, "markdown")
        entries += found
        if found and "GitHub releases" not in sources:
            sources.append("GitHub releases")
    return _merge_duplicates(entries), sources
