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

import posixpath
import re
from dataclasses import dataclass, field

from .. import syntax
from ..gitio import GitRepo
from ..models import AcceptanceCriterion, InterfaceItem
from .declared_tests import TestSpan, declared_tests, title_template
from .interface_python import Definition, Usage, definitions, usage
from .test_checks import criterion, new_value_reader, pinned_values, quoted_checks

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# a new module constant that sets a limit or a default no test names, yet every test of the limit follows it:
# python-multipart's `DEFAULT_MAX_HEADER_COUNT = 8` ("Add multipart header limits" said no number)
_LIMIT = re.compile(r"^(?:DEFAULT|MAX|MIN|LIMIT)(?:_[A-Z0-9]+)+$|^[A-Z0-9_]+_(?:LIMIT|MAX|MIN|DEFAULT)$")
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


def selected_spans(spans: list[TestSpan], test_ids: list[str]) -> list[TestSpan]:
    """The spans of `test_ids`: by whole id, by the suites' and test's titles joined (mocha's `Route .all should
    handle VERBS`, jest's `Route > .all > should handle VERBS`), else (a runner's id spelled otherwise) by the
    test's own name."""
    unparametrised = {re.sub(r"\[.*\]$", "", test_id) for test_id in test_ids}
    exact = {span.test_id for span in spans} & unparametrised
    titled = {test_id.split("::", 1)[-1] for test_id in unparametrised - exact}
    by_titles = [
        span for span in spans if len(span.titles) > 1 and {" ".join(span.titles), " > ".join(span.titles)} & titled
    ]
    wanted = {name for test_id in unparametrised - exact for name in _short_names(test_id)}
    # a title made from a template (node-jsonwebtoken's `should error with value ${util.inspect(nonce)}`): each title
    # it makes is an id of its own, none the span's
    made = [
        span
        for span in spans
        if "${" in span.test_id
        and any(title_template(" ".join(span.titles)).search(test_id) for test_id in unparametrised - exact)
    ]
    by_titles += [span for span in made if span not in by_titles]
    if by_titles:  # the suites name them: not every test of that title in the file
        return [span for span in spans if span.test_id in exact or span in by_titles]
    return [span for span in spans if span.test_id in exact or span.test_id.rsplit("::", 1)[-1] in wanted]


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


def declarations(text: str, path: str) -> dict[str, Definition]:
    """Named definitions of a Go, TypeScript/JavaScript or Rust file (`syntax.definitions`), by qualified name
    (`Command.option`, Go's `Router.Handle`), each with its signature and the comment above it. The members of a
    TypeScript interface or type are its shape, not names to provide: only the type is listed."""
    return {
        definition.name: Definition(definition.name, definition.kind, definition.signature, definition.doc)
        for definition in syntax.definitions(path, text) or []
    }


def _package_before(sources: dict[str, tuple[str | None, str | None]], path: str) -> dict[str, Definition]:
    """A Go file's package as it was, across its directory's changed files: a type or field moved to another file of
    the package (go-pretty's `Row` into `table/row.go`) is no new name."""
    if not path.endswith(".go"):
        return {}
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    found: dict[str, Definition] = {}
    for other, (before, _) in sources.items():
        if other != path and other.endswith(".go") and (other.rsplit("/", 1)[0] if "/" in other else "") == folder:
            found |= declarations(before or "", other)
    return found


