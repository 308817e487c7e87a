"""A milestone's interface and test criteria, read statically from its diff: what the Dev must provide.

The interface is every name the acceptance tests use that the base lacks, with its declaration and
the first line of its docs: functions, classes, methods, new parameters, constants (Python through
`ast`, Go, TypeScript/JavaScript and Rust through their declarations), and the literals the tests
expect that only the new code holds (a `--flag`, a config key, an exact message). The test criteria
are one line per acceptance test: its docstring, else its name read as a sentence. Planning reads
them for the traced tests; validation again for FAIL_TO_PASS. A file no extractor reads is a warning
naming the milestone, never an error.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import syntax
from ..gitio import GitRepo
from ..models import AcceptanceCriterion, InterfaceItem
from .declared_tests import TestSpan, declared_tests
from .interface_python import Definition, Usage, definitions, first_sentence, usage

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.){2,200})\"|'((?:[^'\\\n]|\\.){2,200})'|`([^`\n]{2,200})`")


@dataclass
class Interface:
    """What the acceptance tests need that the base lacks, and what they check."""

    items: list[InterfaceItem] = field(default_factory=list)
    criteria: list[AcceptanceCriterion] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    used: Usage = field(default_factory=Usage)  # what the tests use: names, keywords, strings
    documentation: list[str] = field(default_factory=list)  # the user documentation the change adds about them
    pinned: set[str] = field(default_factory=set)  # the messages the tests expect that only the new code holds


def _text(repo: GitRepo, rev: str, path: str) -> str | None:
    blob = repo.show(rev, path)
    return None if blob is None else blob.decode("utf-8", "replace")


def _short_names(test_id: str) -> set[str]:
    """What a runner's id may call a test: `a.py::C::test_x[1]` -> test_x; `pkg::TestX/sub` -> TestX;
    `file > suite > does x` -> does x, or (node-tap's subtests made in a loop) suite."""
    last = re.sub(r"\[.*\]$", "", test_id.rsplit("::", 1)[-1])
    return {last, last.split("/", 1)[0], test_id.rsplit(" > ", 1)[-1], last.split(" > ", 1)[0]}


def _selected(spans: list[TestSpan], test_ids: list[str]) -> list[TestSpan]:
    """The spans of `test_ids`: by whole id, else (a runner's id spelled otherwise) by the test's own name."""
    unparametrised = {re.sub(r"\[.*\]$", "", test_id) for test_id in test_ids}
    exact = {span.test_id for span in spans} & unparametrised
    wanted = {name for test_id in unparametrised - exact for name in _short_names(test_id)}
    return [span for span in spans if span.test_id in exact or span.test_id.rsplit("::", 1)[-1] in wanted]


# an assertion line a test adds: what it expects, in the test's own words
_ASSERTION = re.compile(
    r"^\s*(?:assert\b|self\.assert\w*\(|with (?:pytest|self)\.(?:raises|assertRaises)\w*\(|expect\(|"
    r"[\w.]+\.assert_(?:called|not_called|any_call|has_calls|awaited)\w*\(|"
    r"t\.(?:is|not|deepEqual|true|false|throws|snapshot)\w*\(|assert(?:_eq|_ne)?!\(|assert\.\w+\(|"
    # node-tap and tape (`t.equal`, `t.same`, `t.match`, `t.ok`), supertest's chained `.expect(200, 'tobi')`
    r"t\.(?:equal|strict|same|match|ok|has|rejects|error)\w*\(|\.expect\()"
)
# a check that pins an edge a statement is least likely to say: nothing, empty, an error, a panic
_EDGE = re.compile(
    r"\b(?:nil|None|null|undefined)\b|\b(?:is|assert|require)\.(?:Nil|Empty|Zero|Panics\w*|Error)\(|==\s*(?:\[\]|\{\}|\"\"|'')"
    r"|\b(?:raises|assertRaises|toThrow|throws|rejects|toBeNull|toBeUndefined)\b"
)


_MULTILINE_QUOTES = re.compile(r'"""|\'\'\'')  # (not Go's raw strings: `\\n` in them is no line end)


def _statement(lines: list[str], start: int, last: int, reach: int = 8) -> str:
    """The statement opening at line `start` (1-based), continued until its brackets close, on one line. A string
    that spans lines (Python's triple quotes) keeps its line ends as `\\n` escapes, the same string, and its lines
    as they are: the layout a test expects is exact."""
    text, depth, quoted, spanning = "", 0, False, False
    for number in range(start, min(last, start + reach) + 1):
        raw = lines[number - 1]
        pieces = _MULTILINE_QUOTES.split(raw)
        code = "".join(pieces[1 if quoted else 0 :: 2])  # brackets inside a string do not count
        depth += sum(code.count(opening) for opening in "([{") - sum(code.count(closing) for closing in ")]}")
        text = f"{text}\\n{raw}" if quoted else f"{text} {raw.strip()}".strip()
        spanning = spanning or quoted
        quoted ^= len(pieces) % 2 == 0  # an odd number of quotes opens or closes a string
        if quoted or depth > 0:
            continue
        if spanning:
            return text.removesuffix(":")
        text = " ".join(text.removesuffix(":").split())
        return re.sub(r",?\s+([)\]}])", r"\1", re.sub(r"([(\[{])\s+", r"\1", text))
    return ""  # never closes within reach: not quotable


# Go has no assert statement: a check is an `if` whose block reports (`t.Errorf`), a row of a test table, or the
# value a test expects (`expectedMethods := "GET,OPTIONS"`, `want := 3`).
_GO_CHECK = re.compile(r"^\s*(?:if\b.*\{|\{.*\},?|(?:expected|want)\w*\s*:?=\s*\S.*)\s*$", re.I)
_GO_REPORT = re.compile(r"\bt\.(?:Error|Fatal|Fail)")
# testify's `is.Equal(got, want)`, `assert.Nil(t, got)`, `require.PanicsWithValue(t, "msg", f)`, go-playground's
# `Equal(t, got, want)`: a check when it holds a literal or pins an edge (nil, empty, a panic, an error)
_NO_ERROR = re.compile(r"\berrs?\w*\s*,\s*nil\)|\bNil\((?:t,\s*)?errs?\w*\)")  # `Equal(t, errs, nil)`: boilerplate
_GO_ASSERT = re.compile(
    r"^\s*(?:(?:is|assert|require|should|r|a)\.(?:Equal|NotEqual|Nil|Empty|NotEmpty|True|False|Len|Contains|"
    r"NotContains|ElementsMatch|Subset|Panics|NotPanics|EqualError|ErrorContains|ErrorIs|Error|Zero|NotZero|Same|"
    r"InDelta|Regexp|Greater|Less|IsType|JSONEq)\w*\(|(?:Equal|NotEqual|PanicMatches|MatchRegex|AssertError)\(t\b)"
)
_GO_UNEXPECTED_ERROR = re.compile(r"^\s*if\s+(?:.*;\s*)?err\s*!=\s*nil\s*\{")  # boilerplate, says nothing
_LITERAL = re.compile(r"[\"']|\b\d")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s")


# A row of a table of cases: a Python parametrize list's tuple (above the `def`), a Go table's struct literal.
_PARAMETRIZE = re.compile(r"^\s*@pytest\.mark\.parametrize\(")
_PARAMETER_ROW = re.compile(r"^\s*(?:pytest\.param)?\(.*\),?\s*$")


def _is_check(path: str, line: str, statement: str, decorating: bool = False) -> bool:
    """Whether an added line opens a check worth quoting; `decorating`: it is above a Python test's `def`."""
    if not path.endswith(".go"):
        if decorating:
            return _PARAMETER_ROW.match(line) is not None and bool(_LITERAL.search(statement))
        return _ASSERTION.match(line) is not None
    if _GO_ASSERT.match(line):
        return bool(_LITERAL.search(statement) or _EDGE.search(statement)) and not _NO_ERROR.search(statement)
    if not _GO_CHECK.match(line) or _GO_UNEXPECTED_ERROR.match(line):
        return False
    return bool(_GO_REPORT.search(statement)) if line.lstrip().startswith("if") else bool(_LITERAL.search(statement))


def _examples(
    path: str,
    source: str,
    span: TestSpan,
    added: set[int],
    limit: int,
    new_value: Callable[[str], bool] = lambda statement: False,
    new_values: int = 0,
    longest: int = 200,
) -> list[str]:
    """Up to `limit` distinct checks the diff adds to the test, each whole on one line: assertions and the rows of
    a parametrize list, or in Go an `if` that reports a failure and the rows of the test's table; then up to
    `new_values` more that expect a value only the new source holds (`new_value`) or pin an edge (nil, empty, an
    error or a panic): with the tests hidden, the Dev could not guess an exact message, a new locale's words or
    that `Clone(nil)` is nil."""
    lines = source.splitlines()
    body = lines[span.first - 1 : span.last]
    if path.endswith(".go") and any(line.strip().startswith("// Output:") for line in body):  # a Go example
        start = next(at for at, line in enumerate(body) if line.strip().startswith("// Output:"))
        output = list(itertools.takewhile(lambda line: line.startswith("//"), (line.strip() for line in body[start:])))
        output = [line.removeprefix("//").strip() for line in output]  # the comment block under `// Output:` only
        printed = " / ".join(line for line in [output[0].removeprefix("Output:").strip(), *output[1:]] if line)
        return [f"prints: {printed}"[:longest]] if printed else []
    found: list[str] = []
    last = min(span.last, len(lines))
    define = next((at for at in range(span.first, last + 1) if _DEF.match(lines[at - 1])), span.first)
    inside: set[int] = set()  # the lines of a parametrize list quoted whole
    for number in range(span.first, define) if path.endswith(".py") and limit else []:
        if _PARAMETRIZE.match(lines[number - 1]):
            statement = _statement(lines, number, define - 1, reach=40)
            whole = set(range(number, define)) <= added  # a new parametrization: its values are what it tests
            if statement and len(statement) <= longest and whole:
                found.append(statement)  # the values it runs with, one per line ("true", "yes", "1", ...)
                inside |= set(range(number, define))
            break
    for number in range(span.first, last + 1):
        if len(found) >= limit + new_values:
            break
        if number not in added or number in inside:
            continue
        statement = _statement(lines, number, span.last).removesuffix(",")
        if not statement or len(statement) > longest or statement in found:
            continue
        if _is_check(path, lines[number - 1], statement, path.endswith(".py") and number < define):
            edge = _EDGE.search(statement) and not _NO_ERROR.search(statement)
            if len(found) < limit or new_value(statement) or edge:
                found.append(statement)
    return found


def _pinned(source: str, span: TestSpan, added: set[int], new_value: Callable[[str], bool]) -> set[str]:
    """The messages (strings of two words or more) the lines a test adds expect that only the new source holds:
    validator's Thai translations, dotenv's ten tips. A task that gives none of them cannot be solved as written."""
    lines = source.splitlines()
    found = set()
    for number in range(span.first, min(span.last, len(lines)) + 1):
        if number not in added:
            continue
        for match in _STRING.finditer(lines[number - 1]):
            value = next(group for group in match.groups() if group is not None)
            if len(value.split()) > 1 and new_value(match[0]):
                found.add(value)
    return found


def _new_value_reader(before: list[str], after: list[str]) -> Callable[[str], bool]:
    """Whether a check quotes a value only the new source holds: a string literal, one of its words or one of its
    phrases, found in the changed source files after the change and not before (`"2 ሳምንታት"` when the locale is
    new; "invalid identifier" of `Error('invalid identifier: a/b')` when the source builds it in a template)."""
    old, new = "\n".join(before), "\n".join(after)

    def holds(statement: str) -> bool:
        for match in _STRING.finditer(statement):
            value = next(group for group in match.groups() if group is not None)
            words = re.findall(r"[^\s\"'`.,:;()\[\]{}]{3,}", value)
            phrases = [part.strip() for part in re.split(r"[:;,(){}\[\]]", value) if len(part.split()) > 1]
            pieces = [value, *words, *phrases]  # a phrase: "invalid identifier" of a message built in a template
            if any(piece in new and piece not in old for piece in pieces):
                return True
        return False

    return holds


def _added_lines(repo: GitRepo, base: str, verify: str, path: str) -> set[int]:
    """The line numbers (at `verify`) the diff from `base` adds to `path`."""
    diff = repo.run("diff", "--no-color", "--no-ext-diff", "-U0", base, verify, "--", path, check=False).decode(
        "utf-8", "replace"
    )
    lines: set[int] = set()
    for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.M):
        lines.update(range(int(start), int(start) + int(count or 1)))
    return lines


