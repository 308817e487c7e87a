"""The code a unit of work changes, named by the innermost definitions its hunks touch.

Two features are related when they change one definition (a function, a method, a Go method, a
module-level table), not merely one file or one class: in a library whose code sits in one module or one
class (more-itertools' `more.py`, pflag's `flag.go`, commander's `Command`), sharing it says nothing, and a
milestone that grew by it was a grab-bag. Python is read with `ast`; Go, TypeScript/JavaScript and Rust as
syntax trees (`syntax.definitions`). A file neither reads, or one that does not parse, counts whole (`path:*`,
related to any change of that file). Imports and `__all__` (every new function touches them) name nothing, and
lines inserted into a table (a module-level dict, a Go `var` map, a JavaScript constant) name only that entry:
sprig's every template function is one more line of `genericMap`, which related them all into grab-bags.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from ..gitio import GitRepo
from ..syntax import definitions
from .pulls import Unit
from .unit_diffs import UnitDiff

WHOLE_FILE = "*"
TABLE_ENTRY = "+"  # `path:table+`: lines inserted into a table, no change of it another change shares
_IGNORED = {"__all__", "__version__", "__author__", "__doc__"}


def python_spans(source: str) -> list[tuple[int, int, str, bool]]:
    """(first line, last line, name, whether it is a table: an assignment) of a Python module's top-level
    definitions and assignments, and of each class's methods (`Class.method`: a change inside a method touches it,
    not its whole class)."""
    spans = []
    for node in ast.parse(source).body:
        first = min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            spans.append((first, last, node.name, False))
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([member.lineno, *(decorator.lineno for decorator in member.decorator_list)])
                    spans.append((start, member.end_lineno or member.lineno, f"{node.name}.{member.name}", False))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [target.id for target in targets if isinstance(target, ast.Name) and target.id not in _IGNORED]
            spans += [(first, last, name, True) for name in names[:1]]
        elif isinstance(node, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, `try: import x`: what it defines
            spans += [(node.lineno, last, f"block@{node.lineno}", False)]
    return spans


def spans_of(path: str, source: str) -> list[tuple[int, int, str, bool]] | None:
    """The file's definitions, or None when no reader knows its language or it does not parse."""
    try:
        if path.endswith((".py", ".pyi")):
            return python_spans(source)
    except (SyntaxError, ValueError):
        return None
    found = definitions(path, source)
    return None if found is None else [(span.first, span.last, span.name, span.kind == "constant") for span in found]


def footprint(
    touched: dict[str, list[int]],
    paths: Iterable[str],
    read: Callable[[str], str | None],
    inserted: dict[str, list[int]] | None = None,
) -> set[str]:
    """`path:definition` for each definition the touched lines (`touched[path]`, in the file as the unit left
    it, `read(path)`) fall in, over `paths` (the unit's source files); `path:*` for a file no reader knows, or
    one deleted. Lines outside every definition (imports, a module docstring) name nothing; a table's lines among
    `inserted` (hunks that remove nothing) are `path:table+`."""
    found: set[str] = set()
    for path in paths:
        lines = touched.get(path, [])
        source = read(path) if lines else None
        spans = spans_of(path, source) if source is not None else None
        if spans is None:
            found.add(f"{path}:{WHOLE_FILE}")
            continue
        added = set((inserted or {}).get(path, []))
        for line in set(lines):  # the innermost definition: a method, not its whole class
            holding = [(last - first, name, table) for first, last, name, table in spans if first <= line <= last]
            if holding:
                _, name, table = min(holding)
                found.add(f"{path}:{name}{TABLE_ENTRY if table and line in added else ''}")
    return found


def unit_footprint(repo: GitRepo, unit: Unit, diff: UnitDiff, is_source: Callable[[str], bool]) -> set[str]:
    """The footprint of one unit of history: its source files' touched definitions, read as it left them."""

    def read(path: str) -> str | None:
        data = repo.show(unit.sha, path)
        return data.decode("utf-8", "replace") if data is not None else None

    return footprint(diff.touched, [file.path for file in unit.files if is_source(file.path)], read, diff.inserted)


def shared(first: set[str], second: set[str]) -> set[str]:
    """What two footprints have in common: a definition both change, or a file one of them changes whole."""
    files = lambda footprint: {key.rsplit(":", 1)[0] for key in footprint}  # noqa: E731
    common = {key for key in first & second if not key.endswith(TABLE_ENTRY)}  # entries side by side share nothing
    for mine, theirs in ((first, second), (second, first)):
        common |= {key for key in mine if key.endswith(f":{WHOLE_FILE}") and key.rsplit(":", 1)[0] in files(theirs)}
    return common
