"""What a milestone's change adds to the user documentation about the names its tests use.

A README or docs page the change extends often states exactly what the tests pin (the values a setting
accepts, what a new function returns for each input) while the release note is one line ("Add
`truncate` function"). Those added paragraphs are the repository's own statement of the behaviour, so
the task quotes them: the ones that name something the acceptance tests use, whole, up to a budget.
Changelogs, security and contributing pages are no user documentation; a paragraph naming a changed
source file is left out (the description never names where the solution goes). A changed source file's
docstrings and doc comments are a page too (`docstrings`): many libraries document there, not in a README.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from unidiff import PatchSet

from ..gitio import GitRepo
from . import docstrings

DOCUMENT_EXTENSIONS = (".md", ".mdx", ".rst", ".adoc", ".txt")
_PLAIN_TEXT_PAGE = re.compile(r"(?i)(^|/)readme[^/]*\.txt$|^docs?/")  # a .txt elsewhere is data (a test's output)
_NOT_USER_DOCUMENTATION = re.compile(
    r"(?i)(^|/)(changelog|changes|history|news|releases?|security|contributing|code_of_conduct|license|authors|"
    r"requirements[\w.-]*|pull_request_template|issue_template)(\.[\w]+)?$|(^|/)\.github/|(^|/)changelog\.d/"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
# a token that reads as code: in backticks, with an underscore, a digit after letters, an inner capital, or a --flag
_CODE_TOKEN = re.compile(r"`([^`\n]+)`|(--?[A-Za-z][\w-]+)|\b([A-Za-z]\w*(?:_\w+|[a-z][A-Z]\w*|[A-Za-z]\d\w*))\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w-]*")


def is_user_documentation(path: str) -> bool:
    """A page users read (README, docs/, site/ content), not a changelog, policy or requirements file."""
    if path.lower().endswith(".txt") and not _PLAIN_TEXT_PAGE.search(path):
        return False
    return path.lower().endswith(DOCUMENT_EXTENSIONS) and not _NOT_USER_DOCUMENTATION.search(path)


def blocks(text: str) -> list[tuple[int, int]]:
    """A page's paragraphs as (first, last) line numbers (1-based): runs of non-blank lines, a fenced block
    (with the lines that open and close it) one paragraph, blank lines inside it and all."""
    found: list[tuple[int, int]] = []
    start = None
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if _FENCE.match(line):
            if not fenced and start is not None:
                found.append((start, number - 1))
                start = None
            start = number if start is None else start
            fenced = not fenced
            if not fenced:
                found.append((start, number))
                start = None
            continue
        if fenced:
            continue
        if line.strip() and start is None:
            start = number
        elif not line.strip() and start is not None:
            found.append((start, number - 1))
            start = None
    if start is not None:
        found.append((start, len(text.split("\n"))))
    return found


def added_line_numbers(patch_text: str) -> set[int]:
    """The new file's line numbers a one-file unified diff adds."""
    return {
        line.target_line_no
        for file in PatchSet(patch_text)
        for hunk in file
        for line in hunk
        if line.is_added and line.value.strip()
    }


def _code_tokens(paragraph: list[str]) -> set[str]:
    """The code-like names a paragraph gives (`load_dotenv()` -> load_dotenv, `--inc` -> --inc)."""
    tokens: set[str] = set()
    for match in _CODE_TOKEN.finditer("\n".join(paragraph)):
        if match[1]:
            tokens |= set(_IDENTIFIER.findall(match[1])) | {match[1].strip()}
        else:
            tokens.add(match[2] or match[3])
    return tokens