def _helpers(path: str, source: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans of the test file's own functions (Go, TypeScript/JavaScript, Rust) that the tests in `spans` call,
    theirs too."""
    functions = {
        definition.name: (definition.first, definition.last)
        for definition in syntax.definitions(path, source) or []
        if definition.kind == "function"
    }
    found: list[tuple[int, int]] = []
    pending = list(spans)
    while pending:
        names, _ = syntax.used(path, source, [pending.pop()])
        for name in names:
            span = functions.get(name)
            if span and span not in found and span not in spans:
                found.append(span)
                pending.append(span)
    return found


def _sentence(name: str) -> str:
    """`test_open_file_ignores_encoding` -> "open file ignores encoding"; `TestParseHTTPDate` -> "parse HTTP date"."""
    name = re.sub(r"^(?:test|Test)_?", "", name)
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+", " ", name).split()
    return " ".join(word if word.isupper() and len(word) > 1 else word.lower() for word in words) or name


def _python_doc(source: str, span: TestSpan) -> str:
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.lineno >= span.first
            and (node.end_lineno or node.lineno) <= span.last
        ):
            return first_sentence(ast.get_docstring(node))
    return ""


def _criterion(path: str, source: str, span: TestSpan, examples: list[str] = ()) -> str:
    name = span.test_id.rsplit("::", 1)[-1]
    doc = ""
    if path.endswith(".py"):
        try:
            doc = _python_doc(source, span)
        except SyntaxError:
            doc = ""
    if not path.endswith(".py"):  # a JS/TS test's own sentence, else the comment above the test
        doc = name if " " in name else _comment_above(source.splitlines(), span.first - 1)
    said = doc or _sentence(name)
    parts = span.test_id.split("::")
    if not doc and path.endswith(".py") and len(parts) > 2:  # `ExtractTests::test_basics` -> "extract: basics"
        owner = re.sub(r"^Tests?|Tests?$", "", parts[-2]) or parts[-2]
        said = f"{_sentence(owner)}: {said}"
    if examples:  # "open resource, e.g. `assert ...`; `assert ...`"
        said = said.rstrip(".") + ", e.g. " + "; ".join(f"`{example.replace('`', '')}`" for example in examples)
    return f"`{span.test_id}`: {said}"


def _comment_above(lines: list[str], number: int) -> str:
    """The first sentence of the comment block right above line `number` (`//`, `///`, `/** */`)."""
    block: list[str] = []
    while number > 0 and lines[number - 1].strip().startswith(("//", "/*", "*")):
        number -= 1
        block.insert(0, re.sub(r"^(?:/{2,3}|/\*\*?|\*/?)\s?", "", lines[number].strip()).rstrip("*/ "))
    return first_sentence("\n".join(line for line in block if not line.startswith("#[")))


def declarations(text: str, path: str) -> dict[str, Definition]:
    """Named definitions of a Go, TypeScript/JavaScript or Rust file (`syntax.definitions`), by qualified name
    (`Command.option`, Go's `Router.Handle`), each with its signature and the comment above it. The members of a
    TypeScript interface or type are its shape, not names to provide: only the type is listed."""
    return {
        definition.name: Definition(definition.name, definition.kind, definition.signature, definition.doc)
        for definition in syntax.definitions(path, text) or []
    }


def _new_python(before: str | None, after: str, path: str) -> tuple[list[Definition], list[tuple[Definition, str]]]:
    """(new definitions, (function, new parameter)) of one Python file."""
    old = definitions(before, path) if before is not None else {}
    new = definitions(after, path)
    added = [definition for name, definition in new.items() if name not in old]
    params = [
        (definition, param)
        for name, definition in new.items()
        if name in old
        for param in definition.params
        if param not in old[name].params and param not in ("self", "cls")
    ]
    return added, params


def _literals(strings: set[str], before: list[str], after: list[str]) -> list[InterfaceItem]:
    """The tests' strings that only the new code holds: options, keys and exact messages."""
    items = []
    for value in sorted(strings):
        if len(value.strip()) < 3 or value.isspace():
            continue
        quoted = [f'"{value}"', f"'{value}'"] if re.fullmatch(r"[\w.-]+", value) else [value]
        if not any(q in text for q in quoted for text in after) or any(q in text for q in quoted for text in before):
            continue
        if value.startswith("-") and re.fullmatch(r"--?[\w-]+", value):
            items.append(InterfaceItem(name=value, kind="option"))
        elif re.fullmatch(r"[\w.-]*[_.-][\w.-]*|[A-Z][A-Z0-9_]{3,}", value):  # `PROVIDE_OPTIONS`, `a.b`: not a word
            items.append(InterfaceItem(name=value, kind="key"))
        elif " " in value.strip():
            items.append(InterfaceItem(name=value, kind="message"))
    return items


def read_interface(
    repo: GitRepo,
    base: str,
    verify: str,
    test_ids: list[str],
    test_paths: list[str],
    source_paths: list[str],
    where: str,
    examples: int = 2,
    new_value_examples: int = 0,
) -> Interface:
    """The interface the tests `test_ids` (in `test_paths`, changed by the milestone) need from the changed
    `source_paths`, and one criterion per test with up to `examples` of the assertions the diff adds to it
    (`planning.assertion_examples`), and up to `new_value_examples` more that expect a value only the new source
    holds (`planning.new_value_examples`). `where` names the milestone in warnings."""
    result = Interface()
    used = Usage()
    sources = {path: (_text(repo, base, path), _text(repo, verify, path)) for path in source_paths}
    new_value = _new_value_reader(
        [before or "" for before, after in sources.values() if after is not None],
        [after for _, after in sources.values() if after is not None],
    )
    for path in test_paths:
        source = _text(repo, verify, path)
        if source is None:
            continue
        spans = declared_tests(path, source)
        added = _added_lines(repo, base, verify, path)
        if test_ids:
            chosen = _selected(spans, test_ids)
        else:  # nothing traced: the tests the milestone's diff adds or changes
            chosen = [span for span in spans if any(span.first <= line <= span.last for line in added)]
        by_body: dict[tuple[int, int], list[str]] = {}  # a mixin's test runs in several classes: one criterion
        for span in chosen:
            by_body.setdefault((span.first, span.last), []).append(span.test_id)
        for ids in by_body.values():
            span = next(span for span in chosen if span.test_id == ids[0])
            quoted = _examples(path, source, span, added, examples, new_value, new_value_examples)
            text = _criterion(path, source, span, quoted)
            if len(ids) > 1:
                text = text.replace("`: ", f"` (and in {len(ids) - 1} more test classes): ", 1)
            result.criteria.append(AcceptanceCriterion(text=text, source="test", tests=ids))
            result.pinned |= _pinned(source, span, added, new_value)
        lines = [(span.first, span.last) for span in chosen]
        if path.endswith(".py"):
            try:
                found = usage(source, lines)
            except SyntaxError as e:
                result.warnings.append(f"{where}: test file {path} does not parse ({e.msg}, line {e.lineno})")
                continue
            used.names |= found.names
            used.keywords |= found.keywords
            used.strings |= found.strings
        else:
            names, strings = syntax.used(path, source, lines + _helpers(path, source, lines))
            used.names |= names
            used.strings |= strings
    before_texts, after_texts = [], []
    for path, (before, after) in sources.items():
        if after is None:
            continue
        after_texts.append(after)
        before_texts.append(before or "")
        extension = "." + path.rsplit(".", 1)[-1] if "." in path else ""
        if path.endswith(".py"):
            try:
                added, params = _new_python(before, after, path)
            except SyntaxError as e:
                result.warnings.append(
                    f"{where}: {path} does not parse ({e.msg}, line {e.lineno}); its names are not read"
                )
                continue
            for definition in added:
                if definition.name.rsplit(".", 1)[-1] in used.names:
                    result.items.append(_item(definition))
            for definition, param in params:
                function = definition.name.rsplit(".", 1)[-1]
                owner = definition.name.rsplit(".", 2)[-2] if function == "__init__" else function
                if (owner, param) in used.keywords or (function, param) in used.keywords:
                    result.items.append(
                        InterfaceItem(
                            name=f"{definition.name.removesuffix('.__init__')}({param})",
                            kind="parameter",
                            signature=definition.signature,
                            doc=definition.doc,
                        )
                    )
        elif syntax.language_of(path):
            old = declarations(before or "", path)
            for name, definition in declarations(after, path).items():
                if name.rsplit(".", 1)[-1] not in used.names:
                    continue
                if name not in old:
                    result.items.append(_item(definition))
                elif definition.kind in ("function", "method") and _changed(old[name].signature, definition.signature):
                    item = _item(definition).model_copy(update={"kind": "signature", "before": old[name].signature})
                    result.items.append(item)
        else:
            result.warnings.append(
                f"{where}: no declaration reader for {extension or 'extensionless'} files ({path}): "
                "its new names are not in the interface"
            )
    result.items += _literals(used.strings, before_texts, after_texts)
    result.items = list({(item.kind, item.name): item for item in result.items}.values())
    result.used = used
    return result


def _changed(before: str, after: str) -> bool:
    """Two declarations differ beyond spacing (a parameter added, removed or retyped; a result changed)."""
    return bool(before and after) and " ".join(before.split()) != " ".join(after.split())


def _item(definition: Definition, longest_value: int = 80) -> InterfaceItem:
    """A definition as the task names it; a constant's long value (a test table) is the Dev's to write, not read."""
    signature = definition.signature
    if definition.kind in ("constant", "attribute") and len(signature) > longest_value and "=" in signature:
        signature = signature.split("=", 1)[0].strip()
    return InterfaceItem(name=definition.name, kind=definition.kind, signature=signature, doc=definition.doc)
