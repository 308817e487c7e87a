"""Acceptance tests of an implementation detail: a test that calls a private helper the change adds.

A held-out reader rates a task whose tests call `areColorsOnInTheEnv` or `objAsSlice` (go-pretty, the sixteenth
set) or `_jsonWriter.start` (log, the eighteenth) as specified with the tests hidden only if the text states the
helper's exact behaviour, which no release note does: a Dev who builds the feature another way fails them. So
when the milestone has other graded tests, such tests are set aside like collateral ones (`rejected` says why);
when they are all it has, they stay.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from .. import syntax
from ..gitio import GitRepo
from .classification import Classification
from .declared_tests import declared_tests
from .interface import changed_sources, declarations, selected_spans
from .interface_python import definitions, usage

# a Go helper's name: unexported and of two words at least (`objAsSlice`), so a local `result` is no match
_GO_PRIVATE = re.compile(r"^[a-z][a-z0-9]*[A-Z_]\w*$")


def _private(name: str, path: str) -> bool:
    short = name.rsplit(".", 1)[-1]
    if path.endswith(".go"):
        return bool(_GO_PRIVATE.match(short))
    return short.startswith("_") and not short.endswith("__")


def new_private_names(repo: GitRepo, base: str, verify: str, source_paths: list[str]) -> set[str]:
    """The short names of the private functions, methods and types the change adds to `source_paths` (Python and
    Go; a file moved keeps its names)."""
    found: set[str] = set()
    for path, (before, after) in changed_sources(repo, base, verify, source_paths).items():
        if after is None:
            continue
        try:
            if path.endswith(".py"):
                old, new = definitions(before or "", path), definitions(after, path)
            elif path.endswith(".go"):
                old, new = declarations(before or "", path), declarations(after, path)
            else:
                continue
        except SyntaxError:
            continue
        found |= {
            name.rsplit(".", 1)[-1]
            for name, definition in new.items()
            if name not in old and definition.kind in ("function", "method", "class") and _private(name, path)
        }
    return found


def private_reader(
    repo: GitRepo, base: str, verify: str, test_paths: list[str], source_paths: list[str]
) -> Callable[[str], str]:
    """Why a test id tests a private helper the change adds ("" when it does not): its body calls one."""
    helpers = new_private_names(repo, base, verify, source_paths)
    files = []  # (path, source, its tests' spans) of the Python and Go test files
    for path in test_paths if helpers else []:
        blob = repo.show(verify, path)
        if blob is not None and path.endswith((".py", ".go")):
            source = blob.decode("utf-8", "replace")
            files.append((path, source, declared_tests(path, source)))

    def why(test_id: str) -> str:
        for path, source, spans in files:
            lines = [(span.first, span.last) for span in selected_spans(spans, [test_id])]
            if not lines:
                continue
            try:
                names = usage(source, lines).names if path.endswith(".py") else syntax.used(path, source, lines)[0]
            except SyntaxError:
                continue
            if called := sorted(names & helpers):
                return f"it tests {', '.join(f'`{name}`' for name in called)}, a private helper the change adds"
        return ""

    return why


def set_aside_private(classification: Classification, why: Callable[[str], str]) -> Classification:
    """The classification with the tests of private helpers out of grading (`rejected` says why), unless they are
    all it grades."""
    private = {test: reason for test in classification.fail_to_pass if (reason := why(test))}
    graded = [test for test in classification.fail_to_pass if test not in classification.collateral]
    if not private or all(test in private for test in graded):
        return classification
    kept = [test for test in classification.fail_to_pass if test not in private]
    rejected = {**classification.rejected, **{test: f"private: {reason}" for test, reason in private.items()}}
    return replace(classification, fail_to_pass=kept, rejected=rejected)