def documented(
    repo: GitRepo,
    base: str,
    verify: str,
    paths: list[str],
    names: set[str],
    withheld: list[str],
    max_lines: int = 30,
) -> list[str]:
    """The paragraphs of the user documentation among `paths` (pages, and source files' docstrings) that the change adds
    to or edits and that name one of `names` (what the tests use) or document one of them, each whole as the verify
    commit has it, in page order, up to `max_lines` lines in all; a paragraph naming a `withheld` path or file name is
    left out, and one the pages said before (in other markup, or moved) too. Blank lines separate the paragraphs."""
    wanted = {name for name in names if len(name) >= 3}
    hidden = {form for path in withheld for form in (path, PurePosixPath(path).name)}
    pages = [path for path in paths if is_user_documentation(path)] + [
        path for path in paths if not is_user_documentation(path) and docstrings.readable(path)
    ]
    said = _words("\n".join(_page(repo, base, path)[0] for path in pages))
    lines: list[str] = []
    # the words of each paragraph quoted so far, with the line labelling it and the definitions it documents: one
    # doc comment shared by several definitions (tablewriter's header, row and footer builders; log's two
    # `WithGroup`) is quoted once, labelled with each
    quoted: dict[str, tuple[int | None, list[str]]] = {}
    for path in pages:
        text, owned, owners = _page(repo, verify, path)
        if not text:
            continue
        patch = repo.run("diff", "--no-color", "--no-ext-diff", base, verify, "--", path, check=False)
        mine = {number for number, owner in owned.items() if owner in wanted}
        found = naming(text, added_line_numbers(patch.decode("utf-8", "replace")), wanted, hidden, mine)
        last_owner, position = "", 0
        for unit in _announced(found):
            words = _words(chr(10).join(unit))
            if f" {words} " in f" {said} ":
                continue  # said before, in other markup or on another page (loguru's README.rst -> README.md)
            owner, position = _owner(unit, text, owners, position)
            if _private(owner, path) and owner.rsplit(".", 1)[-1] not in wanted:
                continue  # a helper's docstring is for maintainers: pydantic-settings' `_settings_log_debug`
            shown = owner.removesuffix(".__init__")
            if words in quoted:
                label, documents = quoted[words]
                if label is not None and shown and shown not in documents:
                    documents.append(shown)
                    lines[label] = f"From the documentation of {_listed(documents)}."
                continue
            labelled = owner and owner != last_owner and owner.rsplit(".", 1)[-1] not in unit[0]
            if labelled:
                unit = [f"From the documentation of `{shown}`.", *unit]
            last_owner = owner
            if path.endswith((".rst", ".txt", ".py")):
                unit = [plain_rest(line) if not line.startswith("    ") else line for line in unit]
            elif not unit[0].lstrip().startswith(("```", "~~~")):
                unit = [_LOCAL_LINK.sub(r"\1", line) for line in unit]
            if len(lines) + len(unit) + 1 > max_lines:
                continue  # whole paragraphs only: a shorter one further on may still fit
            lines += ([""] if lines else []) + unit
            quoted[words] = (len(lines) - len(unit) if labelled else None, [shown])
    return lines


def _listed(names: list[str]) -> str:
    """`A`, `A` and `B`, `A`, `B` and `C`."""
    spans = [f"`{name}`" for name in names]
    return spans[0] if len(spans) == 1 else f"{', '.join(spans[:-1])} and {spans[-1]}"


def _page(repo: GitRepo, revision: str, path: str) -> tuple[str, dict[int, str], dict[int, str]]:
    """A user page's text, or a source file's docstrings and doc comments as a page (`docstrings.page`) with the
    lines owned by a definition and every line's definition; empty where the file is not at `revision`."""
    content = repo.show(revision, path)
    if content is None:
        return "", {}, {}
    text = content.decode("utf-8", "replace")
    if is_user_documentation(path):
        return text, {}, {}
    found = docstrings.page(path, text)
    return (found.text, found.owned, found.owners) if found else ("", {}, {})


def _private(owner: str, path: str = "") -> bool:
    """`Settings._log`, `_helpers.read`, Go's unexported `Tracker.extractAll`: a name no user calls (a dunder like
    `__init__` is public)."""
    parts = owner.split(".") if owner else []
    go = path.endswith(".go") and any(part[:1].islower() for part in parts)
    module = PurePosixPath(path).stem  # a private module's own docstring (sqlite-utils' `_parser.py`)
    return go or any(part.startswith("_") and not part.endswith("__") for part in [module, *parts])


def _owner(unit: list[str], text: str, owners: dict[int, str], after: int = 0) -> tuple[str, int]:
    """The definition whose docstring a quoted paragraph is (its first lines found where they stand on the page, past
    line `after`: the paragraphs come in page order), and that line, so the task can say whose it is:
    python-multipart's "Args: name: ... content_type: ..." alone read as raw fragments; pydantic-settings has a
    dozen "Args:" lines, each of its own function; tablewriter's header, row and footer builders share one
    docstring. ("", `after`) for a page's own text."""
    page = text.split("\n")
    head = unit[: next((at for at, line in enumerate(unit) if not line.strip()), len(unit))]
    for at in range(after + 1, len(page) - len(head) + 2):
        if at in owners and page[at - 1 : at - 1 + len(head)] == head:
            return owners[at], at
    return "", after


