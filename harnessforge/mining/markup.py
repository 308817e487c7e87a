"""Release-note, issue and PR text rendered for the Dev: Markdown, with code kept as code.

Each syntax is parsed by its own library (markdown-it for Markdown, docutils for
reStructuredText), never stripped by patterns: literals, Sphinx and MyST roles become code spans
(`:class:`~pkg.Name`` -> `Name`), links become their text, emphasis stays, nested bullets stay
nested and code blocks stay fenced. Only references to PRs and issues go (`refs.strip_refs`):
a flag like `--help`, a keyword like `x=False` or a signature is the interface, and stays.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Literal

from docutils import nodes
from docutils.core import publish_doctree
from markdown_it import MarkdownIt

from ..refs import strip_refs
from ..text_lint import code_span, text_problems

Syntax = Literal["markdown", "rst"]

# Roles whose text is prose, not code (the rest, `:class:`, `:func:`, `{meth}`, unknown ones, are code).
_PROSE_ROLES = {"ref", "doc", "term", "abbr", "guilabel", "menuselection", "dfn", "sub", "sup", "numref", "download"}
_NUMBERED_ROLES = {"pep": "PEP {}", "rfc": "RFC {}"}
# References to PRs, issues, advisories and people: `refs.strip_refs` removes them, after the other roles.
_REFERENCE_ROLES = {
    "pr",
    "pull",
    "pull_request",
    "issue",
    "gh",
    "github",
    "bpo",
    "cve",
    "ghsa",
    "user",
    "commit",
    "bug",
}
_RST_ROLE = re.compile(r"(?<![\w`\\]):((?:[\w-]+:)*[\w-]+):(`+)(.+?)\2(?!`)")
_MYST_ROLE = re.compile(r"\{((?:[\w-]+:)*[\w-]+)\}(`+)(.+?)\2(?!`)")
_RST_MARKERS = re.compile(r"``[^`]+``|(?<![\w`]):[\w:-]+:`|`[^`]+`__?(?!\w)|^\.\. \w", re.M)
_DOCUTILS = {
    "report_level": 5,
    "halt_level": 5,
    "warning_stream": io.StringIO(),
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "syntax_highlight": "none",
}
_MARKDOWN = MarkdownIt("commonmark")
_HTML_TAG = re.compile(
    r"^</?(?:a|abbr|b|br|code|del|details|div|em|i|img|ins|kbd|p|pre|s|small|span|strong|sub|summary|sup|u)\b|^<!--",
    re.I,
)
_COLON_FENCE = re.compile(r"^\s*:::+.*$\n?", re.M)  # MyST's `:::{warning}` ... `:::`: its content stays
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<rest>.*)$")
_SPHINX_CODE = re.compile(r"^(\s*)\.\. (?:code-block|sourcecode)::", re.M)
_MENTION_LINK = re.compile(r"\[(@[\w-]+)\]\(https?://github\.com/[\w-]+/?\)")
_LINK_ONLY = re.compile(r"^`([^`<]*?)\s*(?:<[^>]*>)?`__?$")  # an RST reference whose target lies elsewhere


@dataclass
class Rendered:
    """A text rendered for the Dev: the holes a reader would see in it that its source did not have
    (`problems`), and what its source's markup got wrong (`warnings`: unbalanced emphasis, say)."""

    text: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def syntax_of(source: str, text: str = "") -> Syntax:
    """The markup of an entry from where it was read (`CHANGES.rst (restructuredtext)`, a fragment's
    extension, a GitHub release); a plain-text file is read as reStructuredText if it uses its markup."""
    lowered = source.lower()
    if "markdown" in lowered or re.search(r"\.(md|markdown)\b", lowered) or "github release" in lowered:
        return "markdown"
    if "restructuredtext" in lowered or re.search(r"\.rst\b", lowered) or "(reno)" in lowered:
        return "rst"
    return "rst" if _RST_MARKERS.search(text) else "markdown"


