"""The static trace of a milestone's tests: which tests its test patch adds or changes, and who wrote them.

Each changed line of a test file is mapped to the test that contains it (Python via `ast`: functions,
classes of any name, mixin methods under each class in the file that inherits them; Go/Rust/JS/TS by
their test declarations) and traced with `git blame --first-parent` to the mainline commit that wrote
it. A test whose changes all come from commits the description does not cover (housekeeping,
test-only tidy-ups) is excluded, with the reason recorded. This is a filter and an annotation only:
validation takes the acceptance tests from the runner's own ids (envs/classification.py `candidate_tests`)
and leaves out those this trace excluded.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from ..gitio import GitRepo, display
from ..models import ExcludedTest
from ..syntax import definitions, tests

# a line that checks something, in the languages' test idioms: what makes a helper's change a change of its callers
_CHECK = re.compile(
    r"^\s*(?:assert\b|self\.assert\w*\(|expect\(|assert(?:_eq|_ne)?!\(|assert\.\w+\(|require\.\w+\(|"
    r"t\.(?:Error|Fatal|Fail)\w*\(|if\b.*\bt\.(?:Error|Fatal))"
)


@dataclass(frozen=True)
class TestSpan:
    test_id: str
    first: int  # 1-based, inclusive
    last: int
    titles: tuple[str, ...] = ()  # a JavaScript test's suites' titles then its own (mocha's ids join them all)


def _base_names(cls: ast.ClassDef) -> list[str]:
    """A class's bases as written: `Mixin`; `unittest.TestCase` -> `TestCase`; `Generic[T]` -> `Generic`."""
    names = []
    for base in cls.bases:
        node = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
    return names


def _test_methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        node
        for node in cls.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
    ]


class _Scope:
    """The classes of one module (or class) body, with their bases resolved inside it: pytest runs
    `Test*` classes and `unittest.TestCase` subclasses of any name, and each runs the test methods it
    inherits from mixins (`class StoreContract:`) under its own name."""

    def __init__(self, body: list[ast.stmt]):
        self.classes = {node.name: node for node in body if isinstance(node, ast.ClassDef)}
        self.heirs: dict[tuple[str, str], list[str]] = {}  # (defining class, method) -> collected classes running it
        for name in self.classes:
            lineage = self.lineage(name)
            if not (
                name.startswith("Test")
                or any(base.endswith("TestCase") for ancestor in lineage for base in self.bases(ancestor))
            ):
                continue
            resolved: set[str] = set()
            for owner in lineage:  # the first class defining a method is the one whose code runs
                for method in _test_methods(self.classes[owner]):
                    if method.name not in resolved:
                        resolved.add(method.name)
                        self.heirs.setdefault((owner, method.name), []).append(name)

    def bases(self, name: str) -> list[str]:
        return _base_names(self.classes[name])

    def lineage(self, name: str) -> list[str]:
        """`name` and its ancestors defined in this body, depth first (close enough to the MRO here)."""
        out, todo = [], [name]
        while todo:
            current = todo.pop(0)
            if current in self.classes and current not in out:
                out.append(current)
                todo[:0] = self.bases(current)
        return out

    def runs_as(self, owner: str, method: str) -> list[str]:
        """The collected classes of this body that run `owner.method`: itself, or heirs not overriding it."""
        return self.heirs.get((owner, method), [])


def python_tests(path: str, source: str) -> list[TestSpan]:
    """Test functions, and test methods of classes of any name, each spanning its own lines.

    A method of a mixin gets one id per class in the same file that runs it (`path::Heir::test_x`);
    a mixin nobody in its file inherits keeps its own id (`path::Mixin::test_x`), and validation maps
    the runner's ids to it by where pytest says the test is defined.
    """
    tree = ast.parse(source)
    spans: list[TestSpan] = []

    def span(node: ast.AST) -> tuple[int, int]:
        first = min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", []))])
        return first, node.end_lineno or node.lineno

    def classes(body: list[ast.stmt], prefix: str) -> None:
        scope = _Scope(body)
        for name, cls in scope.classes.items():
            for method in _test_methods(cls):
                for heir in scope.runs_as(name, method.name) or [name]:
                    spans.append(TestSpan(f"{prefix}::{heir}::{method.name}", *span(method)))
            classes(cls.body, f"{prefix}::{name}")  # nested classes: `path::TestOuter::TestInner::test_x`

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            spans.append(TestSpan(f"{path}::{node.name}", *span(node)))
    classes(tree.body, path)
    return sorted(spans, key=lambda test_span: (test_span.first, test_span.test_id))


def declared_tests(path: str, source: str) -> list[TestSpan]:
    """Tests in a file with the lines each covers: Python's by `ast` (functions, methods of test classes and their
    heirs), Go's, Rust's and JavaScript/TypeScript's as syntax trees (`syntax.tests`: a JavaScript test by its own
    title, whatever quotes it holds)."""
    if path.endswith(".py"):
        try:
            return python_tests(path, source)
        except SyntaxError:
            pattern = re.compile(r"^(?:async\s+)?def (test\w*)\(", re.M)
            matches = list(pattern.finditer(source))
            total = source.count("\n") + 1
            return [
                TestSpan(
                    f"{path}::{match[1]}",
                    source.count("\n", 0, match.start()) + 1,
                    source.count("\n", 0, following.start()) if following else total,
                )
                for match, following in zip(matches, matches[1:] + [None])
            ]
    return [TestSpan(f"{path}::{test.name}", test.first, test.last, test.titles) for test in tests(path, source)]


