"""The text a Dev is given, read as a reader would: holes, leftovers and residue a reader stumbles on.

`text_problems` finds, outside code, what removing words leaves ("with instead of.", "from to.", "()", "{class}"),
credits without their names ("Thanks for reporting.", "by in"), references left behind (`#12`, `@someone`), and
a link shown as code. `task_problems` reads a whole task: a heading with nothing under it, an example missing
after the colon that announces it, a test's name cut short. Each problem is one line quoting where it is; the
plan counts the tasks that have any (its `broken_texts`), planning and validation alike.
"""

from __future__ import annotations

import re

_FENCED = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(?:[:{][\w:.-]+[:}])?(`+)(?!`).+?(?<!`)\1(?!`)")  # a role's target is code too
_PREPOSITIONS = r"with|from|of|by|via|than|instead of|as|into|using|between|vs|versus|the|an?"
# (pattern over text whose code spans read `CODE`, what a reader sees)
_HOLES = [
    (  # "instead of." ends a sentence; "a :port" is a word (punctuation then a space or the end is the end)
        re.compile(rf"\b(?:{_PREPOSITIONS})\s*(?=[.;:!?)](?:\s|$)|$)", re.I | re.M),
        "a sentence ends where a word was removed",
    ),
    (  # "the same fix as, applied in two more functions": the object of "as" was a link
        re.compile(r"\b(?:as|than|of|the|an?|from|into|via|between)\s*,(?=\s)", re.I),
        "a clause lost its object",
    ),
    (
        re.compile(
            r"\b(?!as of\b)(?:with|from|to|in|of|by|for|as|than)\s+(?:instead of|to|from|of|with|by|as|than)\b", re.I
        ),
        "two prepositions meet where a word was removed",
    ),
    (re.compile(r",\s*(?:or|and)\s*(?:,\s*)?(?:instead\b|[.;)]|$)", re.M), "a list lost its items"),
    (
        re.compile(r"[-\u2013\u2014,;]\s*(?:fixes|closes|resolves|refs|see)\s*(?=[.;:!?)]|$)", re.I | re.M),
        "a link lost its target",
    ),
    (
        re.compile(r"\b(?:if|when|unless|whether|because)\s+(?:is|are|was|were|has|have)\b", re.I),
        "a subject is missing",
    ),
    (
        re.compile(
            r"(?:^|[.!?]\s+|^\s*[-*]\s+)(?:add|use|remove|deprecate|rename)\s+(?:to|for|with|of|as|and)\b", re.I | re.M
        ),
        "an object is missing",
    ),
    (re.compile(r"(?<![\w.\]])\(\s*[,;]?\s*\)|\[\s*\]"), "empty brackets"),  # `GetHost()` is a call: not a hole
    (re.compile(r"\{\w[\w:.-]*\}|(?<![\w`]):[\w-]+:(?=`|\s)"), "markup left in the text"),
    (re.compile(r"(?<![\w`])_{1,2}(?![\w`])"), "a lone underscore"),
    (re.compile(r"\s[.,;:](?=\s|$)|[,;]{2,}|\.\s*,"), "punctuation without its words"),
    (re.compile(r"…"), "text cut mid-sentence"),
    (re.compile(r"`"), "unbalanced backticks"),
    (  # "Thanks for reporting.", "Thanks to for the PR", "by in", "reported by."
        re.compile(
            r"(?:^|(?<=[.!?(]\s)|(?<=\()|(?<=^[-*]\s))(?:many )?thanks?(?: you)?(?: to)?\s*(?:for\b|[.!,)]|$)|"
            r"\bby\s+(?:in|and|for)\b|\b(?:reported|contributed|suggested|requested|proposed) by\s*(?:[.,;)]|$)",
            re.I | re.M,
        ),
        "a credit left without its name",
    ),
    (re.compile(r"(?<![\w`@./\"'])@[A-Za-z0-9][\w-]*\b(?![(.\w\"'])"), "a person's handle left in the text"),
    (re.compile(r"(?<![\w\"'])(?:\"\"|'')(?![\w\"'])"), "empty quotes where a word was removed"),
    (re.compile(r"\b(?:incl|e\.g|i\.e|cf|see|via)\.?\s*\)", re.I), "a list lost its items"),
    (re.compile(r"(?<![\w&/#`])(?:#\d+|GHSA(?:-\w{4}){3})\b"), "a reference left in the text"),
]


def code_span(content: str, syntax: str = "markdown") -> str:
    """`content` as a code span, fenced with more backticks than it holds (reStructuredText: a literal)."""
    if syntax == "rst":
        return f"``{content}``" if "``" not in content else f":code:`{content}`"
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if content.startswith("`") or content.endswith("`") else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def prose(text: str) -> str:
    """`text` as a reader scans its sentences: fenced blocks gone, each code span (a role's too) one word, `CODE`."""
    return _CODE_SPAN.sub("CODE", _FENCED.sub(" CODE", text))