def _role_text(name: str, content: str, syntax: Syntax) -> str | None:
    """A Sphinx or MyST role as its reader sees it: `~a.b.C` -> C, `title <target>` -> title."""
    role = name.rsplit(":", 1)[-1].lower()
    if role in _REFERENCE_ROLES:
        return None
    content = content.strip()
    titled = re.match(r"^(.*?)\s*<([^<>]+)>$", content, re.S)
    if role in _NUMBERED_ROLES:
        return _NUMBERED_ROLES[role].format(titled[1] if titled else content)
    if role in _PROSE_ROLES:
        if titled and titled[1]:
            return titled[1]
        if role == "ref" and re.fullmatch(r"[\w.:-]+", content) and re.search(r"[_:-]", content):
            return "the documentation"  # a bare label (`python_api_transform_foreign_keys`) is an anchor, no words
        return content.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ") if role == "doc" else content
    shown = titled[1] if titled and titled[1] else content
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    return code_span(shown.lstrip("!."), syntax)


def render_roles(text: str, syntax: Syntax) -> str:
    """Sphinx (`:meth:`x``) and MyST (`{meth}`x``) roles as code spans or prose, in `syntax`."""

    def replace(match: re.Match) -> str:
        shown = _role_text(match[1], match[3], syntax)
        return match[0] if shown is None else shown

    return _MYST_ROLE.sub(replace, _RST_ROLE.sub(replace, text))


# ---- Markdown --------------------------------------------------------------------------------
def _markdown_inline(children, warnings: list[str]) -> str:
    out: list[str] = []
    for token in children or []:
        kind = token.type
        if kind == "text":
            out.append(token.content)
        elif kind == "code_inline":  # a changelog tool's mention link inside code: `[@xmlns](https://github.com/xmlns)`
            out.append(code_span(_MENTION_LINK.sub(r"\1", token.content)))
        elif kind in ("softbreak", "hardbreak"):
            out.append(" ")
        elif kind in ("em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close"):
            out.append(token.markup)
        elif kind == "image":
            out.append(token.content)
        elif kind == "html_inline" and not _HTML_TAG.match(token.content):
            out.append(token.content)  # `<file-like>`: words in angle brackets, not a tag
        # links: their text stays (an autolink's text is its address); html tags go
    return "".join(out)


def _closed_fences(text: str) -> str:
    """An author's closing fence with prose after it ("``` is needed to do that.") closes the block as
    they meant: CommonMark would read it as code, and every later line with it."""
    lines: list[str] = []
    opened = ""
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if found and not opened:
            opened = found["fence"]
        elif found and found["fence"][0] == opened[0] and len(found["fence"]) >= len(opened):
            opened = ""
            prose = found["rest"].strip()
            if prose and found["rest"][0].isspace() and " " in prose:  # not an info string: words after it
                lines += [found["indent"] + found["fence"], "", found["indent"] + prose]
                continue
        lines.append(line)
    return "\n".join(lines)


