"""Housekeeping by what a commit changes, whatever its wording.

A commit whose non-test diff touches only CI, packaging, build, linters, docs, docs tooling, type
stubs or repository files (`planning.housekeeping.files`), reformats code without changing it (the
same Python AST, docstrings aside; elsewhere the same text, whitespace aside), or only sets version
numbers (`planning.housekeeping.version_lines`) or only comments and docstrings, is housekeeping;
so are a commit and its revert in one range (together they change nothing). It stays in the ground
truth and never speaks: no title, description or hint. Each verdict carries its type and the
reason, recorded per commit in the plan.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from ..files import FileClassifier
from ..gitio import GitRepo
from ..rules import PlanningRules
from .pulls import Unit
from .unit_diffs import UnitDiff

_REVERT = re.compile(r'^Revert "(.+)"\s*$')
_REVERTED_SHA = re.compile(r"This reverts commit ([0-9a-f]{7,40})")


_C_LIKE = (".go", ".rs", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".java", ".c", ".h", ".cc", ".cpp", ".hpp")
_COMMENTS = re.compile(rb"/\*.*?\*/|(?<![:\"'])//[^\n]*", re.S)  # (not the `//` of a URL in a string)


def _without_comments(source: bytes) -> bytes:
    return re.sub(rb"\s+", b"", _COMMENTS.sub(b"", source))


@dataclass(frozen=True)
class Chore:
    """Why a commit is housekeeping: its type (`ci`, `packaging`, `formatting`, `version`, `revert`, ...)."""

    type: str
    reason: str


def _without_docstrings(tree: ast.AST) -> tuple[str, bool]:
    """The tree's dump with docstrings blanked, and whether it had any."""
    found = False
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                value.value, found = "", True
    return ast.dump(tree), found


class HousekeepingReader:
    """Reads each unit's diff against `planning.housekeeping` (one reader per plan)."""

    def __init__(self, repo: GitRepo, rules: PlanningRules, classify: FileClassifier):
        self.repo, self.rules, self.classify = repo, rules.housekeeping, classify
        self.version_lines = [re.compile(pattern) for pattern in self.rules.version_lines]

    def reverted_pairs(self, units: list[Unit]) -> dict[str, Chore]:
        """Commits reverted inside the range, and their reverts: together they change nothing."""
        by_sha = {unit.sha: unit for unit in units}
        by_subject = {unit.commit.subject: unit for unit in units}
        chores: dict[str, Chore] = {}
        for unit in units:
            named = _REVERTED_SHA.search(unit.commit.body or "")
            subject = _REVERT.match(unit.commit.subject)
            target = None
            if named:
                target = next((other for sha, other in by_sha.items() if sha.startswith(named[1])), None)
            if target is None and subject:
                target = by_subject.get(subject[1])
            if target is not None and target.sha != unit.sha:
                chores[target.sha] = Chore("revert", f"reverted later in this range by {unit.sha[:10]}")
                chores[unit.sha] = Chore("revert", f"reverts {target.sha[:10]}, from this range")
        return chores

    def of(self, unit: Unit, diff: UnitDiff) -> Chore | None:
        """The unit's housekeeping verdict, or None when it changes what the code does (or only tests)."""
        paths = [file.path for file in unit.files if not self.classify.is_test(file.path)]
        if not paths:
            return None
        kinds: Counter = Counter()
        for path in paths:
            kind = self.classify.housekeeping_type(path) or self._unchanged_code(unit, path, diff)
            if kind is None:
                return None
            kinds[kind] += 1
        if set(kinds) <= {"docs"} and len(paths) < len(unit.files):
            return None  # tests with their docs or release-note fragment: test work (what it is, its role says)
        names = ", ".join(kind for kind, _ in kinds.most_common())
        main = kinds.most_common(1)[0][0]
        return Chore(main, f"its non-test changes are {names} only ({len(paths)} file{'s' * (len(paths) > 1)})")

    def _unchanged_code(self, unit: Unit, path: str, diff: UnitDiff) -> str | None:
        """`version`, `formatting` or `docs` when the source file's change leaves its code as it was."""
        lines = [line for line in diff.lines(path) if line.strip()]
        if lines and self.version_lines and all(any(p.search(line) for p in self.version_lines) for line in lines):
            return "version"
        if not self.rules.formatting or not unit.commit.parents:
            return None
        parent = unit.commit.parents[0]
        before, after = self.repo.show(parent, path), self.repo.show(unit.sha, path)
        if before is None or after is None:
            return None  # added or removed: not a reformatting
        if path.endswith(".py"):
            try:
                (old, old_docs), (new, new_docs) = (_without_docstrings(ast.parse(text)) for text in (before, after))
            except (SyntaxError, ValueError):
                return None
            if old != new:
                return None
            same_docs = ast.dump(ast.parse(before)) == ast.dump(ast.parse(after))
            return "formatting" if same_docs else "docs"
        if re.sub(rb"\s+", b"", before) == re.sub(rb"\s+", b"", after):
            return "formatting"
        if path.endswith(_C_LIKE) and _without_comments(before) == _without_comments(after):
            return "docs"  # only comments (Go, Rust, TypeScript doc comments) change
        return None
