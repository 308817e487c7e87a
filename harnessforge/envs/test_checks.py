"""What an acceptance test checks, in words a Dev with the tests hidden can act on: its own sentence (docstring,
title or name) and the checks its diff adds, chosen for breadth (the first, then each adding the most names and
values the others lack), plus the values only the new code holds, which no statement could let a Dev guess.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import re
from collections.abc import Callable

from ..refs import strip_refs
from ..text_lint import code_span, text_problems
from .declared_tests import TestSpan
from .documentation import plain_rest
from .interface_python import first_sentence

_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.){2,200})\"|'((?:[^'\\\n]|\\.){2,200})'|`([^`\n]{2,200})`")

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
_ONE_LINE_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`")
_RAW_SPANNING = re.compile(r"^[^`\"']*(?:(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)[^`\"']*)*`[^`]*$")


def whole_statement(lines: list[str], start: int, last: int, reach: int = 8) -> str:
    """The statement opening at line `start` (1-based), continued until its brackets close, on one line. A string
    that spans lines (Python's triple quotes) keeps its line ends as `\\n` escapes, the same string, and its lines
    as they are: the layout a test expects is exact."""
    return statement_lines(lines, start, last, reach)[0]


def statement_lines(lines: list[str], start: int, last: int, reach: int = 8, separate: bool = False) -> tuple[str, int]:
    """`whole_statement` and the line it ends on (0 when it never closes within reach). A raw string that spans lines
    (Go's and JavaScript's backticks, where `\\n` is no line end) is not quotable on one line: none is better than its
    first line alone (go-toml's "``expected := `1| [server]``"). With `separate` (Go, JavaScript), the statements of
    a block are joined by "; ": lipgloss' `{t.Log(table.String()) t.Fatalf(...)}` read as one broken call."""
    if _RAW_SPANNING.search(_without_comment(lines[start - 1])):
        return "", 0
    text, opened, quoted, spanning = "", [], False, False
    for number in range(start, min(last, start + reach) + 1):
        raw = lines[number - 1] if quoted else _without_comment(lines[number - 1])
        pieces = _MULTILINE_QUOTES.split(raw)
        code = "".join(pieces[1 if quoted else 0 :: 2])  # brackets inside a string do not count
        code = _ONE_LINE_STRING.sub('""', code)  # pydantic-settings' `assert '[env:' in help_text`
        in_block = bool(opened) and opened[-1] == "{"
        for character in code:
            if character in "([{":
                opened.append(character)
            elif character in ")]}" and opened:
                opened.pop()
        if quoted:
            text = f"{text}\\n{raw}"
        elif separate and in_block and _ends_statement(text) and not raw.strip().startswith(_CONTINUES_STATEMENT):
            text = f"{text}; {raw.strip()}"
        else:
            text = f"{text} {raw.strip()}".strip()
        spanning = spanning or quoted
        quoted ^= len(pieces) % 2 == 0  # an odd number of quotes opens or closes a string
        if quoted or opened:
            continue
        if spanning:
            return text.removesuffix(":"), number
        return _tidied(text.removesuffix(":")), number
    return "", 0  # never closes within reach: not quotable


_CONTINUES_STATEMENT = tuple(")]}.,+-*/%&|^?:=<>")  # a line going on with the one before it


def _ends_statement(text: str) -> bool:
    """A joined line ends a statement: not after an opening bracket, a comma or an operator."""
    return bool(text) and not text.rstrip().endswith(tuple("([{,;+-*/%&|^=<>!:.?"))


def _tidied(text: str) -> str:
    """A statement joined onto one line, its layout gone: one space between words, none inside brackets. What a
    string holds stays as written (go-pretty's `":( :( :("` read `":(:(:("`)."""
    pieces = _ONE_LINE_STRING.split(text)
    strings = _ONE_LINE_STRING.findall(text)
    marked = "\x00".join(pieces)  # each string's place, while the code around it is tidied
    marked = " ".join(marked.split())
    marked = re.sub(r",?\s+([)\]}])", r"\1", re.sub(r"([(\[{])\s+", r"\1", marked))
    tidied = marked.split("\x00")
    return "".join(piece + (strings[at] if at < len(strings) else "") for at, piece in enumerate(tidied))


def _without_comment(line: str) -> str:
    """The line without its trailing comment (`# ...`, `// ...` after a blank, outside any string): joined onto one
    line, a comment would swallow the rest of the statement (freezegun's `([...], # example from docs [], ...)`)."""
    quote = ""
    for at, character in enumerate(line):
        if quote:
            quote = "" if character == quote and line[at - 1] != "\\" else quote
        elif character in "\"'`":
            quote = character
        elif (at == 0 or line[at - 1] in " \t") and (line.startswith("# ", at) or line.startswith("//", at)):
            return line[:at].rstrip()
    return line


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
# A row a test's table of expected values gains (`expected_map = {`, `want = {`): platformdirs' Android paths
_EXPECTED_ROW = re.compile(r"""^\s*(["'])[\w.-]+\1\s*:\s*\S.*["']""")  # `"key": "value"`, `"key": f"{home}/x"`
_EXPECTED_TABLE = re.compile(r"^\s*\w*(?:expect|want|result)\w*\s*(?::[^=]+)?=\s*\{\s*$", re.I)
_PARAMETRIZE = re.compile(r"^\s*@pytest\.mark\.parametrize\(")
_PARAMETER_ROW = re.compile(r"^\s*(?:pytest\.param)?\(.*\),?\s*$")


# the value a test computes or expects, named, with the assertion comparing the names (`expected = "\n".join([...])`,
# `result = tabulate(rows, tablefmt="grid")`, `assert_equal(expected, result)`): the values are in the assignments
_NAMED_VALUE = re.compile(
    r"^\s*(?:(?:const|let|var)\s+)?(?:expected|want|result|actual|got|output)\w*\s*(?::[^=]+)?=(?!=)\s*\S", re.I
)


_RAISES_BLOCK = re.compile(r"^with (?:pytest|self)\.(?:raises|assertRaises)\w*\(.*\)(?: as \w+)?$")


# a test failing on purpose where the code went wrong (voluptuous' `assert False, "Did not raise correct Invalid"`):
# it says where a check failed, not what it checks
_FAILS_HERE = re.compile(r"^\s*(?:assert\s+(?:False|0)\b|(?:pytest|self)\.fail\()")


def _is_check(path: str, line: str, statement: str, decorating: bool = False) -> bool:
    """Whether an added line opens a check worth quoting; `decorating`: it is above a Python test's `def`."""
    if _FAILS_HERE.match(line):
        return False
    if not path.endswith(".go"):
        if decorating:
            return _PARAMETER_ROW.match(line) is not None and bool(_LITERAL.search(statement))
        named = _NAMED_VALUE.match(line) is not None and not _EXPECTED_TABLE.match(line)
        return _ASSERTION.match(line) is not None or named and bool(_LITERAL.search(statement))
    if _GO_ASSERT.match(line):
        return bool(_LITERAL.search(statement) or _EDGE.search(statement)) and not _NO_ERROR.search(statement)
    if not _GO_CHECK.match(line) or _GO_UNEXPECTED_ERROR.match(line):
        return False
    if line.lstrip().startswith("if"):  # `if a != e {t.Errorf(...)}` compares names: the values are elsewhere
        condition = statement.split("{", 1)[0].rsplit(";", 1)[-1]  # `if h := f("%s", m); h != w {`: after the `;`
        return bool(_GO_REPORT.search(statement)) and bool(_LITERAL.search(condition))
    return bool(_LITERAL.search(statement))


def _in_expected_table(lines: list[str], number: int, first: int) -> bool:
    """Line `number` is a row of a dict literal the test names as what it expects (the nearest line above, within
    the test, that opens a dict at a lower indent)."""
    indent = len(lines[number - 1]) - len(lines[number - 1].lstrip())
    for above in range(number - 1, first - 1, -1):
        line = lines[above - 1]
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            return _EXPECTED_TABLE.match(line) is not None
    return False


def quoted_checks(
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
        lines = [line for line in [output[0].removeprefix("Output:").strip(), *output[1:]] if line]
        printed = ""  # whole lines, as many as fit: a line cut mid-word ("* 'Em") reads broken
        for at, line in enumerate(lines):
            more = f"{printed} / {line}" if printed else line
            if len(f"prints: {more} / ...") > longest and at < len(lines) - 1 or len(f"prints: {more}") > longest:
                printed = f"{printed} / ..." if printed else ""
                break
            printed = more
        return [f"prints: {printed}"] if printed else []
    found: list[str] = []
    last = min(span.last, len(lines))
    define = next((at for at in range(span.first, last + 1) if _DEF.match(lines[at - 1])), span.first)
    inside: set[int] = set()  # the lines of a parametrize list quoted whole
    decorators = [number for number in range(span.first, define) if lines[number - 1].lstrip().startswith("@")]
    for number, end in zip(decorators, [*decorators[1:], define]) if path.endswith(".py") and limit else []:
        if _PARAMETRIZE.match(lines[number - 1]):  # each of stacked parametrizations: packaging's `variable`, then
            statement = whole_statement(lines, number, end - 1, reach=40)  # its `expression, result` rows
            whole = set(range(number, end)) <= added  # a new parametrization: its values are what it tests
            if statement and len(statement) <= longest and whole:
                found.append(statement)  # the values it runs with, one per line ("true", "yes", "1", ...)
                inside |= set(range(number, end))
    checks: list[str] = []  # every check the diff adds, in order
    signature = statement_lines(lines, define, last, reach=30)[0] or lines[define - 1]  # `def test(\n  self, ...):`
    for number in range(span.first, last + 1):
        if number not in added or number in inside:
            continue
        statement, ends = statement_lines(lines, number, span.last, separate=not path.endswith(".py"))
        statement = statement.removesuffix(",")
        if _RAISES_BLOCK.match(statement) and ends < last:  # `with pytest.raises(E)` alone says not what raises
            inner = next((at for at in range(ends + 1, last + 1) if lines[at - 1].strip()), None)
            body = whole_statement(lines, inner, span.last) if inner else ""
            whole = f"{statement}: {body}" if body else statement
            # a call too long to quote: the error and its message are what the test pins
            statement = f"{statement}: ..." if len(whole) > longest and _LITERAL.search(statement) else whole
        if not statement or len(statement) > longest or statement in found or statement in checks:
            continue
        if number < define and _names_parameters(statement, signature):
            continue  # `("env_prefix_target", "expected_env")` names the rows' columns: no value is checked
        if _is_check(path, lines[number - 1], statement, path.endswith(".py") and number < define) or (
            path.endswith(".py") and _EXPECTED_ROW.match(statement) and _in_expected_table(lines, number, define)
        ):
            checks.append(statement)
    chosen = set(_widest(checks, max(limit - len(found), 0)))
    extra = [
        check
        for check in checks
        if check not in chosen and (new_value(check) or (_EDGE.search(check) and not _NO_ERROR.search(check)))
    ]
    chosen |= set(extra[:new_values])
    return found + [check for check in checks if check in chosen]


_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")
_SYMBOL = re.compile(r"[!-/:-@\[-`{-~]")


def _pieces(check: str) -> tuple[set[str], set[str], set[str]]:
    """What a check is made of, weightiest first: the names and operators it uses, the symbols inside its strings
    (an empty string too), and the words inside them: `f(xs, sep=';') == 'a; b'` is (`f`, `sep`, `=`...),
    (`;`) and (`a`, `b`)."""
    symbols, words = set(), set()
    for literal in _QUOTED.findall(check):
        inside = literal[1:-1]
        symbols |= set(_SYMBOL.findall(inside)) | ({"''"} if not inside.strip() else set())
        words |= set(re.findall(r"\w+", inside))
    return set(re.findall(r"\w+|[^\w\s]", _QUOTED.sub(" ", check))), symbols, words


def _widest(checks: list[str], limit: int) -> list[str]:
    """Up to `limit` of `checks`: the first, then each time the one adding the most of what the ones chosen before
    it lack, names before symbols before words: a test of twenty asserts over one function quotes its keyword
    options and its odd separators, not its first lines or its twentieth fruit."""
    chosen: list[str] = checks[:1] if limit else []  # a test's first check is most often its plainest case
    seen = _pieces(chosen[0]) if chosen else (set(), set(), set())
    left = checks[1:]
    while left and len(chosen) < limit:
        pieces = [_pieces(check) for check in left]
        gains = [tuple(len(new - old) for new, old in zip(piece, seen)) for piece in pieces]
        best = max(range(len(left)), key=lambda at: (gains[at], -at))
        if not any(gains[best]):
            break
        chosen.append(left.pop(best))
        seen = tuple(old | new for old, new in zip(seen, pieces[best]))
    return chosen


def pinned_values(source: str, span: TestSpan, added: set[int], new_value: Callable[[str], bool]) -> set[str]:
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


def new_value_reader(before: list[str], after: list[str]) -> Callable[[str], bool]:
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


_DANGLING = re.compile(r"\b(?:for|to|in|at|of|with|by|from|on|see|about)\W*$", re.I)  # a word's object was removed


def _names_parameters(statement: str, definition: str) -> bool:
    """Whether `statement` is only strings naming parameters of the test defined on `definition` (a parametrize's
    first argument: `("a", "b")`, `"a,b"`)."""
    strings = re.findall(r"""(['"])([\w\s,]+)\1""", statement)
    rest = re.sub(r"""(['"])[\w\s,]*\1|[\s(),\[\]]|argnames=""", "", statement)
    names = {name.strip() for _, text in strings for name in text.split(",") if name.strip()}
    parameters = set(re.findall(r"\w+", definition.partition("(")[2]))
    return bool(names) and not rest and names <= parameters


def name_as_sentence(name: str) -> str:
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
            # reST as the task shows it: bidict's ":func:`iteritems` should work correctly" read "func:`iteritems`"
            return plain_rest(first_sentence(ast.get_docstring(node)))
    return ""


def _parameters(example: str) -> str:
    """A parametrize decorator as the values the test runs with: "for `timeout` in `[None, 1]`", not the decorator
    (stamina's and apispec's readers took `@pytest.mark.parametrize(...)` for an example of behaviour)."""
    if not _PARAMETRIZE.match(example):
        return ""
    try:
        call = ast.parse(example.strip().removeprefix("@"), mode="eval").body
    except SyntaxError:
        return ""
    if not isinstance(call, ast.Call) or len(call.args) < 2:
        return ""
    named = call.args[0]
    parts = named.elts if isinstance(named, (ast.Tuple, ast.List)) else [named]  # "a, b" or ("a", "b")
    if not all(isinstance(part, ast.Constant) and isinstance(part.value, str) for part in parts):
        return ""
    names = ", ".join(name.strip() for part in parts for name in part.value.split(","))
    values = ast.get_source_segment(example.strip().removeprefix("@"), call.args[1]) or ast.unparse(call.args[1])
    return f"for {code_span(names)} in {code_span(values)}"


def criterion(path: str, source: str, span: TestSpan, examples: list[str] = ()) -> str:
    name = span.test_id.rsplit("::", 1)[-1]
    doc = ""
    if path.endswith(".py"):
        try:
            doc = _python_doc(source, span)
        except SyntaxError:
            doc = ""
    if not path.endswith(".py"):  # a JS/TS test's own sentence, else the comment above the test
        doc = name if " " in name else _comment_above(source.splitlines(), span.first - 1)
    # "must resolve (#903)": the Dev has no tracker (a JS test's own title is its name: "parses @media" stays)
    said = (strip_refs(doc) if doc != name else doc) or name_as_sentence(name)
    if said != doc and (text_problems(said, doc) or _DANGLING.search(said)):  # "Regression test for <issue link>"
        said = name_as_sentence(name)
    parts = span.test_id.split("::")
    if not doc and path.endswith(".py") and len(parts) > 2:  # `ExtractTests::test_basics` -> "extract: basics"
        owner = re.sub(r"^Tests?|Tests?$", "", parts[-2]) or parts[-2]
        said = f"{name_as_sentence(owner)}: {said}"
    quoted = [_parameters(example) or code_span(example) for example in examples]  # meow's template literals: whole
    if len(quoted) > 2:  # one check per line, under the test's sentence
        said = said.rstrip(".") + ", for example:" + "".join(f"\n  - {example}" for example in quoted)
    elif quoted:  # "open resource, e.g. `assert ...`; `assert ...`"
        said = said.rstrip(".") + ", e.g. " + "; ".join(quoted)
    elif not doc and len(said.split()) < 3 and ":" not in said:  # "`TestToml`: toml": a reader saw a stub
        return code_span(span.test_id)
    return f"{code_span(span.test_id)}: {said}"  # a JS title may hold backticks: "expires `jwt.sign` ..."


def _comment_above(lines: list[str], number: int) -> str:
    """The first sentence of the comment block right above line `number` (`//`, `///`, `/** */`)."""
    block: list[str] = []
    while number > 0 and lines[number - 1].strip().startswith(("//", "/*", "*")):
        number -= 1
        block.insert(0, re.sub(r"^(?:/{2,3}|/\*\*?|\*/?)\s?", "", lines[number].strip()).rstrip("*/ "))
    sentence = first_sentence("\n".join(line for line in block if not line.startswith("#[")))
    return "" if _NOTE.match(sentence) else sentence


# a comment to the test's maintainers, not what it checks: "NOTE(bacongobbler): this test is really _slow_ ..."
# or only a reference: "Issue 187" (mapstructure's)
_NOTE = re.compile(
    r"^(?:NOTE|TODO|FIXME|XXX|HACK|BUG|nolint|lint:|eslint-|noqa|nosec)\b|^(?:issue|bug|pr|gh)[\s#-]*\d+\W*$", re.I
)


# a failure that only says a name is missing (the Interface section says that better), or that the test cannot run
_MISSING = re.compile(
    r"^(?:E\s+)?(?:ImportError|ModuleNotFoundError|AttributeError|NameError|fixture '\w+' not found)|"
    r"unexpected keyword argument|positional arguments? but|missing \d+ required|object is not callable",
    re.M,
)
_FENCE = "```"


# the sandbox's environment a failure printed (environs, sixteenth set): run-dependent, and not the project's
_ENVIRONMENT_DUMP = re.compile(r"environ\(\{(?:[^\n]*?\}\)|[^\n]*)")


def base_failures(tests: list[str], messages: dict[str, str], limit: int, lines: int = 8) -> list[str]:
    """Up to `limit` of the messages `tests` fail with at the base commit, each under its test's id in a fenced
    block cut to `lines` lines: packaging's "Fix uninformative error message" never said which message; its test
    at base says `Expected regex: "'name' is not allowed"`, `Actual message: "['name'] is not allowed as a dynamic
    field"`. A message said already (parametrized twins, one value apart) and one that only says a name is missing
    are left out."""
    found: list[str] = []
    shapes: set[str] = set()
    for test in tests:
        message = _ENVIRONMENT_DUMP.sub("environ({...})", messages.get(test, "").strip())
        if not message or _MISSING.search(message) or len(found) >= limit:
            continue
        if any(other.startswith(f"{test}/") and messages.get(other, "").strip() for other in tests):
            continue  # a Go test failing because a subtest did: its lines are a summary, the subtest's say why
        shape = re.sub(r"\[[^\]]*\]|'[^'\n]*'|\"[^\"\n]*\"|\d+", "_", message)  # twins differ in values only
        if shape in shapes:
            continue
        shapes.add(shape)
        if len(message.splitlines()) > lines:
            message = _differences(message) or message
        kept = "\n".join(message.splitlines()[:lines]).replace(_FENCE, "'''")
        cut = "\n..." if len(message.splitlines()) > lines else ""
        found.append(f"`{test}`:\n{_FENCE}\n{kept}{cut}\n{_FENCE}")
    return found


_SIDE = re.compile(r"^\s*(have|got|actual|want|expected):\s*$", re.I)
_GOT = {"have", "got", "actual"}


def _differences(message: str) -> str | None:
    """A long `have:` ... `want:` dump (Go's tests print whole documents) as the lines where the two differ, so a
    cut keeps what matters: toml's round trip differed in its last line, `large_float = 5e+22`, which eight lines
    never reached. None when the message is not such a dump."""
    lines = message.splitlines()
    marks = [(index, found[1].lower()) for index, line in enumerate(lines) if (found := _SIDE.match(line))]
    if len(marks) != 2 or (marks[0][1] in _GOT) == (marks[1][1] in _GOT):
        return None
    (first, side), (second, _) = marks
    before = [line.strip() for line in lines[first + 1 : second] if line.strip()]
    after = [line.strip() for line in lines[second + 1 :] if line.strip()]
    have, want = (before, after) if side in _GOT else (after, before)
    changed = [
        line for line in difflib.unified_diff(want, have, lineterm="", n=0) if not line.startswith(("---", "+++", "@@"))
    ]
    head = [line for line in lines[:first] if line.strip()]
    return "\n".join([*head, "where what the test wants (-) and what it got (+) differ:", *changed])