def _markdown(text: str) -> Rendered:
    text = _closed_fences(text)
    warnings: list[str] = []
    lines: list[str] = []
    markers: list[list] = []  # per open list: [marker or next number]
    pending: str | None = None  # the marker of a list item whose first block is next
    for token in _MARKDOWN.parse(text):
        kind = token.type
        depth = "  " * max(len(markers) - 1, 0)
        if kind == "bullet_list_open":
            markers.append(["-"])
        elif kind == "ordered_list_open":
            markers.append([int(token.attrs.get("start", 1) or 1)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            markers.pop()
        elif kind == "list_item_open":
            marker = markers[-1][0]
            if isinstance(marker, int):
                markers[-1][0] = marker + 1
                pending = f"{marker}. "
            else:
                pending = "- "
        elif kind == "inline":
            line = _markdown_inline(token.children, warnings).strip()
            indent = depth + ("  " if markers and pending is None else "")
            if pending is not None:
                lines.append(f"{depth}{pending}{line}")
                pending = None
            elif line:
                lines.append(f"{indent if markers else ''}{line}")
        elif kind in ("fence", "code_block"):
            indent = depth + ("  " if markers else "")
            info = token.info.strip() if kind == "fence" else ""
            body = token.content.rstrip("\n").splitlines()
            block = [f"```{info}", *body, "```"]
            if pending is not None:
                lines.append(f"{depth}{pending}".rstrip())
                pending = None
            lines += [f"{indent}{line}" if line else "" for line in block]
    return Rendered("\n".join(lines).strip("\n"), warnings=warnings)


# ---- reStructuredText ------------------------------------------------------------------------
def _rst_inline(node, warnings: list[str]) -> str:
    out: list[str] = []
    for child in node.children:
        if isinstance(child, nodes.Text):
            out.append(child.astext())
        elif isinstance(child, (nodes.literal, nodes.title_reference)):
            out.append(code_span(child.astext()))
        elif isinstance(child, nodes.emphasis):
            out.append(f"*{_rst_inline(child, warnings)}*")
        elif isinstance(child, nodes.strong):
            out.append(f"**{_rst_inline(child, warnings)}**")
        elif isinstance(child, nodes.problematic):
            raw = child.rawsource or child.astext()
            link = _LINK_ONLY.match(raw)
            if link:  # a reference to a target the entry does not hold: its text
                out.append(link[1])
            else:
                out.append(child.astext())
                warnings.append(f"unbalanced reStructuredText markup {raw!r}")
        elif isinstance(
            child, (nodes.target, nodes.footnote_reference, nodes.citation_reference, nodes.system_message)
        ):
            continue
        elif isinstance(child, nodes.Element):
            out.append(_rst_inline(child, warnings))
    return "".join(out)


def _rst_blocks(node, depth: int, lines: list[str], warnings: list[str], marker: list[str] | None = None) -> None:
    """The blocks of `node` as lines: `depth` lists enclose it; `marker` (a list item's `- `) starts its
    first block, later blocks of the item are indented under it."""
    for child in node.children:
        lead = "  " * max(depth - 1, 0) + marker.pop() if marker else "  " * depth
        if isinstance(child, (nodes.paragraph, nodes.title, nodes.line)):
            lines.append(lead + " ".join(_rst_inline(child, warnings).split()))
        elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
            if lead.strip():
                lines.append(lead.rstrip())
            numbered = isinstance(child, nodes.enumerated_list)
            for number, item in enumerate(child.children, start=1):
                _rst_blocks(item, depth + 1, lines, warnings, [f"{number}. " if numbered else "- "])
        elif isinstance(child, (nodes.literal_block, nodes.doctest_block)):
            if lead.strip():
                lines.append(lead.rstrip())
            pad, language = "  " * depth, next((name for name in child.get("classes", []) if name != "code"), "")
            lines += [f"{pad}```{language}", *(f"{pad}{line}" for line in child.astext().splitlines()), f"{pad}```"]
        elif isinstance(child, nodes.definition_list_item):  # a misaligned continuation line: one paragraph
            words = [_rst_inline(child.children[0], warnings)]
            words += [
                _rst_inline(part, warnings)
                for part in child.findall(nodes.paragraph)
                if not isinstance(part.parent, nodes.system_message)
            ]
            lines.append(lead + " ".join(" ".join(words).split()))
        elif isinstance(child, (nodes.system_message, nodes.comment, nodes.target, nodes.substitution_definition)):
            if lead.strip():
                marker = [lead.strip() + " "]
        elif isinstance(child, nodes.Element):
            _rst_blocks(child, depth, lines, warnings, [lead.lstrip()] if lead.strip() else None)


def _rst(text: str) -> Rendered:
    warnings: list[str] = []
    try:
        document = publish_doctree(text, settings_overrides=_DOCUTILS)
    except Exception as e:  # noqa: BLE001 - docutils raises many types on odd input; the text stays readable
        return Rendered(" ".join(text.split()), warnings=[f"reStructuredText could not be parsed: {e}"])
    lines: list[str] = []
    _rst_blocks(document, 0, lines, warnings)
    return Rendered("\n".join(line.rstrip() for line in lines).strip("\n"), warnings=warnings)


_REFERENCE_LINK = re.compile(
    r"(?<![\w\]`])\[([^\]\n]+)\]\[[^\]\n]*\]"  # boltons' [`listutils.BarrelList`][listutils.BarrelList]
    r"|(?<![\w\]`!])\[([^\]\[\n]*[A-Za-z][^\]\[\n]+)\](?![\[(:])"  # dacite's shortcut "[PEP 604]" (its target below)
)


def render(text: str, syntax: Syntax) -> Rendered:
    """`text` (a changelog entry, an issue or PR body) as Markdown for the Dev: references to PRs and
    issues gone, everything else kept; paragraphs on one line each, sub-bullets indented under them."""
    source = text
    text = strip_refs_outside_code(render_roles(_COLON_FENCE.sub("", text), syntax))
    if syntax != "rst":  # an entry alone has no reference definitions: `[text][ref]` would stay as typed
        text = _REFERENCE_LINK.sub(lambda found: found[1] or found[2], text)
    rendered = _rst(_SPHINX_CODE.sub(r"\1.. code::", text)) if syntax == "rst" else _markdown(text)
    rendered.text = re.sub(r"[ \t]+([,.;:])(?=\s|$)", r"\1", rendered.text)
    rendered.problems += text_problems(rendered.text, source)
    return rendered


# a role (left whole for `strip_refs`) or a code span (hidden from it)
# (a reStructuredText link, `text <url>`_, is no code span: its text is prose, a reference's left for strip_refs)
_ROLE_OR_CODE = re.compile(
    r"(?P<role>[:}](?P<rticks>`+)(?!`).+?(?<!`)(?P=rticks)(?!`))|(?P<link>`[^`\n]+`__?(?!\w))"
    r"|(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?![`_])"
)


def _logical_lines(text: str) -> list[str]:
    """The text's lines with each paragraph's wrapped lines joined (a reference may wrap: "(#4,\npart of
    #3)"); bullets, blank lines, code and directives start lines of their own."""
    out: list[str] = []
    column = None  # where the previous line's text starts, when a further line may continue it
    fenced = False
    literal: int | None = None  # the indent of a line ending `::`: what is indented under it is code, kept as is
    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal is not None and (not stripped or indent > literal):
            out.append(line)
            continue
        literal = None
        starts_block = (
            not stripped
            or stripped.startswith(("```", "~~~", ".. ", "|", ">"))
            or re.match(r"^(?:[-*+]|\d+[.)])\s+", stripped) is not None
        )
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and not starts_block and out and column is not None and indent == column:
            out[-1] += " " + stripped
            continue
        out.append(line)
        marker = re.match(r"^(\s*(?:[-*+]|\d+[.)])\s+)", line)
        column = None if fenced or not stripped or stripped.endswith("::") else (len(marker[1]) if marker else indent)
        if not fenced and (stripped.endswith("::") or re.match(r"\.\. (?:code|code-block|sourcecode)::", stripped)):
            literal = indent
    return out


class HiddenCode:
    """A line with its code spans set aside (placeholders), so prose rules never touch code; `restore`
    puts them back. With `roles`, a role's backticked target is prose's (`:pr:`12`` stays for strip_refs)."""

    def __init__(self, text: str, roles: bool = False):
        self.spans: list[str] = []

        def hide(match: re.Match) -> str:
            if match["link"]:  # a reStructuredText link is prose (two in a row are not one code span)
                return match[0]
            if match["role"] and roles:
                return match[0]
            if match["role"]:  # the role's leading `:` or `}` stays outside
                self.spans.append(match[0][1:])
                return match[0][0] + f"\x00{len(self.spans) - 1}\x00"
            self.spans.append(match[0])
            return f"\x00{len(self.spans) - 1}\x00"

        self.text = _ROLE_OR_CODE.sub(hide, text)

    def restore(self, text: str) -> str:
        return re.sub("\x00(\\d+)\x00", lambda match: self.spans[int(match[1])], text)


def strip_refs_outside_code(text: str) -> str:
    """`strip_refs` line by line, outside code spans and fences: the text's block structure (bullets,
    code) and its code survive."""
    out = []
    fenced = False
    for line in _logical_lines(text):
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append(line)
            continue
        if fenced or not line.strip():
            out.append(line)
            continue
        code = HiddenCode(line, roles=True)
        hidden = code.text
        indent = hidden[: len(hidden) - len(hidden.lstrip())]
        marker = re.match(r"(?:[-*+]|\d+[.)])\s+", hidden.lstrip())
        body = hidden.lstrip()[marker.end() if marker else 0 :]
        stripped = strip_refs(body)
        if stripped or not re.search(r"\w", body):
            restored = code.restore(stripped)
            out.append(indent + (marker[0] if marker else "") + restored)
    return "\n".join(out)
