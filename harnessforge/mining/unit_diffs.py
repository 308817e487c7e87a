"""The lines each unit of history changed, file by file: what housekeeping rules and entry placement
read (a version line, an identifier a changelog entry names), and the test functions a headline's commits touch.

One `git diff -U0` per unit against its first parent (a merge's whole change), parsed by unidiff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..diffs import parse_text, split_diff
from ..gitio import GitRepo
from .pulls import Unit

IDENTIFIER = re.compile(r"--?[A-Za-z][\w-]*|[A-Za-z_][\w]*")


@dataclass
class UnitDiff:
    """The added and removed lines of one unit, by path; `unreadable` when unidiff could not parse it."""

    added: dict[str, list[str]] = field(default_factory=dict)
    removed: dict[str, list[str]] = field(default_factory=dict)
    contexts: dict[str, list[str]] = field(default_factory=dict)  # each hunk's function context (git's @@ line)
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
            if hunk.section_header:
                diff.contexts.setdefault(path, []).append(hunk.section_header)
            for line in hunk:
                if line.is_added:
                    diff.added.setdefault(path, []).append(line.value.rstrip("\n"))
                elif line.is_removed:
                    diff.removed.setdefault(path, []).append(line.value.rstrip("\n"))
    return diff


def unit_diffs(repo: GitRepo, units: list[Unit]) -> dict[str, UnitDiff]:
    return {unit.sha: unit_diff(repo, unit) for unit in units}


# A test function or class on a line: Python's `def test_x` / `class TestX`, Go's `func TestX`, a JS `it("...")`
# is not named (its tests are read by file).
_TEST_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class|func)\s+(\w*[Tt]est\w*)")


def tests_touched(diff: UnitDiff, test_paths: list[str]) -> set[str]:
    """The test functions and classes a unit adds, or changes inside (a hunk's function context), in `test_paths`."""
    lines = [line for path in test_paths for line in diff.added.get(path, []) + diff.contexts.get(path, [])]
    return {found[1] for line in lines if (found := _TEST_DEFINITION.match(line))}