def _announced(paragraphs: list[list[str]]) -> list[list[str]]:
    """The paragraphs with each colon lead-in joined to what it announces (the code, paragraph or list items after
    it), so a lead-in is quoted with its example or not at all ("For example:" alone reads broken)."""
    units: list[list[str]] = []
    in_list = in_code = False  # the last unit ends in the items of a list, or the indented code, it announced
    for paragraph in paragraphs:
        item, code = _ITEM.match(paragraph[0]) is not None, _margin(paragraph) > 0
        if units and (units[-1][-1].rstrip().endswith(":") or in_list and item or in_code and code):
            units[-1] += paragraph if item else ["", *paragraph]
            in_list, in_code = item, code and not item
        else:
            units.append(list(paragraph))
            in_list = in_code = False
    return units


_REST_INLINE = [
    # Sphinx's autodoc directive names what it documents: `.. autofunction:: platformdirs.user_projects_dir`
    (re.compile(r"^(\s*)\.\. (?:auto\w+|py:\w+|function|method|class|attribute|data)::\s*(\S+).*$"), r"\1`\2`:"),
    # a :ref: to a label: its text, or the label's last part (platformdirs' :ref:`platforms:\`\`user_projects_dir\`\``)
    (re.compile(r":ref:`([^`<\n]+?)\s*<[^>\n]+>`"), r"\1"),
    (re.compile(r":ref:`(?:[^`\n]*?:)?((?:\\`|[^`\n])+)`"), lambda found: f"`{found[1].replace(chr(92) + '`', '')}`"),
    (re.compile(r"`([^`<\n]+?)\s*<[^>\n]+>`__?"), r"\1"),  # a link: its words (`tee <https://...>`__)
    (re.compile(r"(?<!`)`([^`\n]+?)`__?(?!\w)"), r"\1"),  # a named reference (`Sphinx`_): its words
    (re.compile(r"(?::[\w:.-]+:)?``?([^`\n]+?)``?(?!_)"), r"`\1`"),  # ``code``, :func:`name`, `text`: code
    (re.compile(r"(?<![\w|])\|(\w[\w.-]*)\|(?![\w|])"), r"`\1`"),  # a substitution (loguru's |add|): its name
    # a version note and an admonition in words (stamina's `.. versionadded:: 25.2.0` read as raw markup, and `::`
    # below cut `.. note::` to `.. note:`); a code block's directive goes, its indented code stays
    (re.compile(r"^(\s*)\.\. versionadded::\s*(\S+)\s*"), r"\1Added in version \2: "),
    (re.compile(r"^(\s*)\.\. versionchanged::\s*(\S+)\s*"), r"\1Changed in version \2: "),
    (re.compile(r"^(\s*)\.\. deprecated::\s*(\S+)\s*"), r"\1Deprecated since version \2: "),
    (
        re.compile(r"^(\s*)\.\. (note|warning|tip|hint|important|caution|attention|danger|seealso)::\s*"),
        lambda found: f"{found[1]}{'See also' if found[2] == 'seealso' else found[2].capitalize()}: ",
    ),
    (re.compile(r"^\s*\.\. (?:code-block|code|sourcecode|highlight|doctest|testcode|testoutput)::.*$"), ""),
    (re.compile(r"(?<=\S)::$"), ":"),  # "For example::" introduces its literal block
]


# a Markdown link to another page of the site or a heading of this one: its words (the Dev reads the quote, not the
# site: pydantic-settings' "raises a [`SettingsError`](../api/pydantic_settings.md#...)"); web links are kept
_LOCAL_LINK = re.compile(r"(?<![\w\])])\[([^\]\n]+)\]\((?!https?:|mailto:)[^)\s]+\)")


def plain_rest(line: str) -> str:
    """A reST line as the task's Markdown shows it: links as their words, literals and roles as code."""
    for pattern, replacement in _REST_INLINE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def _words(text: str) -> str:
    """A text's words, lower-case, one space apart, link targets aside: the same paragraph in reST and Markdown."""
    text = re.sub(
        r"\]\([^)\s]*\)|<https?://[^>\s]*>|https?://\S+|^\s*\.\. [^\n]*|^\s*(?:```|~~~)[\w+-]*\s*$",
        " ",
        text,
        flags=re.M,
    )  # link targets, reST directives and a fence's language are no words of the text
    return " ".join(re.findall(r"[a-z0-9]+(?:_+[a-z0-9]+)*", text.lower()))