def _holes(text: str) -> list[tuple[str, str, str]]:
    """(what, key, context) of each hole: the key is the match with the word before it."""
    found = []
    scanned = prose(text)
    for pattern, what in _HOLES:
        for match in pattern.finditer(scanned):
            before = scanned[: match.start()].split()[-1:]
            key = " ".join([*before, match[0].strip()]).lower()
            start = max(match.start() - 30, 0)
            found.append((what, key, " ".join(scanned[start : match.end() + 30].split())))
    return found


def text_problems(text: str, source: str | None = None, where: str = "") -> list[str]:
    """Holes and leftovers a reader would stumble on, one line each (empty: the text reads whole).
    With `source` (what `text` was rendered from), only the holes the source did not have: an author
    may end a sentence with "registered with." and that is theirs."""
    theirs = {(what, key) for what, key, _ in _holes(source)} if source else set()
    problems = []
    for what, key, context in _holes(text):
        if (what, key) not in theirs:
            problems.append(f"{where + ': ' if where else ''}{what}: “…{context}…”")
    return list(dict.fromkeys(problems))


_LINK_AS_CODE = re.compile(r"`[^`\n]*<https?://[^`\n]*>[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}\s+\S")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
_CUT_TEST = re.compile(r"^\s*- `[^`\n]*::[^`\n]*\s`")
# a reST substitution (`|add|`), a GitHub admonition flattened into prose (`[!TIP]`), anywhere in a task
_MARKUP = re.compile(
    r"(?<![\w|`])\|[A-Za-z][\w-]*\|(?![\w|`])|\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]"
    r"|(?<![\w\]`])\[[^\]\n]+\]\[[^\]\n]*\]"  # a reference-style link never resolved: `[text][ref]`
)
# a Sphinx role of a reference or a person, even inside code: apispec's malformed "`DEFAULT_FIELD_MAPPING (:pr:`892`)"
# rendered as "``DEFAULT_FIELD_MAPPING (:pr:`892``) ... Thanks :user:`cjproud` for the PR."
_ROLE = re.compile(r"(?<![\w:]):(?:pr|pull|issue|user|gh|github|commit|bpo|cve|ghsa):`[^`\s][^`\n]*`?")
_REST_LINK = re.compile(r"`__?(?=[\s).,;:]|$)", re.M)  # "(``_)": what is left of a reST link such as `#390`_
_CRITERIA_CUT = re.compile(r"^- \.\.\. and \d+ more behaviours? the tests check")  # readers: behaviour hidden
_DIRECTIVE = re.compile(r"^ {0,3}\.\. [\w-]+::?(?:\s|$)")  # a reST directive (`.. note::`), not code (4 spaces in)
_BRANCH = re.compile(r"^(?:#{1,6}\s+|\s*- )?(?:feature|feat|fix|bugfix|hotfix|chore|docs?|refactor|dev)/[\w.-]", re.I)


# what a string literal holds is no bracket of the code around it (`'[env:' in text`, Go's `'('`)
_STRING_LITERAL = re.compile(r""""(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`""")
_CLOSING = {")": "(", "]": "[", "}": "{"}


def _balanced(code: str) -> bool:
    """Whether the brackets of `code` close in order, strings aside: `): TypeCheckError` was cut at its start."""
    opened: list[str] = []
    code = re.sub(r"\\(?:x1[bB]|033|u001[bB]|e)\[[0-9;]*[A-Za-z]?", "", code)  # an escape sequence: `\x1b[33m`
    for character in _STRING_LITERAL.sub('""', code):
        if character in "([{":
            opened.append(character)
        elif character in _CLOSING and (not opened or opened.pop() != _CLOSING[character]):
            return False
    return not opened


def _cut_code(line: str) -> list[str]:
    """The code spans of a list item (an interface name, a test's example) whose brackets do not close."""
    if not _ITEM.match(line):
        return []
    spans = [match[0].strip("`").strip() for match in _CODE_SPAN.finditer(line)]
    return [f"a code example cut short: “{span[:80]}”" for span in spans if "::" not in span and not _balanced(span)]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def task_problems(text: str) -> list[str]:
    """What a reader of a whole task would stumble on, beyond `text_problems`: a heading with no text under it, an
    example missing after the colon that announces it, a test's name cut short, a link shown as code or its reST
    residue, a branch name ("Feature/intersect by") for a heading, a placeholder title, the author's aside in the
    first person, a statement that starts mid-thought."""
    problems = [f"a link shown as code: “{match[0][:80]}”" for match in _LINK_AS_CODE.finditer(text)]
    problems += [
        f"a reST link's residue: “{match.string[max(match.start() - 30, 0) : match.end()]}”"
        for match in _REST_LINK.finditer(text)
    ]
    problems += [f"markup left in the text: “{match[0]}”" for match in _MARKUP.finditer(prose(text))]
    problems += [f"a reference's role left in the text: “{match[0]}”" for match in _ROLE.finditer(text)]
    problems += _title_problems(text) + _statement_problems(text) + _repeated_paragraphs(text)
    lines = text.splitlines()
    fenced = False
    for number, line in enumerate(lines):
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            continue
        following = next((later for later in lines[number + 1 :] if later.strip()), None)
        problems += _cut_code(line)
        if _HEADING.match(line) and (following is None or _rank(following) <= _rank(line)):
            problems.append(f"a heading with no text under it: “{line.strip()}”")
        elif _CRITERIA_CUT.match(line):
            problems.append(f"acceptance criteria cut short: “{line.strip()[:80]}”")
        elif _DIRECTIVE.match(line):
            problems.append(f"a reST directive left in the text: “{line.strip()[:80]}”")
        elif _BRANCH.match(line):
            problems.append(f"a branch name for a title: “{line.strip()[:80]}”")
        elif _CUT_TEST.match(line):
            problems.append(f"a test's name cut short: “{line.strip()[:80]}”")
        elif line.rstrip().endswith(":") and not _HEADING.match(line) and not _announces(line, following):
            problems.append(f"an example missing after its colon: “{line.strip()[-80:]}”")
    return list(dict.fromkeys(problems))


