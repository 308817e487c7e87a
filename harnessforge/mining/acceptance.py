"""Candidate acceptance tests: the tests a milestone's test patch adds or changes.

Each changed line of a test file is mapped to the test that contains it (Python via `ast`,
Go/Rust/JS/TS by their test declarations) and traced with `git blame --first-parent` to the
mainline commit that wrote it. A test whose changes all come from commits the description does
not cover (housekeeping, test-only tidy-ups) is left out, with the reason recorded.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..gitio import GitRepo, display
from ..models import ExcludedTest

_DECLS = {
    ".go": re.compile(r"^func (Test\w+)\(", re.M),
    ".rs": re.compile(r"#\[(?:tokio::)?test\][\s\S]{0,200}?\bfn\s+(\w+)", re.M),
    ".js": re.compile(r"^\s*(?:it|test)\(\s*['\"`](.+?)['\"`]", re.M),
}
_DECLS[".ts"] = _DECLS[".tsx"] = _DECLS[".jsx"] = _DECLS[".mjs"] = _DECLS[".js"]


@dataclass(frozen=True)
class TestSpan:
    test_id: str
    first: int  # 1-based, inclusive
    last: int


def python_tests(path: str, source: str) -> list[TestSpan]:
    tree = ast.parse(source)
    spans = []

    def span(node: ast.AST) -> tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return first, node.end_lineno or node.lineno

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            spans.append(TestSpan(f"{path}::{node.name}", *span(node)))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    spans.append(TestSpan(f"{path}::{node.name}::{sub.name}", *span(sub)))
    return spans


def declared_tests(path: str, source: str) -> list[TestSpan]:
    """Tests in a file with the line range each covers (a declaration up to the next one)."""
    if path.endswith(".py"):
        try:
            return python_tests(path, source)
        except SyntaxError:
            pass
        pattern = re.compile(r"^(?:async\s+)?def (test\w*)\(", re.M)
    else:
        pattern = next((p for ext, p in _DECLS.items() if path.endswith(ext)), None)
        if pattern is None:
            return []
    matches = list(pattern.finditer(source))
    total = source.count("\n") + 1
    spans = []
    for m, nxt in zip(matches, matches[1:] + [None]):
        first = source.count("\n", 0, m.start()) + 1
        last = source.count("\n", 0, nxt.start()) if nxt else total
        spans.append(TestSpan(f"{path}::{m[1]}", first, last))
    return spans


def trace_tests(
    repo: GitRepo,
    base: str,
    verify: str,
    changed_lines: dict[str, list[int]],
    touched_by: dict[str, set[str]],
    described: dict[str, bool],
    labels: dict[str, str],
) -> tuple[list[str], list[ExcludedTest]]:
    """(acceptance tests, excluded tests) for the test files' changed (added) line numbers.

    `touched_by[path]` are the mainline commits that changed the file; `described[sha]` says
    whether the description covers commit `sha`; `labels[sha]` names it in exclusion reasons.
    Blame runs only for files that an undescribed commit touched: otherwise every changed
    test is covered whoever wrote which line.
    """
    accepted: list[str] = []
    excluded: list[ExcludedTest] = []
    for path, lines in sorted(changed_lines.items()):
        blob = repo.show(verify, path)
        if blob is None:
            continue
        spans = declared_tests(display(path), blob.decode("utf-8", "replace"))
        if not spans:
            continue
        writers = touched_by.get(path, set())
        needs_blame = not writers or not all(described.get(s, False) for s in writers)
        origins = repo.blame_origins(base, verify, path) if needs_blame else None
        for span in spans:
            changed = [n for n in lines if span.first <= n <= span.last]
            if origins is None:
                shas = set(writers) if changed else set()
            else:
                shas = {origins[n - 1] for n in changed if n - 1 < len(origins)}
                shas.discard(None)
            if not shas:
                continue
            if any(described.get(s, False) for s in shas):
                accepted.append(span.test_id)
            else:
                who = ", ".join(sorted(labels.get(s, s[:10]) for s in shas))
                excluded.append(
                    ExcludedTest(
                        test=span.test_id, reason=f"changed only by {who}, which the description does not cover"
                    )
                )
    return accepted, excluded