def _functions(path: str, source: str) -> dict[str, tuple[int, int]]:
    """The file's functions and methods by name, with their lines."""
    if path.endswith(".py"):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return {}
        functions = (node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
        return {node.name: (node.lineno, node.end_lineno or node.lineno) for node in functions}
    found = definitions(path, source) or []
    functions = (item for item in found if item.kind in ("function", "method"))
    return {item.name.rsplit(".", 1)[-1]: (item.first, item.last) for item in functions}


def helper_changes(path: str, source: str, spans: list[TestSpan], lines: list[int]) -> dict[str, list[int]]:
    """For each test, the changed check lines (`_CHECK`) of the same file's helpers it calls: a test whose helper
    now asserts more checks more, though its own lines are unchanged. A helper that only passes a new argument
    along checks nothing new."""
    text = source.splitlines()
    inside_tests = [(span.first, span.last) for span in spans]
    checked: dict[str, list[int]] = {}
    for name, (first, last) in _functions(path, source).items():
        if any(start <= first and last <= end for start, end in inside_tests):
            continue  # a test, or a function inside one
        ours = [line for line in lines if first <= line <= min(last, len(text))]
        changed = [line for line in ours if _CHECK.match(text[line - 1])]
        if changed:
            checked[name] = changed
    out: dict[str, list[int]] = {}
    for span in spans:
        body = "\n".join(text[span.first - 1 : span.last])
        called = [name for name in checked if re.search(rf"(?<![\w.])(?:self\.)?{re.escape(name)}\s*\(", body)]
        if called:
            out[span.test_id] = sorted({line for name in called for line in checked[name]})
    return out


_COMMENT = re.compile(r"(?:^|(?<=\s))(?://|#)[^\n]*|/\*.*?\*/", re.S)


def code_of(source: str, span: TestSpan, path: str = "") -> str:
    """A test's code without its comments, spaces and trailing commas: what it checks, however laid out; a Python
    test's without its type annotations too (markupsafe's `-> None` on every test checked nothing new)."""
    text = "\n".join(source.splitlines()[span.first - 1 : span.last])
    if path.endswith(".py"):
        try:
            return ast.dump(_Unannotated().visit(ast.parse(textwrap.dedent(text))))
        except SyntaxError:
            pass
    return re.sub(r",(?=[)\]}])", "", re.sub(r"\s+", "", _COMMENT.sub("", text)))


class _Unannotated(ast.NodeTransformer):
    """Python code as it runs: no return or parameter annotations, `x: int = 1` as `x = 1`."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        for argument in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            argument.annotation = None
        for argument in (node.args.vararg, node.args.kwarg):
            if argument is not None:
                argument.annotation = None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=self.visit(node.value))


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
    whether the description covers commit `sha`; `labels[sha]` names it in exclusion reasons. A test also counts
    as changed by the changed checks of the helpers it calls (`helper_changes`).
    Blame runs only for files that an undescribed commit touched: otherwise every changed
    test is covered whoever wrote which line.
    """
    accepted: list[str] = []
    excluded: list[ExcludedTest] = []
    for path, lines in sorted(changed_lines.items()):
        blob = repo.show(verify, path)
        if blob is None:
            continue
        source = blob.decode("utf-8", "replace")
        spans = declared_tests(display(path), source)
        if not spans:
            continue
        helpers = helper_changes(display(path), source, spans, lines)
        earlier = (repo.show(base, path) or b"").decode("utf-8", "replace")
        before = {span.test_id: code_of(earlier, span, path) for span in declared_tests(display(path), earlier)}
        writers = touched_by.get(path, set())
        needs_blame = not writers or not all(described.get(sha, False) for sha in writers)
        origins = repo.blame_origins(base, verify, path) if needs_blame else None
        for span in spans:
            changed = [line for line in lines if span.first <= line <= span.last] + helpers.get(span.test_id, [])
            if not helpers.get(span.test_id) and before.get(span.test_id) == code_of(source, span, path):
                continue  # only comments or layout changed (`//nolint`, a trailing comma): the test checks the same
            if origins is None:
                shas = set(writers) if changed else set()
            else:
                shas = {origins[line - 1] for line in changed if line - 1 < len(origins)}
                shas.discard(None)
            if not shas:
                continue
            if any(described.get(sha, False) for sha in shas):
                accepted.append(span.test_id)
            else:
                who = ", ".join(sorted(labels.get(sha, sha[:10]) for sha in shas))
                excluded.append(
                    ExcludedTest(
                        test=span.test_id, reason=f"changed only by {who}, which the description does not cover"
                    )
                )
    return accepted, excluded


def title_template(title: str) -> re.Pattern:
    """A JavaScript test title made from a template literal (`should error with value ${util.inspect(v)}`) as the
    titles it makes, at the end of an id of joined titles: each `${...}` is any text."""
    pieces = re.split(r"\$\{[^}]*\}", title)
    return re.compile(r"(?:^|\s|::)" + ".+?".join(re.escape(piece) for piece in pieces) + "$")
