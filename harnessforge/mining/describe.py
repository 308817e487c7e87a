"""The task text of a milestone: what to build, in the repository's own words.

Release-note entries, issue texts and PR titles are rendered (`markup.render`: code stays code,
nested bullets stay nested) and never stripped word by word. Withheld are only the paths of the
milestone's changed non-test source files and solution code: a sentence naming such a path is
rephrased around it (a parenthetical goes, "in `core.py`" goes) or left out whole, and a code block
made of the ground truth's own lines goes. The result is checked as a reader would read it
(`text_checks`): its holes and the words it lost are the plan's measure of text integrity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..syntax import SENTENCE_BREAK
from ..text_lint import text_problems
from .markup import HiddenCode, Syntax, render
from .text_checks import words_lost

_CREDIT = re.compile(r"\s*\((?:thanks to|thanks|props to|by|contributed by|via|courtesy of)\s[^()]*\)\s*$", re.I)
_MERGE = re.compile(r"^merge\b", re.I)
MAX_TITLE_CHARS = 80  # a longer first sentence does not name a feature: the next source does (never a cut one)


@dataclass(frozen=True)
class Source:
    """A piece of the repository's text and its markup."""

    text: str
    syntax: Syntax = "markdown"


@dataclass
class Feature:
    """One feature of a milestone, as the repository describes it."""

    titles: list[tuple[Source, str]]  # what may name it, best first, with where it comes from (changelog, issue, ...)
    points: list[Source] = field(default_factory=list)  # its release-note entries (or what stands in for them)
    entries: list[Source] = field(default_factory=list)  # which of the points are release-note entries
    motivation: Source | None = None  # why: the first paragraph, or the PR's when no entry says
    seed: bool = True  # a release-note feature (or, without release notes, a PR): it may title the milestone
    tested: bool = True  # its commits changed a test file: a test can grade it, so it heads the title first
    refactor: bool = False  # behaviour kept: its tests changed only to follow the code (a move, a rename)
    asides: list[Source] = field(default_factory=list)  # entries of it said once as context (a refactor beside it)


@dataclass
class Section:
    """One part of a milestone's task: the features that share a name, with their text."""

    heading: str | None
    source: str  # where the heading came from (changelog, issue, pull request, commit) or "none"
    body: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # the features it holds
    promises: list[str] = field(default_factory=list)  # its release-note entries' first sentences
    problems: list[str] = field(default_factory=list)  # holes a reader would see in its text
    asides: list[str] = field(default_factory=list)  # what it also does that is no requirement (a refactor)
    seed: bool = False
    tested: bool = False


@dataclass
class TaskText:
    """A milestone's task as parts (`sections`), and how whole its text is."""

    sections: list[Section] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # holes a reader would see (text_checks)
    words_lost: list[str] = field(default_factory=list)  # source words the text lacks (references, paths aside)
    withheld: list[str] = field(default_factory=list)  # the paths and code blocks left out
    warnings: list[str] = field(default_factory=list)  # what the sources' markup got wrong


# ---- withholding ---------------------------------------------------------------------------------
_FENCE_BLOCK = re.compile(r"^([ \t]*)```[^\n]*\n.*?^[ \t]*```[ \t]*$\n?", re.S | re.M)
_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_SENTENCE_END = re.compile(SENTENCE_BREAK + r"(?=[A-Z`*(\[\"'\x00])")
_AROUND = r"(?:in|into|inside|within|from|to|under|via|of)\s+(?:the\s+)?(?:file\s+|module\s+)?"


def path_forms(paths: list[str]) -> list[str]:
    """How a text may name each path: whole, without a leading `src/` or `lib/`, or by a distinctive file
    name (`core.py`, not `__init__.py`), longest first."""
    forms = set()
    for path in paths:
        forms.add(path)
        forms.add(re.sub(r"^(?:src|lib|source)/", "", path))
        name = PurePosixPath(path).name
        if "." in name and name not in ("__init__.py", "index.ts", "index.js", "mod.rs", "lib.rs", "main.go"):
            forms.add(name)
    return sorted(forms, key=len, reverse=True)


