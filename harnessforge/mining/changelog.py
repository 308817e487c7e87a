"""Reading a repository's changelogs over a range: the changelog files and per-release notes at
its end (`changelog_text.py`), the towncrier fragments and reno notes its units added
(`changelog_fragments.py`), and GitHub release bodies for releases no file describes; one entry
per change once duplicates (a fragment and its rendered line, a docs copy) are merged.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..gitio import GitRepo, display
from ..models import ChangelogEntry
from .changelog_fragments import is_fragment, is_reno_note, parse_fragment, parse_reno_note, towncrier_config
from .changelog_text import ChangelogFile, find_changelog_files, parse_changelog, version_in
from .kinds import plain
from .pulls import Unit
from .releases import parse_version

MAX_BYTES = 8_000_000  # a changelog larger than this is not read (no real one comes close)


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
            "context": first.context or other.context,
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
    for entry in entries:
        text = _key(entry)
        key = (entry.release, text) if text else (entry.release, id(entry))
        if key not in merged and entry.commits and text in rendered:
            key = rendered[text]
        if key in merged:
            merged[key] = _merge(merged[key], entry)
        elif entry.commits:
            unmatched.append(entry)
        else:
            merged[key] = entry
            rendered.setdefault(text, key)
    for entry in unmatched:
        lines = [
            merged_key
            for merged_key, line_entry in merged.items()
            if not line_entry.commits and merged_key[0] == entry.release and _numbers(line_entry) & _numbers(entry)
        ]
        if len(lines) == 1:
            merged[lines[0]] = _merge(merged[lines[0]], entry)
        else:
            merged[(entry.release, id(entry))] = entry
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
    for unit in units:
        for file in unit.files:
            fragment, note = is_fragment(file.path, fragment_dirs), is_reno_note(file.path)
            if not (fragment or note) or repo.show(unit.sha, file.path) is None:
                continue
            latest[file.path] = unit.sha
            renamed = file.old_path and (is_fragment(file.old_path, fragment_dirs) or is_reno_note(file.old_path))
            if not renamed and _added_here(repo, unit, file.path):  # a renamed one came with the commit that added it
                added.append((unit, file.path, fragment))
    entries: list[ChangelogEntry] = []
    sources: list[str] = []
    for unit, path, fragment in added:
        text = _decode(path, repo.show(end, path) or repo.show(latest[path], path), warnings)
        if text is None:
            continue
        if fragment:
            entry = parse_fragment(path, text, release_of(unit.sha), unit.pr, unit.sha)
            found, source = ([entry] if entry else []), "towncrier fragments"
        else:
            try:
                found, source = (
                    parse_reno_note(path, text, release_of(unit.sha), unit.pr, unit.sha),
                    "reno release notes",
                )
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
    described = {entry.release for entry in entries}
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
