"""The lines each unit of history changed, file by file: what housekeeping rules and entry placement
read (a version line, an identifier a changelog entry names), and the test functions a headline's commits touch.

One `git diff -U0` per unit against its first parent (a merge's whole change), parsed by unidiff.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..diffs import parse_text, split_diff
from ..envs.classification import names_in_test_id
from ..envs.declared_tests import code_of, declared_tests
from ..gitio import GitRepo
from .pulls import Unit

IDENTIFIER = re.compile(r"--?[A-Za-z][\w-]*|[A-Za-z_][\w]*")


@dataclass
class UnitDiff:
    """The added and removed lines of one unit, by path; `unreadable` when unidiff could not parse it."""

    added: dict[str, list[str]] = field(default_factory=dict)
    removed: dict[str, list[str]] = field(default_factory=dict)
    touched: dict[str, list[int]] = field(default_factory=dict)  # the lines each hunk spans in the unit's file
    inserted: dict[str, list[int]] = field(default_factory=dict)  # those of hunks that remove nothing
    unreadable: bool = False

    def lines(self, path: str) -> list[str]:
        return self.added.get(path, []) + self.removed.get(path, [])

    def tokens(self, paths: list[str]) -> set[str]:
        """The identifiers and `--flags` on the changed lines of `paths`."""
        return {token for path in paths for line in self.lines(path) for token in IDENTIFIER.findall(line)}


def unit_diff(repo: GitRepo, unit: Unit) -> UnitDiff:
    parents = unit.commit.parents
    if not parents:
        return UnitDiff()
    raw = repo.run("diff", "--no-color", "--no-ext-diff", "--no-renames", "-U0", parents[0], unit.sha, check=False)
    files = split_diff(raw)
    patch = parse_text(files)
    diff = UnitDiff(unreadable=bool(raw.strip()) and not patch and any(not file.binary for file in files))
    for patched in patch:
        path = patched.path
        for hunk in patched:
            lines = range(hunk.target_start, hunk.target_start + max(hunk.target_length, 1))
            diff.touched.setdefault(path, []).extend(lines)
            if not hunk.source_length:
                diff.inserted.setdefault(path, []).extend(lines)
            for line in hunk:
                if line.is_added:
                    diff.added.setdefault(path, []).append(line.value.rstrip("\n"))
                elif line.is_removed:
                    diff.removed.setdefault(path, []).append(line.value.rstrip("\n"))
    return diff


def unit_diffs(repo: GitRepo, units: list[Unit]) -> dict[str, UnitDiff]:
    return {unit.sha: unit_diff(repo, unit) for unit in units}


def tests_touched(
    diff: UnitDiff,
    test_paths: list[str],
    read: Callable[[str], str | None],
    read_before: Callable[[str], str | None] | None = None,
) -> set[str]:
    """The names (functions, classes) of the tests whose lines, decorators and parameter lists included, a unit
    adds or changes in `test_paths`; `read(path)` is the file as the unit left it, `read_before(path)` as it found
    it: a test whose code is the same but for comments, layout and annotations is not changed."""
    names: set[str] = set()
    for path in test_paths:
        lines = set(diff.touched.get(path, []))
        source = read(path) if lines else None
        earlier = (read_before(path) or "") if source and read_before else ""
        before = {span.test_id: code_of(earlier, span, path) for span in declared_tests(path, earlier)}
        spans = declared_tests(path, source) if source else []
        for span in spans:
            if any(span.first <= line <= span.last for line in lines):
                if before.get(span.test_id) != code_of(source, span, path):
                    names |= names_in_test_id(span.test_id)
        # a row added to a table outside every test, above tests whose titles are templates made from its rows
        # (node-jsonwebtoken's `''` added to the values `should error with with value ${util.inspect(v)}` runs over)
        outside = [line for line in lines if not any(span.first <= line <= span.last for span in spans)]
        for span in spans:
            if "${" in span.test_id and any(line < span.first for line in outside):
                names |= names_in_test_id(span.test_id)
    return names