class Withholding:
    """What a task text must not show: the solution's source paths and its code."""

    def __init__(self, source_paths: list[str], solution_lines: set[str] = frozenset()):
        self.forms = path_forms(source_paths)
        self.solution = {line.strip() for line in solution_lines if len(line.strip()) >= 8}
        alternatives = "|".join(re.escape(form) for form in self.forms)
        self.pattern = re.compile(rf"(?<![\w/.-])`?(?:{alternatives})`?(?![\w/-])") if self.forms else None

    def found(self, text: str) -> list[str]:
        """The withheld paths `text` names, and `code` when it shows solution code."""
        named = sorted({match[0].strip("`") for match in self.pattern.finditer(text)}) if self.pattern else []
        blocks = [block for block in _FENCE_BLOCK.finditer(text) if self._is_solution(block[0])]
        return named + (["solution code"] if blocks else [])

    def _is_solution(self, block: str) -> bool:
        lines = [line.strip() for line in block.splitlines()[1:-1] if line.strip()]
        return bool(lines) and sum(line in self.solution for line in lines) >= len(lines) / 2

    def apply(self, text: str) -> tuple[str, list[str]]:
        """`text` without withheld paths and solution code blocks, and what was left out."""
        withheld: list[str] = []

        def block(match: re.Match) -> str:
            if self._is_solution(match[0]):
                withheld.append("solution code")
                return ""
            return match[0]

        text = _FENCE_BLOCK.sub(block, text)
        if self.pattern is None:
            return text, withheld
        lines = []
        for line in text.split("\n"):
            kept, named = self._sentences(line)
            withheld += named
            if kept is not None:
                lines.append(kept)
        return "\n".join(lines), withheld

    def _sentences(self, line: str) -> tuple[str | None, list[str]]:
        """The line with each sentence naming a withheld path rephrased around it, or left out; None when
        nothing of the line is left."""
        if line.lstrip().startswith("```") or not self.pattern.search(line):
            return line, []
        marker = re.match(r"^(\s*(?:[-*+]|\d+[.)])?\s*)", line)[1]
        sentences, named = [], []
        for sentence in _split_sentences(line[len(marker) :]):
            found = [match[0].strip("`") for match in self.pattern.finditer(sentence)]
            if not found:
                sentences.append(sentence)
                continue
            named += found
            rephrased = self._rephrase(sentence)
            if rephrased:
                sentences.append(rephrased)
        body = " ".join(sentences).strip()
        return (marker + body if body else None), named

    def _rephrase(self, sentence: str) -> str | None:
        """The sentence without its withheld paths, if it still reads whole; else None (left out)."""
        pattern = self.pattern.pattern
        candidate = re.sub(rf"\s*\([^()]*?{pattern}[^()]*?\)", "", sentence)  # a parenthetical goes whole
        candidate = re.sub(rf"\s*\b{_AROUND}{pattern}", "", candidate, flags=re.I)  # "in `core.py`" goes
        if self.pattern.search(candidate) or text_problems(candidate, sentence) or not re.search(r"\w", candidate):
            return None
        return candidate


def _split_sentences(text: str) -> list[str]:
    """Sentences of one line, never split inside a code span."""
    code = HiddenCode(text)
    return [code.restore(part) for part in _SENTENCE_END.split(code.text)]


def code_spans(text: str) -> list[str]:
    """The distinct code spans of a rendered text (outside code blocks): the names it gives in code."""
    return list(dict.fromkeys(match[2].strip() for match in _CODE.finditer(_FENCE_BLOCK.sub("", text))))


def first_sentence(text: str) -> str:
    """The first sentence of a rendered text's first line, whole (a final period dropped)."""
    line = text.strip().split("\n", 1)[0].strip()
    return _split_sentences(line)[0].rstrip(".").strip() if line else ""


# ---- the description ---------------------------------------------------------------------------
def _heading(feature: Feature, withholding: Withholding, is_housekeeping) -> tuple[str, str] | None:
    """The feature's name and where it came from: the first source whose first sentence is short, whole,
    withholds nothing and is not housekeeping; when none is short, the shortest whole one (never a cut one)."""
    found: list[tuple[str, str]] = []
    for source, named_by in feature.titles:
        rendered = render(source.text, source.syntax)
        sentence = first_sentence(rendered.text)
        if not sentence or rendered.problems or withholding.found(sentence) or text_problems(sentence):
            continue
        if is_housekeeping(sentence) or _MERGE.match(sentence):
            continue  # a merge's subject ("Merge from user/branch", "Merge commit from fork") names no feature
        sentence = _CREDIT.sub("", sentence)  # "(thanks to rhettinger)" names who, not what
        found.append((sentence[:1].upper() + sentence[1:], named_by))
        if len(sentence) <= MAX_TITLE_CHARS:
            return found[-1]
    return min(found, key=lambda item: len(item[0])) if found else None


