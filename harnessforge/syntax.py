"""JavaScript, TypeScript, Go and Rust read as syntax trees (tree-sitter grammars), never by their lines.

One reader for what planning and validation need of code in these languages: its definitions (a class's methods
one by one, a Go method under its receiver, a Rust method under its `impl`), with lines, signature and doc comment;
its tests (titles as the runner names them, quotes and all); and what a test's code names and expects (the
identifiers, strings and regular expressions it uses). Python is read with `ast` where it is needed.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_go
import tree_sitter_javascript
import tree_sitter_rust
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser

# where one sentence ends and the next begins ("e.g. `x`" and "i.e. Y" go on): a doc comment's, a docstring's or a
# release note's first sentence is read with it
SENTENCE_BREAK = r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bcf\.)(?<!\bvs\.)\s+"

_LANGUAGES = {
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}
_GRAMMARS = {
    "javascript": tree_sitter_javascript.language,
    "typescript": tree_sitter_typescript.language_typescript,
    "tsx": tree_sitter_typescript.language_tsx,
    "go": tree_sitter_go.language,
    "rust": tree_sitter_rust.language,
}
_BODIES = {"statement_block", "block", "class_body", "field_declaration_list", "declaration_list", "interface_body"}
_JS_TESTS = {"it", "test", "specify", "xit", "fit"}
_JS_SUITES = {"describe", "suite", "context", "xdescribe", "fdescribe"}


@dataclass(frozen=True)
class Definition:
    """A named definition: `name` qualified by its owner (`Command.option`, Go's `Router.Handle`)."""

    name: str
    kind: str  # function | class | method | constant | attribute
    first: int  # 1-based, inclusive
    last: int
    signature: str = ""
    doc: str = ""
    exported: bool = True

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Test:
    """A test as its runner names it: JavaScript titles (the suites' first), a Go or Rust function."""

    titles: tuple[str, ...]
    first: int
    last: int

    @property
    def name(self) -> str:
        return self.titles[-1]


def language_of(path: str) -> str | None:
    suffix = path[path.rfind(".") :] if "." in path.rsplit("/", 1)[-1] else ""
    return _LANGUAGES.get(suffix)


@lru_cache(maxsize=None)
def _parser(language: str) -> Parser:
    return Parser(Language(_GRAMMARS[language]()))


def parse(path: str, source: str) -> Node | None:
    """The file's syntax tree, or None for a language no grammar here reads."""
    language = language_of(path)
    return _parser(language).parse(source.encode("utf-8", "replace")).root_node if language else None


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _lines(node: Node) -> tuple[int, int]:
    return node.start_point[0] + 1, node.end_point[0] + 1


def _body(node: Node, depth: int = 3) -> Node | None:
    """The first body (a block, a class or struct body) in `node`, looking `depth` levels down."""
    for child in node.children:
        if child.type in _BODIES:
            return child
    for child in node.named_children if depth > 1 else []:
        if (found := _body(child, depth - 1)) is not None:
            return found
    return None


def _signature(node: Node) -> str:
    """The declaration without its body, on one line."""
    body = _body(node)
    end = body.start_byte if body is not None else node.end_byte
    text = node.text[: end - node.start_byte].decode("utf-8", "replace")
    text = re.sub(r"([(\[{])\s+|\s+([)\]}])", lambda found: found[1] or found[2], " ".join(text.split()))
    return _shortened(text.rstrip("{ =;"))  # `func F(\n\traw Hook,\n) error` -> `func F(raw Hook,) error`


def _shortened(signature: str, longest: int = 300) -> str:
    """A signature too long to show whole, cut after a parameter with its brackets closed (`toISOTime({a = 1, ...})`):
    luxon's options object was cut mid-word ("precis") at 160 characters."""
    if len(signature) <= longest:
        return signature
    cut = signature.rfind(",", 0, longest - 8)
    kept = signature[: cut if cut > 0 else longest - 8] + ", ..."
    opened: list[str] = []
    for character in kept:
        if character in "([{":
            opened.append(character)
        elif character in ")]}" and opened:
            opened.pop()
    return kept + "".join({"(": ")", "[": "]", "{": "}"}[character] for character in reversed(opened))


def _doc(node: Node) -> str:
    """The first sentence of the comments right above `node`, else of the comment closing its line.

    A comment closing the line above belongs to the line above (`io.Writer // must be a writer`), not to `node`."""
    lines: list[str] = []
    sibling, line = node.prev_sibling, node.start_point[0]
    while sibling is not None and "comment" in sibling.type and sibling.end_point[0] >= line - 1:
        if _trails(sibling):
            break
        lines[:0] = _text(sibling).splitlines()
        sibling, line = sibling.prev_sibling, sibling.start_point[0]
    after = node.next_sibling
    if not lines and after is not None and "comment" in after.type and after.start_point[0] == node.end_point[0]:
        lines = _text(after).splitlines()
    said = [re.sub(r"^\s*(?:/{2,3}!?|/\*\*?|\*/?)\s?", "", line).rstrip("*/ ") for line in lines if not directive(line)]
    said = list(itertools.takewhile(lambda line: not line.startswith("@"), said))  # JSDoc's `@returns` ends it
    sentence = re.split(SENTENCE_BREAK, " ".join(said).strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= 300 else ""  # whole or not at all: a cut doc reads broken


# a comment that tells a tool what to do, not a reader what the code does: Go's `//gocyclo:ignore`, `//nolint`,
# `//go:generate`; `/* eslint-disable valid-jsdoc */`, `// @ts-ignore`, `/* istanbul ignore next */`,
# `// prettier-ignore`
_DIRECTIVE = re.compile(
    r"^\s*(?://(?:[a-z][\w-]*:\S*|nolint\b)|(?://|/\*)\s*(?:eslint[\w-]*\s|eslint[\w-]*$|@ts-|istanbul\s|"
    r"prettier-ignore|c8\s|jshint\s|jscs:|global\s))"
)


def directive(line: str) -> bool:
    """Whether a comment line is a tool's directive (`//nolint`, `/* eslint-disable ... */`): no documentation."""
    return _DIRECTIVE.match(line) is not None


def _trails(comment: Node) -> bool:
    """Whether `comment` closes a line that code opens."""
    before = comment.prev_sibling
    return before is not None and "comment" not in before.type and before.end_point[0] == comment.start_point[0]


def _base_type(node: Node | None) -> str:
    """`*Router[T]`, `Foo<T>`, `&mut Foo` -> the type's name."""
    names = re.findall(r"[A-Za-z_]\w*", _text(node))
    skip = {"mut", "const", "dyn", "impl"}
    return next((name for name in names if name not in skip), "")


# ---- definitions ------------------------------------------------------------------------------------
def definitions(path: str, source: str) -> list[Definition] | None:
    """The file's definitions, members inside their owner's lines; None for a language no grammar here reads."""
    root = parse(path, source)
    if root is None:
        return None
    language = language_of(path)
    found: list[Definition] = []
    if language == "go":
        _go(root, found)
    elif language == "rust":
        _rust(root, "", found)
    else:
        _js(root, found)
    return found


def _add(found: list[Definition], node: Node, name: str, kind: str, exported: bool = True, at: Node | None = None):
    """Go's blank identifier (`var _ slog.Handler = (*Logger)(nil)`) names nothing anyone can use."""
    if name and name.rsplit(".", 1)[-1] != "_":
        first, last = _lines(node)
        found.append(Definition(name, kind, first, last, _signature(node), _doc(at or node), exported))


def _js(root: Node, found: list[Definition]) -> None:
    for statement in root.named_children:
        exported = statement.type == "export_statement"
        node = statement.child_by_field_name("declaration") if exported else statement
        if node is None and exported:  # `export default <expression>`
            node = statement.child_by_field_name("value")
        if node is not None and node.type == "ambient_declaration":  # `declare class X {}`
            node = node.named_children[0] if node.named_children else None
        if node is None:
            continue
        _js_declaration(node, statement, exported, found)


def _js_declaration(node: Node, statement: Node, exported: bool, found: list[Definition]) -> None:
    kind = node.type
    name = _text(node.child_by_field_name("name"))
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        _add(found, node, name, "function", exported, statement)
    elif kind in ("class_declaration", "abstract_class_declaration", "class"):
        _add(found, node, name, "class", exported, statement)
        _js_members(node, name, found)
    elif kind in ("interface_declaration", "type_alias_declaration", "enum_declaration"):
        _add(found, node, name, "class", exported, statement)
    elif kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                continue
            value = declarator.child_by_field_name("value")
            target = _text(declarator.child_by_field_name("name"))
            if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                _add(found, declarator, target, "function", exported, statement)
            elif value is not None and value.type == "class":
                _add(found, declarator, target, "class", exported, statement)
                _js_members(value, target, found)
            else:
                _add(found, declarator, target, "constant", exported, statement)
    elif kind == "expression_statement" and node.named_children:
        assignment = node.named_children[0]
        if assignment.type != "assignment_expression":
            return
        left = _text(assignment.child_by_field_name("left"))
        if left in ("module.exports", "exports") or not re.fullmatch(r"[\w$.]+", left):
            return  # the export list names nothing of its own
        target = re.sub(r"^(?:module\.)?exports\.", "", left).replace(".prototype.", ".")
        value = assignment.child_by_field_name("right")
        function = value is not None and value.type in ("arrow_function", "function_expression", "function")
        _add(found, node, target, ("method" if "." in target else "function") if function else "constant")


def _js_members(node: Node, owner: str, found: list[Definition]) -> None:
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else []:
        name = _text(member.child_by_field_name("name")).lstrip("#")
        if member.type in ("method_definition", "method_signature", "abstract_method_signature"):
            _add(found, member, f"{owner}.{name}", "method")
        elif member.type in ("field_definition", "public_field_definition"):
            name = name or _text(member.child_by_field_name("property")).lstrip("#")
            _add(found, member, f"{owner}.{name}", "attribute")


def _go(root: Node, found: list[Definition]) -> None:
    for node in root.named_children:
        kind = node.type
        if kind == "function_declaration":
            _add(found, node, _text(node.child_by_field_name("name")), "function")
        elif kind == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            owner = _base_type(receiver.named_children[0].child_by_field_name("type")) if receiver else ""
            _add(found, node, f"{owner}.{_text(node.child_by_field_name('name'))}".lstrip("."), "method")
        elif kind == "type_declaration":
            for spec in node.named_children:
                if spec.type not in ("type_spec", "type_alias"):
                    continue
                name = _text(spec.child_by_field_name("name"))
                _add(found, spec, name, "class", at=node if len(node.named_children) == 1 else spec)
                shape = spec.child_by_field_name("type")
                for member in _go_members(shape):
                    member_name = _text(member.child_by_field_name("name"))
                    kind_of = "method" if member.type in ("method_spec", "method_elem") else "attribute"
                    _add(found, member, f"{name}.{member_name}", kind_of)
        elif kind in ("const_declaration", "var_declaration"):
            for spec in node.named_children:
                names = [child for child in spec.children_by_field_name("name")] if spec.type.endswith("_spec") else []
                for name in names:
                    _add(found, spec, _text(name), "constant", at=node if len(node.named_children) == 1 else spec)


def _go_members(shape: Node | None) -> list[Node]:
    if shape is None:
        return []
    holder = next((child for child in shape.named_children if child.type == "field_declaration_list"), shape)
    return [
        child for child in holder.named_children if child.type in ("field_declaration", "method_spec", "method_elem")
    ]


def _rust(root: Node, prefix: str, found: list[Definition], members: bool = False) -> None:
    """`members`: inside an `impl` or a trait (functions are methods), else a module (`prefix` names it)."""
    for node in root.named_children:
        kind = node.type
        name = _text(node.child_by_field_name("name"))
        if kind in ("function_item", "function_signature_item"):
            _add(found, node, prefix + name, "method" if members else "function")
        elif kind in ("struct_item", "enum_item", "union_item", "type_item"):
            _add(found, node, prefix + name, "class")
        elif kind in ("const_item", "static_item"):
            _add(found, node, prefix + name, "constant")
        elif kind == "macro_definition":
            _add(found, node, prefix + name, "function")
        elif kind in ("impl_item", "trait_item"):
            owner = name if kind == "trait_item" else _base_type(node.child_by_field_name("type"))
            if kind == "trait_item":
                _add(found, node, prefix + owner, "class")
            body = node.child_by_field_name("body")
            if body is not None:
                _rust(body, f"{prefix}{owner}.", found, members=True)
        elif kind == "mod_item" and node.child_by_field_name("body") is not None:
            _rust(node.child_by_field_name("body"), f"{prefix}{name}.", found)


def innermost(spans: list[Definition], line: int) -> Definition | None:
    """The smallest definition holding `line` (a method, not its class)."""
    holding = [span for span in spans if span.first <= line <= span.last]
    return min(holding, key=lambda span: span.last - span.first) if holding else None


# ---- tests --------------------------------------------------------------------------------------------
def string_value(node: Node) -> str | None:
    """A string or template literal's text without its quotes (escapes as written); None for anything else."""
    if node.type in ("string", "template_string"):
        text = _text(node)
        return text[1:-1] if len(text) >= 2 else ""
    if node.type in ("interpreted_string_literal", "raw_string_literal", "string_literal"):
        text = _text(node)
        return text[1:-1] if len(text) >= 2 else ""
    return None


def _callee(node: Node) -> str:
    """`it`, `test.each(...)`, `describe.skip` -> it, test, describe."""
    function = node.child_by_field_name("function")
    while function is not None and function.type in ("call_expression", "member_expression"):
        function = function.child_by_field_name("function" if function.type == "call_expression" else "object")
    return _text(function) if function is not None else ""


def tests(path: str, source: str) -> list[Test]:
    """The tests a file declares: JavaScript `it`/`test` calls under their `describe` suites, Go `Test*`,
    `Example*` and `Fuzz*` functions (not `TestMain`), Rust functions marked `#[test]`."""
    root = parse(path, source)
    if root is None:
        return []
    language = language_of(path)
    found: list[Test] = []
    if language == "go":
        for node in root.named_children:
            name = _text(node.child_by_field_name("name")) if node.type == "function_declaration" else ""
            if re.match(r"(?:Test|Example|Fuzz)", name) and name != "TestMain":
                found.append(Test((name,), *_lines(node)))
    elif language == "rust":
        _rust_tests(root, found)
    else:
        _js_tests(root, (), found)
    return sorted(found, key=lambda test: test.first)


def _rust_tests(root: Node, found: list[Test]) -> None:
    marked = False
    for node in root.named_children:
        if node.type == "attribute_item":
            marked = marked or re.search(r"\btest\b", _text(node)) is not None
            continue
        if node.type == "function_item" and marked:
            found.append(Test((_text(node.child_by_field_name("name")),), *_lines(node)))
        elif node.type == "mod_item" and node.child_by_field_name("body") is not None:
            _rust_tests(node.child_by_field_name("body"), found)
        marked = False


def _js_tests(node: Node, suites: tuple[str, ...], found: list[Test]) -> None:
    for child in node.named_children:
        if child.type == "call_expression":
            name = _callee(child)
            arguments = child.child_by_field_name("arguments")
            first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
            title = string_value(first) if first is not None else None
            if title is not None and name in _JS_TESTS:
                found.append(Test((*suites, title), *_lines(child)))
                continue
            if title is not None and name in _JS_SUITES:
                _js_tests(arguments, (*suites, title), found)
                continue
        _js_tests(child, suites, found)


# ---- what code names ------------------------------------------------------------------------------------
_NAMES = {"identifier", "property_identifier", "field_identifier", "type_identifier", "shorthand_property_identifier"}


def used(path: str, source: str, spans: list[tuple[int, int]]) -> tuple[set[str], set[str]]:
    """(the names, the strings and regular-expression texts) that the lines `spans` of the file use."""
    root = parse(path, source)
    names: set[str] = set()
    strings: set[str] = set()
    if root is None:
        return names, strings

    def inside(node: Node) -> bool:
        first, last = _lines(node)
        return any(first <= end and last >= start for start, end in spans)

    stack = [root]
    while stack:
        node = stack.pop()
        if not inside(node):
            continue
        if node.type in _NAMES:
            names.add(_text(node))
        elif (value := string_value(node)) is not None:
            strings.add(value)
            continue
        elif node.type == "regex":
            pattern = _text(node.child_by_field_name("pattern"))
            strings.add(re.sub(r"\\(.)", r"\1", pattern.strip("^$")))
            continue
        stack.extend(node.named_children)
    return names, strings