def _repeated_paragraphs(text: str, fewest_words: int = 8) -> list[str]:
    """A paragraph of prose said twice (log's documentation quoted one doc comment twice): a reader sees a paste.
    Headings and lists are not prose here: a statement that says its title again is `repeated_title`'s (a warning),
    and the release notes' bullets are the criteria too, by design."""
    seen: set[str] = set()
    problems = []
    for paragraph in re.split(r"\n\s*\n", _FENCED.sub("", text)):
        if _HEADING.match(paragraph.strip()) or _ITEM.match(paragraph.strip()):
            continue
        words = " ".join(re.findall(r"[a-z0-9]+", paragraph.lower()))
        if len(words.split()) >= fewest_words and words in seen:
            problems.append(f"a paragraph said twice: “{' '.join(paragraph.split())[:80]}”")
        seen.add(words)
    return problems


def _title(text: str) -> str:
    return next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")


def _title_problems(text: str) -> list[str]:
    """A task titled by no feature ("Milestone towards v1.10.0", tablib's "Https://github.com/jazzband/tablib/releases")."""
    title = _title(text)
    if re.fullmatch(r"<?https?://\S+", title, re.I):
        return [f"a link for a title: “{title[:80]}”"]
    return [f"a placeholder title: “{title}”"] if re.fullmatch(r"Milestone(?: towards \S+)?", title) else []


# A commit's or pull request's aside in its author's voice ("I'm not entirely sure ... but this seems to fix it",
# "This doesn't really need tests IMO"): a reader takes it for a raw commit message, not a statement.
_FIRST_PERSON = re.compile(r"(?<![\w'])(?:I(?:'m|'ve|'d|'ll)?\s+[a-z]|IMO\b|IMHO\b)")
# A statement opening on a word that continues a thought said elsewhere ("Otherwise round-tripping 5e+22 won't work.")
# ("This also unified all variable checking ...": typeguard's commit body, its subject being what it goes on from)
_CONTINUES = re.compile(
    r"^(?:[-*]\s+)?(?:(?:Otherwise|Also|But|However|Instead|Additionally|So|And|Then)\b[ ,]|(?:This|It) also\b)"
)


def _statement_problems(text: str) -> list[str]:
    """The author speaking in the first person anywhere in "What to build", and a statement whose first words go on
    from something it does not say."""
    body = text.split("## What to build", 1)[1].split("\n## ", 1)[0] if "## What to build" in text else ""
    problems = [
        f"the author's aside in the first person: “{_sentence_around(prose(body), match.start())}”"
        for match in _FIRST_PERSON.finditer(prose(body))
    ][:1]
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    if _CONTINUES.match(first):
        problems.append(f"a statement that starts mid-thought: “{first[:80]}”")
    return problems


def _sentence_around(text: str, position: int) -> str:
    start = max(text.rfind(". ", 0, position) + 2, text.rfind("\n", 0, position) + 1, 0)
    end = min(found for found in (text.find(". ", position), text.find("\n", position), len(text)) if found >= 0)
    return " ".join(text[start : end + 1].split())[:100]


def repeated_title(text: str) -> list[str]:
    """A statement that only says its title again: thin, not broken (no hole, no residue; the readers of the sixth
    held-out set rated such texts intact), so a warning, not one of `task_problems`."""
    title = _title(text)
    body = text.split("## What to build", 1)[1] if "## What to build" in text else ""
    said = next((block.strip() for block in body.split("\n\n") if block.strip()), "")
    words = lambda words_of: re.findall(r"[a-z0-9]+", words_of.lower())  # noqa: E731
    repeated = title and said and words(said) == words(title)
    return [f"the statement only repeats its title: “{title[:80]}”"] if repeated else []


def _rank(line: str) -> int:
    """A Markdown heading's level (1 for `#`), 7 for any other line: a heading followed by one of its own
    subheadings ("# Title" then "## What to build") has text under it."""
    return len(line) - len(line.lstrip("#")) if _HEADING.match(line) else 7


def _announces(line: str, following: str | None) -> bool:
    """`line` (ending with a colon) is followed by what it announces: code, something nested under it, or a list
    after a paragraph."""
    if following is None:
        return False
    if following.strip().startswith(("```", "~~~")) or _indent(following) > _indent(line):
        return True
    return not _ITEM.match(line) and _ITEM.match(following) is not None