def _block(source: Source, withholding: Withholding, task: TaskText, bullet: bool) -> list[str]:
    """A source rendered, withheld and checked: as bullet lines (sub-bullets under it) or a paragraph."""
    rendered = render(source.text, source.syntax)
    text, withheld = withholding.apply(rendered.text)
    task.withheld += withheld
    task.problems += rendered.problems + text_problems(text, rendered.text)
    task.warnings += rendered.warnings
    task.words_lost += words_lost(source.text, text, withholding.forms)
    lines = [line for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return []
    if not bullet:
        return lines
    first = lines[0].lstrip()
    first = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", first)
    return [f"- {first[:1].upper()}{first[1:]}", *(f"  {line}" if line.strip() else "" for line in lines[1:])]


def describe(features: list[Feature], withholding: Withholding, is_housekeeping=lambda text: False) -> TaskText:
    """A milestone's parts: per feature its name (the first whole, short source that withholds nothing and is not
    housekeeping), why, and its entries as bullets; features that share a name are one part. Work the release notes
    (or PRs) leave undescribed speaks only when a test checks it and it is no refactor, and a commit title naming
    housekeeping never does. `models.task.compose` turns the parts into the title and text."""
    task = TaskText()
    sections: dict[str, Section] = {}  # name (lower case) -> its section
    described = any(feature.seed for feature in features)
    for position, feature in enumerate(features):
        if described and not feature.seed and (not feature.tested or feature.refactor):
            continue  # what the release notes (or PRs) do not describe and no test checks rides along silently
        known = len(task.problems)
        found = _heading(feature, withholding, is_housekeeping)
        heading = found[0] if found else None
        body = _block(feature.motivation, withholding, task, bullet=False) if feature.motivation else []
        body += [""] if body else []
        promises = []
        for point in feature.points:
            if point not in feature.entries and is_housekeeping(first_sentence(render(point.text, point.syntax).text)):
                continue  # a commit's or PR's title that names housekeeping ("Drop 3.9") is no item
            block = _block(point, withholding, task, bullet=True)
            if block and point in feature.entries:
                promises.append(first_sentence(block[0].removeprefix("- ")))
            if block and len(feature.points) == 1 and heading and _same(block[0], heading):
                block = [line[2:] for line in block[1:]]  # the heading says it; its details stay
            body += block
        if heading is None and not any(line.strip() for line in body):
            continue
        key = heading.lower() if heading else f"#{position}"
        section = sections.setdefault(key, Section(heading, found[1] if found else "none"))
        section.body += [line for line in body if line not in section.body or not line.strip()]
        section.positions.append(position)
        section.promises += [promise for promise in promises if promise not in section.promises]
        section.problems += [problem for problem in task.problems[known:] if problem not in section.problems]
        for aside in feature.asides:
            said = first_sentence(withholding.apply(render(aside.text, aside.syntax).text)[0])
            if said and said not in section.asides:
                section.asides.append(said)
        section.seed = section.seed or (feature.seed and heading is not None)
        section.tested = section.tested or feature.tested
    for section in sections.values():
        while section.body and not section.body[-1].strip():
            section.body.pop()
        while section.body and not section.body[0].strip():
            section.body.pop(0)
    task.sections = list(sections.values())
    task.problems = list(dict.fromkeys(task.problems))
    task.warnings = list(dict.fromkeys(task.warnings))
    return task


def _same(bullet: str, heading: str) -> bool:
    """The bullet says no more than the heading."""
    words = lambda text: re.sub(r"\W+", " ", text).lower().split()  # noqa: E731
    return words(bullet.lstrip("- ")) == words(heading)


# ---- the hint rewriter's check --------------------------------------------------------------------
_EXT = (
    r"(?:py|pyi|pyx|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|toml|json|"
    r"yaml|yml|cfg|ini|txt|md|rst|lock|sh|sql|html|css|xml|proto)"
)
_FILE_TOKEN = re.compile(rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.{_EXT}\b")
_PATH_TOKEN = re.compile(r"(?<![\w/.:-])\.?[\w.-]+(?:/[\w.-]+)+/?")
_CODE_LIKE = re.compile(r"\b[A-Za-z_][\w.]*\([^()\n]*\)|^\s*(?:def|class|import|from \S+ import|>>>)\s", re.M)
_WORD_PAIRS = {"and/or", "input/output", "read/write", "on/off", "yes/no", "client/server", "either/or"}


def find_leaks(text: str, changed_files: list[str]) -> list[str]:
    """Paths, file names and code in a model's rewrite of a hint: what it may say only where the raw
    hint says it (the hint rewriter compares the two)."""
    leaks = [path for path in changed_files if path in text]
    for path in changed_files:
        name = PurePosixPath(path).name
        if "." in name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            leaks.append(name)
    leaks += [match[0] for match in _FILE_TOKEN.finditer(text)]
    leaks += [match[0] for match in _PATH_TOKEN.finditer(text) if match[0].strip("/").lower() not in _WORD_PAIRS]
    leaks += ["```"] if "```" in text else []
    leaks += [match[0] for match in _CODE_LIKE.finditer(text)]
    return sorted(set(leaks))
