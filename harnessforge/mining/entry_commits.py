"""Which commit wrote each changelog entry: a strong link between release notes and code when that
commit is the work itself, and the last resort of placement when it is not (a release commit).

Many projects add a PR's changelog line in the PR itself (pallets, attrs, structlog...), and cite
only the issue, which git alone cannot tie to the PR. The mainline commit whose diff adds an
entry's line to the changelog file is that PR, whatever the entry cites. Commits that only edit
the changelog ("update CHANGES"), housekeeping commits (a release commit writing a whole section)
and commits adding more than a few entries at once prove nothing and are not used.
"""

from __future__ import annotations

import re
from collections import Counter

from ..diffs import parse_text, split_diff
from ..files import FileClassifier
from ..gitio import GitRepo
from ..models import ChangelogEntry
from .kinds import KindReader
from .pulls import Unit

_MARKUP = re.compile(r"[`*_\[\]()]|:(?:pr|issue|user|ghsa|gh|bpo):|\{(?:pr|issue)\}")
MIN_LINE_CHARS = 20  # shorter added lines ("Unreleased", a version number) could match anything
MAX_ENTRIES_PER_COMMIT = 5  # a commit adding more entries than this is consolidating notes, not shipping them


def _normal(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text)
    return " ".join(_MARKUP.sub("", text).lower().split())


def link_entry_commits(
    repo: GitRepo, units: list[Unit], entries: list[ChangelogEntry], classify: FileClassifier, kinds: KindReader
) -> list[ChangelogEntry]:
    """`entries` with `written_by` (the first unit whose diff added one of their lines, whatever it is) and
    `commits` extended by that unit when it is work that shipped few entries (a PR adding its own line)."""
    files = {
        entry.source.rsplit(" (", 1)[0]
        for entry in entries
        if "fragment" not in entry.source and "reno" not in entry.source
    }
    added: dict[str, list[tuple[str, str]]] = {}  # file -> [(normalised added line, unit sha)] in history order
    work: set[str] = set()  # units that change code and are not titled as housekeeping
    for unit in units:
        paths = {file.path for file in unit.files}
        if not paths & files:
            continue
        if any(classify.is_source(path) or classify.is_test(path) for path in paths) and (
            kinds.title(unit.title) != "housekeeping"
        ):
            work.add(unit.sha)
        parent = unit.commit.parents[0] if unit.commit.parents else None
        if parent is None:
            continue
        for patched_file in parse_text_diff(repo, parent, unit.sha, sorted(paths & files)):
            for hunk in patched_file:
                for line in hunk:
                    text = _normal(line.value)
                    if line.is_added and len(text) >= MIN_LINE_CHARS:
                        added.setdefault(patched_file.path, []).append((text, unit.sha))
    found: list[list[str]] = []
    for entry in entries:
        body = _normal(entry.text)
        shas = [sha for text, sha in added.get(entry.source.rsplit(" (", 1)[0], []) if text in body]
        found.append(list(dict.fromkeys(shas)))
    per_commit = Counter(sha for shas in found for sha in shas)
    linked = []
    for entry, shas in zip(entries, found):
        strong = {sha for sha in shas if sha in work and per_commit[sha] <= MAX_ENTRIES_PER_COMMIT}
        update: dict = {"written_by": shas[0]} if shas else {}
        if strong:
            update["commits"] = sorted({*entry.commits, *strong})
        linked.append(entry.model_copy(update=update) if update else entry)
    return linked


def parse_text_diff(repo: GitRepo, base: str, head: str, paths: list[str]):
    """The text diffs of `paths` between two commits, as unidiff PatchedFiles."""
    raw = repo.run("diff", "--no-color", "--no-ext-diff", "--no-renames", base, head, "--", *paths)
    return parse_text(split_diff(raw))
