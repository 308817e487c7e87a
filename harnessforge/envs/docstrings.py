"""A source file read as a page of its own documentation: its docstrings and doc comments, nothing else.

Many libraries document in the code, not in a README: tabulate's "Add table format colon_grid" is one changelog
line, while the change adds to `tabulate()`'s docstring what the format prints (an example table, colons and
all) — exactly what its tests pin. `documentation.documented` quotes such a page as it quotes a README; this
module makes the page. Every other line is blank, so the page's line numbers are the file's and a diff's added
lines still point into it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from .. import syntax

_DOCTEST = re.compile(r"^(>>>|\.\.\.)( |$)")
_PROSE = re.compile(r"[\"'`(]?[A-Za-z]")  # a paragraph opening with a word (or a quoted one) is no example output
_COMMENT_MARK = re.compile(r"^\s*(?:/{2,3}!?|/\*\*?|\*/|\*(?!\*)) ?")


@dataclass(frozen=True)
class DocumentationPage:
    """`text`: the file with every line that is not documentation blank; `owned`: the lines of a definition's own
    docstring after its first paragraph (which the interface already quotes), by the definition's short name."""

    text: str
    owned: dict[int, str]
    owners: dict[int, str] = None  # every documentation line's definition, qualified (`File.__init__`); "" the module


def page(path: str, source: str) -> DocumentationPage | None:
    """The file's docstrings (Python) or doc comments (JavaScript, TypeScript, Go, Rust) as a page; None for a file
    no reader here parses."""
    if path.endswith(".py"):
        found = _python(source)
    elif syntax.language_of(path):
        found = _commented(path, source)
    else:
        return None
    if found is None:
        return None
    lines = [""] * len(source.split("\n"))
    owned: dict[int, str] = {}
    owners: dict[int, str] = {}
    for qualified, first, text in found:
        owner = qualified.rsplit(".", 1)[-1]
        body = _as_page(text, dedent=path.endswith(".py"))
        for offset, line in enumerate(body):
            if first + offset <= len(lines):
                lines[first + offset - 1] = line
                owners[first + offset] = qualified
        if owner:
            start = next((offset for offset, line in enumerate(body) if line.strip()), len(body))
            opening = next((offset for offset in range(start, len(body)) if not body[offset].strip()), len(body))
            owned |= {first + offset: owner for offset in range(opening, len(body)) if body[offset].strip()}
    return DocumentationPage("\n".join(lines), owned, owners)


def _python(source: str) -> list[tuple[str, int, str]] | None:
    """(owner's qualified name, `Class.method`, or "" for the module, first line, the docstring as written) for every
    docstring."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[tuple[str, int, str]] = []
    names = {tree: ""}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names[child] = f"{names.get(node, '')}.{child.name}".lstrip(".")
            elif node in names:
                names[child] = names[node]  # a definition under an `if` or `try` keeps its owner's name
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            raw = "\n".join(source.split("\n")[first.lineno - 1 : first.end_lineno])
            opening = re.match(r'\s*[rRuU]?("""|\'\'\'|"|\')', raw)
            if opening is None:
                continue
            text = raw[opening.end() :]
            closing = text.rfind(opening[1])  # a comment may follow it: `"""  # noqa: E501`
            text = text[:closing] if closing >= 0 else text
            found.append((names.get(node, ""), first.lineno, text))
    return found


def _commented(path: str, source: str) -> list[tuple[str, int, str]] | None:
    """The comments right above each definition, markers stripped, with the definition's short name."""
    definitions = syntax.definitions(path, source)
    if definitions is None:
        return None
    lines = source.split("\n")
    found: list[tuple[str, int, str]] = []
    for definition in definitions:
        last = definition.first - 1  # the line above the declaration
        first = last
        while first >= 1 and _is_comment(lines[first - 1]):
            first -= 1
        if first == last:
            continue
        # a tab after `//` indents code in Go's doc comments (`//\tif twdw.IsEastAsian() {`): kept as indented code
        body = [
            _COMMENT_MARK.sub("", line.strip(), count=1).rstrip().expandtabs(4)
            for line in lines[first:last]
            if not syntax.directive(line)  # `//gocyclo:ignore` is the tool's, not the reader's
        ]
        body = [line.removesuffix("*/").rstrip() for line in body]
        found.append((definition.name, first + 1, "\n".join(body)))
    return found


def _is_comment(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(("//", "/*", "*")) and not stripped.startswith("*/*")


def _as_page(text: str, dedent: bool = True) -> list[str]:
    """A docstring as page lines: its first line as written, the rest dedented together (a doc comment's markers
    are its margin: what is indented past them is code); a doctest session and the output after it indented as
    code, so the page's paragraphs read as the docstring's."""
    head, _, rest = text.partition("\n")
    rest = textwrap.dedent(rest) if dedent else rest
    body = [head.strip(), *rest.split("\n")] if rest else [head.strip()]
    shown: list[str] = []
    in_example = False
    for line in body:
        if not line.strip() or line.strip() in ("\\b", "\b"):  # click's `\b` keeps a paragraph unwrapped: no text
            shown.append("")
            continue
        if _DOCTEST.match(line.strip()):
            in_example = True
        elif not shown or not shown[-1]:  # a paragraph after an example is its output unless it reads as prose
            in_example = in_example and not _PROSE.match(line.strip())
        shown.append(f"    {line}" if in_example else line)
    return shown


def readable(path: str) -> bool:
    """A source file whose docstrings or doc comments `page` reads."""
    return path.endswith(".py") or syntax.language_of(path) is not None