def naming(
    text: str, added: set[int], names: set[str], hidden: set[str], owned: set[int] = frozenset()
) -> list[list[str]]:
    """The prose paragraphs (list items apart) of a page that hold an `added` line and name one of `names` (or hold an
    `owned` line: a docstring of one of them) and none of `hidden`, with the changed paragraph a colon leads out of and
    the paragraph or whole list a colon leads into ("For example:" and its code, "four extra attributes:" and its four
    items, changed or not). A code block alone is no statement of behaviour (an example edited to a new type is
    everywhere on a page); a heading alone, a list of links and a page's YAML front matter say nothing."""
    page = [line.rstrip() for line in text.split("\n")]
    front = _front_matter(page)
    spans = [
        (place, first, last)
        for place, block in enumerate(blocks(text))
        for first, last in _items(page, *block)
        if first > front
    ]
    every = [(page[first - 1 : last], any(first <= number <= last for number in added)) for _, first, last in spans]
    block_of = [place for place, _, _ in spans]  # which paragraph of the page each item or paragraph is in
    chosen = {
        index
        for index, ((paragraph, changed), (_, first, last)) in enumerate(zip(every, spans))
        if changed
        and not _FENCE.match(paragraph[0])
        and _margin(paragraph) < 4  # an indented block is code too (reST's, Markdown's): quoted only as announced
        and _says_something(paragraph)
        and (_code_tokens(paragraph) & names or any(first <= number <= last for number in owned))
        and not any(form in line for form in hidden for line in paragraph)
    }
    chosen |= {index - 1 for index in chosen if index > 0 and _REFERS_BACK.match(every[index][0][0])}
    for index in sorted(chosen):
        if index > 0 and every[index - 1][1] and every[index - 1][0][-1].endswith(":"):
            chosen.add(index - 1)
        if every[index][0][-1].endswith(":") and index + 1 < len(every):
            chosen.add(index + 1)  # what it announces: a code block, a paragraph or a whole list
            following, margin = index + 2, _margin(every[index + 1][0])
            while following < len(every) and (
                block_of[following] == block_of[index + 1] or margin and _margin(every[following][0]) >= margin
            ):  # a list's next item, or a reST literal block's next paragraph (indented as deep)
                chosen.add(following)
                following += 1
    return [every[index][0] for index in sorted(chosen)]


# a paragraph about the one before it ("The above returns `false`."): quoted alone it points at nothing
_REFERS_BACK = re.compile(
    r"^\s*(?:the (?:example |code |snippet )?above|above,|in the (?:above )?example|the previous)\b", re.I
)


def _margin(paragraph: list[str]) -> int:
    """How far a paragraph's first line is indented (0: not at all)."""
    return len(paragraph[0]) - len(paragraph[0].lstrip())


def _front_matter(page: list[str]) -> int:
    """The last line of a page's YAML front matter (`---` ... `---` at its top), 0 when it has none."""
    if not page or page[0].strip() != "---":
        return 0
    return next((number for number in range(2, len(page) + 1) if page[number - 1].strip() == "---"), 0)


def _says_something(paragraph: list[str]) -> bool:
    """Not a heading alone (`### TakeWhile`, a reST title and its underline) nor links alone (a table of contents)."""
    text = "\n".join(paragraph)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", "", text)  # a Markdown link says its text only as a link
    lines = [line for line in text.split("\n") if line.strip()]
    headings = [line for line in lines if re.match(r"^\s*#{1,6}\s|^\s*([=\-~^*+#])\1{2,}\s*$", line)]
    if len(lines) <= 2 and (headings or not lines):
        return False
    return bool(re.search(r"[A-Za-z]{2,}\W+[A-Za-z]{2,}", re.sub(r"^\s*(?:[-*+]|\d+[.)])\s*", "", text, flags=re.M)))


_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s")


def _items(page: list[str], first: int, last: int) -> list[tuple[int, int]]:
    """A paragraph that is a list, as its top-level items (and the lines before the first); else itself."""
    if _FENCE.match(page[first - 1]):
        return [(first, last)]
    starts = [(number, len(match[1])) for number in range(first, last + 1) if (match := _ITEM.match(page[number - 1]))]
    if len(starts) < 2:
        return [(first, last)]
    indent = min(width for _, width in starts)
    cuts = [number for number, width in starts if width == indent]
    cuts = ([first] if cuts[0] != first else []) + cuts
    return [(start, end - 1) for start, end in zip(cuts, cuts[1:] + [last + 1])]