def changed_sources(
    repo: GitRepo, base: str, verify: str, paths: list[str]
) -> dict[str, tuple[str | None, str | None]]:
    """Each changed source file before and after; a file moved (tablib's `packages/dbfpy` into `_vendor/dbfpy`) was
    before what it was at its old path, so its names are not new."""
    found = {path: (_text(repo, base, path), _text(repo, verify, path)) for path in paths}
    moved = repo.renamed(base, verify) if any(before is None for before, _ in found.values()) else {}
    for path, (before, after) in found.items():
        if before is None and path in moved:
            found[path] = (_text(repo, base, moved[path]), after)
    return found


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
        elif re.fullmatch(r"[\w.-]*[_.-][\w.-]*", value) and re.search(r"[A-Za-z]", value):  # not a date: `1982-05`
            items.append(InterfaceItem(name=value, kind="key"))
        elif " " in value.strip() and re.search(r"[a-z]", value) and re.search(r"[A-Za-z]{3}", value):
            # not a fragment of SQL (`SET DEFAULT`), nor a display format (`%Y-%m-%d %H:%M:%S`): a message has words
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
    task_examples: int | None = None,
) -> Interface:
    """The interface the tests `test_ids` (in `test_paths`, changed by the milestone) need from the changed
    `source_paths`, and one criterion per test with up to `examples` of the assertions the diff adds to it
    (`planning.assertion_examples`), and up to `new_value_examples` more that expect a value only the new source
    holds (`planning.new_value_examples`); with many tests, fewer: `task_examples` over the task, and never fewer
    than two per test (`planning.task_examples`). `where` names the milestone in warnings."""
    result = Interface()
    used = Usage()
    sources = changed_sources(repo, base, verify, source_paths)
    new_value = new_value_reader(
        [before or "" for before, after in sources.values() if after is not None],
        [after for _, after in sources.values() if after is not None],
    )
    read: list[tuple[str, str, set[int], list[TestSpan], list[tuple[TestSpan, list[str]]]]] = []
    required: set[str] = set()  # the module files the JavaScript tests require by path (`../lib/utils`)
    for path in test_paths:
        source = _text(repo, verify, path)
        if source is None:
            continue
        spans = declared_tests(path, source)
        added = _added_lines(repo, base, verify, path)
        if test_ids:
            chosen = selected_spans(spans, test_ids)
        else:  # nothing traced: the tests the milestone's diff adds or changes
            chosen = [span for span in spans if any(span.first <= line <= span.last for line in added)]
        by_body: dict[tuple[int, int], list[str]] = {}  # a mixin's test runs in several classes: one criterion
        for span in chosen:
            by_body.setdefault((span.first, span.last), []).append(span.test_id)
        spans_of = {(span.first, span.last): span for span in chosen}
        read.append((path, source, added, chosen, [(spans_of[body], ids) for body, ids in by_body.items()]))
    count = sum(len(groups) for *_, groups in read)
    if task_examples is not None and count:
        examples = min(examples, max(2, task_examples // count))
    for path, source, added, chosen, groups in read:
        for span, ids in groups:
            quoted = quoted_checks(path, source, span, added, examples, new_value, new_value_examples)
            text = criterion(path, source, span, quoted)
            if len(ids) > 1:
                text = text.replace("`: ", f"` (and in {len(ids) - 1} more test classes): ", 1)
            result.pinned |= pinned_values(source, span, added, new_value)
            if any(known.text == text for known in result.criteria):
                continue  # two tests of one title in one file (multer's two "should notify of missing field name")
            result.criteria.append(AcceptanceCriterion(text=text, source="test", tests=ids))
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
            if path.endswith(".go"):  # a Go test file compiles whole: a name any of its tests uses is needed to
                # run the graded ones (progressbar's `OptionShowTotalBytes`, in tests beside the graded one)
                names |= syntax.used(path, source, [(1, source.count("\n") + 1)])[0]
            used.names |= names
            used.strings |= strings
            required |= _required_modules(path, source)
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
            passed = {param for _, param in used.keywords}  # `get_html_string(escape_header=False)`: an option
            for definition in added:  # read from **kwargs that is also a new property is a name to provide
                if definition.name.rsplit(".", 1)[-1] in used.names | passed:
                    result.items.append(_item(definition))
                elif definition.kind == "constant" and _LIMIT.search(definition.name.rsplit(".", 1)[-1]):
                    result.items.append(_item(definition).model_copy(update={"kind": "default"}))
            for definition, param in params:
                function = definition.name.rsplit(".", 1)[-1]
                owner = definition.name.rsplit(".", 2)[-2] if function == "__init__" else function
                # or passed by name to another call that forwards its **kwargs: tablib's `export("xlsx",
                # column_width=...)` reaches the new `XLSXFormat.export_set(column_width)` (eighteenth set)
                if (owner, param) in used.keywords or (function, param) in used.keywords or param in passed:
                    result.items.append(
                        InterfaceItem(
                            name=f"{definition.name.removesuffix('.__init__')}({param})",
                            kind="parameter",
                            signature=definition.signature,
                            doc=definition.doc,
                        )
                    )
        elif syntax.language_of(path):
            old = declarations(before or "", path) | _package_before(sources, path)
            module = path.rsplit(".", 1)[0]
            reached = module in required or module.removesuffix("/index") in required
            declared = declarations(after, path)
            shown: list[InterfaceItem] = []
            for name, definition in declared.items():
                if name.rsplit(".", 1)[-1] not in used.names:
                    continue
                if name not in old:
                    shown.append(_item(definition).model_copy(update={"module": path if reached else ""}))
                elif definition.kind in ("function", "method") and _changed(
                    old[name].signature, definition.signature, path
                ):
                    shown.append(
                        _item(definition).model_copy(update={"kind": "signature", "before": old[name].signature})
                    )
            # a new type a shown signature names, though no test does (logrus's `InfoFn(fn LogFunction)`): the Dev
            # must declare it as the tests' arguments fit it
            named = {word for item in shown for word in re.findall(r"[A-Za-z_]\w*", item.signature)}
            typed = [
                _item(definition).model_copy(update={"module": path if reached else ""})
                for name, definition in declared.items()
                if name not in old and definition.kind == "class" and name in named and name not in used.names
            ]
            result.items += typed + shown
        else:
            result.warnings.append(
                f"{where}: no declaration reader for {extension or 'extensionless'} files ({path}): "
                "its new names are not in the interface"
            )
    keywords = {param for _, param in used.keywords}  # a keyword only the new code names, as a string (**kwargs)
    shorts = {item.short for item in result.items}
    literals = _literals(used.strings | keywords, before_texts, after_texts)
    result.items += [item for item in literals if item.kind != "key" or item.name not in shorts]
    result.items = list({(item.kind, item.name): item for item in result.items}.values())
    result.used = used
    return result


_REQUIRE = re.compile(r"""(?:require\(\s*|\bfrom\s+|\bimport\s+)['"](\.{1,2}/[^'"]+)['"]""")


def _required_modules(path: str, source: str) -> set[str]:
    """The repository paths, without extension, of the modules a JavaScript test file requires or imports by a
    relative path: `require('../lib/utils')` in `test/x.js` is `lib/utils`."""
    folder = posixpath.dirname(path)
    found = {posixpath.normpath(posixpath.join(folder, specifier)) for specifier in _REQUIRE.findall(source)}
    return {re.sub(r"\.(?:[cm]?[jt]sx?)$", "", module) for module in found}


def _changed(before: str, after: str, path: str = "") -> bool:
    """Two declarations differ beyond spacing and parameter names (a parameter added, removed or retyped; a result
    changed): router's lint put a blank before every `(` (`function param (name, fn)`), and log renamed `ctx` to `_`
    in `Handle(ctx context.Context, ...)`; neither changes what a caller writes."""
    spaced = lambda text: re.sub(r"\s*([^\w\s])\s*", r"\1", " ".join(text.split()))  # noqa: E731
    return bool(before and after) and spaced(_unnamed(before, path)) != spaced(_unnamed(after, path))


# a parameter's name before its type: Go's `ctx context.Context`, TypeScript's and Rust's `ctx?: Context`
_NAMED_PARAMETER = {
    "go": re.compile(r"^\s*[A-Za-z_]\w*\s+(?=[*\[A-Za-z_.(]|\.\.\.)"),
    "other": re.compile(r"^\s*(?:\.\.\.)?[A-Za-z_$][\w$]*\??\s*:(?!:)"),
}


def _unnamed(signature: str, path: str) -> str:
    """`signature` with the names of its top-level brackets' parameters dropped, their types kept."""
    named = _NAMED_PARAMETER["go" if path.endswith(".go") else "other"]
    result, part, depth = [], [], 0
    for character in signature:
        if depth == 1 and character in ",)":
            result.append(named.sub("", "".join(part)))
            part = []
        if character in "([{<":
            depth += 1
        elif character in ")]}>" and depth:
            depth -= 1
        (part if depth >= 1 and not (depth == 1 and character in "(,") else result).append(character)
    return "".join(result) + "".join(part)


def _item(definition: Definition, longest_value: int = 80) -> InterfaceItem:
    """A definition as the task names it; a constant's long value (a test table) is the Dev's to write, not read."""
    signature = definition.signature
    if definition.kind in ("constant", "attribute") and len(signature) > longest_value and "=" in signature:
        signature = signature.split("=", 1)[0].strip()
    return InterfaceItem(name=definition.name, kind=definition.kind, signature=signature, doc=definition.doc)
