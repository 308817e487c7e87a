"""Python's side of a milestone's interface, read with `ast`: what a source file defines, and what a
test uses.

`definitions` lists a module's functions, classes, methods, their parameters, module constants and
class attributes, each with its signature and the first line of its docstring. `usage` lists what
the lines of some tests name: identifiers and attributes, the keywords their calls pass (with the
callee's name), and their string constants; a fixture the tests request, defined in the same file,
counts as theirs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ..syntax import SENTENCE_BREAK


@dataclass
class Definition:
    name: str  # qualified: `pkg.module.Class.method`
    kind: str  # module, function, class, exception, method, constant, attribute
    signature: str = ""
    doc: str = ""
    params: tuple[str, ...] = ()


@dataclass
class Usage:
    names: set[str] = field(default_factory=set)  # identifiers, attributes and imported names
    keywords: set[tuple[str, str]] = field(default_factory=set)  # (callee's last name, keyword)
    strings: set[str] = field(default_factory=set)


def module_name(path: str) -> str:
    """`src/pkg/core.py` -> `pkg.core`; `pkg/__init__.py` -> `pkg`."""
    parts = path[: -len(".py")].split("/")
    if parts and parts[0] in ("src", "lib", "source") and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def first_sentence(docstring: str | None) -> str:
    """A docstring's first sentence, whole (its first paragraph's lines joined); empty when over 300 characters."""
    paragraph = " ".join((docstring or "").strip().split("\n\n", 1)[0].split())
    paragraph = re.sub(r"``([^`]+)``", r"`\1`", paragraph)  # reStructuredText literals read as Markdown code
    sentence = re.split(SENTENCE_BREAK + "(?=[A-Z`])", paragraph, maxsplit=1)[0] if paragraph else ""
    return sentence if len(sentence) <= 300 else ""


def _doc(node: ast.AST) -> str:
    return first_sentence(ast.get_docstring(node, clean=True))


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, kind: str) -> Definition:
    arguments = node.args
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    params = [arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    params += [arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    signature = f"{prefix} {node.name}({ast.unparse(arguments)}){returns}"
    return Definition(f"{owner}.{node.name}", kind, signature, _doc(node), tuple(params))


def _assigned(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _statement(node: ast.stmt) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 120 else text[:117] + "..."


def _body(statements: list[ast.stmt]):
    """A body's statements, those under `if`/`try` (TYPE_CHECKING imports, fallbacks) included."""
    for node in statements:
        if isinstance(node, (ast.If, ast.Try)):
            yield from _body(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _body(handler.body)
        else:
            yield node


def definitions(source: str, path: str) -> dict[str, Definition]:
    """What a module defines, by qualified name (a SyntaxError propagates: the caller warns)."""
    tree = ast.parse(source)
    module = module_name(path)
    found = {module: Definition(module, "module", "", _doc(tree))}
    for node in _body(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            definition = _function(node, module, "function")
            found[definition.name] = definition
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(base) for base in node.bases)
            error = any(name in ast.unparse(base) for base in node.bases for name in ("Error", "Exception", "Warning"))
            qualified = f"{module}.{node.name}"
            init = next(
                (child for child in node.body if isinstance(child, ast.FunctionDef) and child.name == "__init__"), None
            )
            signature = f"class {node.name}({bases})" if bases else f"class {node.name}"
            params = _function(init, qualified, "method").params if init else ()
            found[qualified] = Definition(qualified, "exception" if error else "class", signature, _doc(node), params)
            for child in _body(node.body):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    decorators = {ast.unparse(decorator) for decorator in child.decorator_list}
                    name = f"{qualified}.{child.name}"
                    if decorators & {f"{child.name}.setter", f"{child.name}.deleter"} and name in found:
                        continue  # a property's setter: the property is its getter
                    definition = _function(child, qualified, "method")
                    if decorators & {"property", "functools.cached_property", "cached_property"}:
                        definition = Definition(name, "attribute", f"{child.name} (property)", _doc(child))
                    found[definition.name] = definition
                for name in _assigned(child):
                    found[f"{qualified}.{name}"] = Definition(f"{qualified}.{name}", "attribute", _statement(child))
        else:
            for name in _assigned(node):
                found[f"{module}.{name}"] = _alias(found, module, name, node) or Definition(
                    f"{module}.{name}", "constant", _statement(node)
                )
    return found


def _alias(found: dict[str, Definition], module: str, name: str, node: ast.stmt) -> Definition | None:
    """`running_median = _running_median_minheap_only`: the function, with its signature under `name`."""
    value = getattr(node, "value", None)
    function = found.get(f"{module}.{value.id}") if isinstance(value, ast.Name) else None
    if function is None or function.kind != "function":
        return None
    signature = re.sub(rf"\b{re.escape(value.id)}\(", f"{name}(", function.signature, count=1)
    return Definition(f"{module}.{name}", "function", signature, function.doc, function.params)


def usage(source: str, spans: list[tuple[int, int]]) -> Usage:
    """What the lines in `spans` (1-based, inclusive) name, with the fixtures their tests request and the
    helpers they call (a test that builds its object in a helper uses the helper's names)."""
    tree = ast.parse(source)
    functions = {
        node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    inside = lambda node: any(first <= getattr(node, "lineno", 0) <= last for first, last in spans)  # noqa: E731
    roots = [
        node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and inside(node)
    ]
    requested = {arg.arg for root in roots for arg in root.args.args}
    roots += [functions[name] for name in requested if name in functions and functions[name] not in roots]
    for root in roots:  # and the helpers they call, theirs too (appended while walking)
        called = {node.id for node in ast.walk(root) if isinstance(node, ast.Name) and node.id in functions}
        roots += [functions[name] for name in sorted(called) if functions[name] not in roots]
    found = Usage()
    nodes = [node for root in roots for node in ast.walk(root)]
    nodes += [node for node in ast.walk(tree) if inside(node) and not isinstance(node, ast.Module)]
    for node in nodes:
        if isinstance(node, ast.Name):
            found.names.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.names.add(node.attr)
        elif isinstance(node, ast.alias):
            found.names.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.names.update(node.module.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.strings.add(node.value)
        elif isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            found.keywords.update((callee, keyword.arg) for keyword in node.keywords if keyword.arg)
    for node in tree.body:  # the modules the tests' names are imported from
        if isinstance(node, ast.ImportFrom) and node.module:
            if any((alias.asname or alias.name) in found.names for alias in node.names):
                found.names.update(node.module.split("."))
    return found
