"""References to pull requests and issues in free text, in the spellings real projects use.

GitHub numbers PRs and issues in one sequence and serves a PR at `/issues/N` too, so towncrier's
`/issues/N` links and a fragment's number may be either: such numbers are kept apart
(`issue_links`, or an entry's `refs`) and become a PR when history knows that PR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUMBERS = r"(\d+(?:\s*,\s*#?\d+)*)"  # `1234` or a role's list `5624,5633`
_GITHUB = r"https?://github\.com/[\w.-]+/[\w.-]+"
# (pattern, kind): kind "pr", "issue", "issue_link" (a PR when history knows it), "bare", or None (not a GitHub ref)
_TYPED = [
    # a whole link to a PR or issue, its text included: `#556 <https://...>`_ and [#802](https://...)
    # a reST named reference whose target is defined elsewhere in the file: `#390`_, `@mlhamel`_
    (re.compile(r"`#(\d+)`__?"), "bare"),
    (re.compile(r"`@[\w-]+`__?"), None),
    (re.compile(rf"`[^`<]*<{_GITHUB}/pull/(\d+)/?>`__?:?"), "pr"),
    (re.compile(rf"`[^`<]*<{_GITHUB}/issues/(\d+)/?>`__?:?"), "issue_link"),
    (re.compile(rf"\[[^\]\n]*\]\({_GITHUB}/pull/(\d+)/?\)"), "pr"),
    (re.compile(rf"\[[^\]\n]*\]\({_GITHUB}/issues/(\d+)/?\)"), "issue_link"),
    (re.compile(r"(?:https?://)?github\.com/[\w.-]+/[\w.-]+/pull/(\d+)\b/?"), "pr"),
    (re.compile(r"(?:https?://)?github\.com/[\w.-]+/[\w.-]+/issues/(\d+)\b/?"), "issue_link"),
    # Sphinx (sphinx-issues, sphinx.ext.extlinks) and MyST roles
    (re.compile(rf"(?::(?:pr|pull|pull_request):|\{{(?:pr|pull)\}})`{_NUMBERS}`"), "pr"),
    (re.compile(rf"(?::issue:|\{{issue\}})`{_NUMBERS}`"), "issue"),
    (re.compile(rf"(?::gh:|\{{gh\}}|:github:)`{_NUMBERS}`"), "bare"),
    # other trackers and advisories: not GitHub numbers, never linked
    (re.compile(r"(?::(?:bpo|cve|ghsa|user|commit|bug):|\{(?:bpo|cve|ghsa|user|commit)\})`[^`]*`"), None),
    # links to a commit, an advisory or a person, their text included: `#1a2b3c4 <https://.../commit/1a2b3c4>`__
    (re.compile(rf"`[^`<]*<{_GITHUB}/(?:commit|security/advisories)/[\w-]+/?>`__?:?"), None),
    (re.compile(rf"\[[^\]\n]*\]\({_GITHUB}/(?:commit|security/advisories)/[\w-]+/?\)"), None),
    (re.compile(r"`@?[\w-]+ <https?://github\.com/[\w-]+/?>`__?"), None),
    (re.compile(r"\[@[\w-]+\]\(https?://github\.com/[\w-]+/?\)"), None),
    (re.compile(r"(?:https?://)?github\.com/[\w.-]+/[\w.-]+/(?:commit|security/advisories)/[\w-]+\b/?"), None),
    (re.compile(r"(?<![\w-])(?:GHSA(?:-[23456789cfghjmpqrvwx]{4}){3}|CVE-\d{4}-\d{4,})(?![\w-])"), None),  # advisories
    # a person: "@octocat" (not a decorator: no call or attribute follows)
    # (a quoted @name is a token of the code: gjson's "the \"@dig\" modifier", "such as '@hello'")
    (re.compile(r"(?<![\w`@./\"'])@[A-Za-z0-9][\w-]*/[\w-]+"), None),  # a team: "@go-playground/validator-maintainers"
    (re.compile(r"(?<![\w`@./\"'])@[A-Za-z0-9](?:[\w-]*[A-Za-z0-9])?(?![\w(`@\"'-]|\.\w)"), None),
    # words that type a number: "PR #635", "pull request #12" ("issue #492" stays bare: GitHub may serve a PR there)
    (re.compile(r"\b(?:PRs?|pull requests?)\s*#?(\d+)\b|\bpull\s*#(\d+)\b", re.I), "pr"),
    # a word glued to its number, as sqlparse writes them: "(issue262, pr725 by hugovk)"
    (re.compile(r"(?<![\w-])issue(\d+)\b", re.I), "bare"),
    # an issue's number without its `#`, ending a clause: go-pretty's "...; fixes 399." (not "fixes 3 bugs")
    (re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+(\d{2,6})(?=\s*(?:[.;,)]|$))", re.I | re.M), "bare"),
]
_BARE = re.compile(r"(?<![\w&/#])(?:GH-|gh-|#)(\d+)\b")
# "Fixes #3", "closes: GH-7", "Part of #12", "refs #5": a commit or PR pointing at an issue.
_LINKING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|refs?|references|see|part of|related to|addresses|updates?)"
    r"\s*:?\s+(?:[\w.-]+/[\w.-]+)?(?:#|GH-|gh-)(\d+)",
    re.I,
)


@dataclass
class Refs:
    prs: set[int] = field(default_factory=set)
    issues: set[int] = field(default_factory=set)
    bare: set[int] = field(default_factory=set)
    issue_links: set[int] = field(default_factory=set)  # in `issues` too: typed so only by an /issues/ URL

    def resolve(self, known_prs: set[int]) -> tuple[list[int], list[int]]:
        """Bare `#N` and `/issues/N` links are a PR when history has PR N, else an issue."""
        prs = self.prs | ((self.bare | self.issue_links) & known_prs)
        issues = self.issues | self.bare
        return sorted(prs), sorted(issues - prs)

    def for_entry(self) -> tuple[list[int], list[int], list[int]]:
        """(prs, issues, refs) of a changelog entry: what is not surely an issue stays in refs."""
        unsure = (self.bare | self.issue_links) - self.prs
        return sorted(self.prs), sorted(self.issues - self.issue_links - self.prs), sorted(unsure)

    @property
    def any(self) -> bool:
        return bool(self.prs or self.issues or self.bare)


def _numbers(group: str) -> set[int]:
    return {int(number) for number in re.findall(r"\d+", group)}


def extract_refs(text: str) -> Refs:
    refs = Refs()
    named_issues: set[int] = set()  # typed as issues by a role or a word, not only by a URL
    rest = text
    for pattern, kind in _TYPED:
        for match in pattern.finditer(rest):
            if kind is None:
                continue
            numbers = _numbers(next(group for group in match.groups() if group))
            if kind == "pr":
                refs.prs |= numbers
            elif kind == "bare":
                refs.bare |= numbers
            else:
                refs.issues |= numbers
                (refs.issue_links if kind == "issue_link" else named_issues).update(numbers)
        rest = pattern.sub(" ", rest)
    refs.bare |= {int(number) for number in _BARE.findall(rest)} - refs.prs - refs.issues
    refs.issue_links -= named_issues | refs.prs
    return refs


def linked_issues(text: str) -> set[int]:
    """Issues a commit message or PR body says it fixes or belongs to."""
    return {int(number) for number in _LINKING.findall(text)}


_MARK = "\x01"  # where a reference stood, while the words around it are tidied
# a subject that opens with the number it answers: "Issue 1001: fix last()", "Issue 985 -- Add ..."
_NUMBERED_PREFIX = re.compile(r"^\s*(?:issue|pr|gh)[\s-]*#?\d+\s*(?::|-{1,2}|\u2013|\u2014)\s*", re.I)
# a subject that fixes a numbered issue before saying what: "fix #180 - exception on empty data", "Fix bug/issue #231:
# SEPARATING_LINE feature doesn't work", "Bug fix for issue #318 | `intfmt`: error ..." (tabulate's) -> "Fix: ..."
_BREAKING_PREFIX = re.compile(r"^\s*BREAKING[ -]CHANGES?\s*:\s*")
_FIX_PREFIX = re.compile(
    r"^\s*(?:bug\s*)?(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)(?:\s+for)?\s+(?:bug\s*/\s*)?(?:issue\s*)?#\d+\s*"
    r"(?::|\||-{1,2}|\u2013|\u2014)\s*",
    re.I,
)
_REFERENCE_WORDS = r"see|issues?|prs?|pull requests?|pulls?|fix(?:es)?|closes?|refs?|thanks(?: to)?|by|h/t|via"
_EMPTIED = re.compile(
    # ... and who made them: "(issue262, by skryzh)", "(pr848 by alhudz and tonghuaroot)"
    rf"[(\[]\s*(?:(?:{_REFERENCE_WORDS})\s*)?(?:[,;]\s*)*{_MARK}(?:[,;{_MARK}]\s*)*(?:,?\s*by\s+[^()\[\]\n]+)?[)\]]",
    re.I,
)
_HELD = "\x03"  # where brackets that held only references stood, until the words before them are read
# words that only named the reference go with it: "Issue #618", "PR #12"
_NAMING_WORDS = (re.compile(rf"\b(?:issues?|prs?|pull requests?|pulls?|tickets?|gh)\s*{_MARK}", re.I), _MARK)
_REFERENCE_TIDYING = [
    # brackets that held only references: "(#4, #3)", "(Issue #5)", "[#425]"
    (_EMPTIED, _HELD),
    _NAMING_WORDS,
    # a sentence that only said what the change belongs to: "This is part of #12.", "It relates to #4."
    (
        re.compile(
            rf"(?:(?<=^)|(?<=[.!?]\s))(?:this|it)\s+(?:is\s+)?(?:(?:part of|relate[sd]? to|(?:a\s+)?follow[- ]?up "
            rf"(?:to|of|for|on))\s+)?{_MARK}[^.!?\n]*[.!?]?[ \t]*",
            re.I,
        ),
        "",
    ),
    # a linking verb whose object was the reference: "... expressions - fixes Issue #592", "Related to <url>"
    (
        re.compile(
            rf"\s*(?:[-\u2013\u2014,;:]\s*)?\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|refs?|relate[sd]? to|"
            rf"follow[- ]?up (?:to|of|for|on)|address(?:es|ed)?)\s+{_MARK}",
            re.I,
        ),
        _MARK,
    ),
    # what the change was drawn from: "a fix based on pull request #393" -> "a fix"
    (re.compile(rf"\s*,?\s*\b(?:based on|taken from|adapted from|inspired by)\s+(?:the\s+)?{_MARK}", re.I), _MARK),
    # a reference as what was fixed: "the fix for #12 resolved it" -> "an earlier fix resolved it"
    (re.compile(rf"\b(?:the\s+)?(fix|change|patch)\s+(?:for|in|from|of)\s+{_MARK}", re.I), r"an earlier \1"),
    # what the change copies: "the same fix as in <commit url>, applied in two more functions" (typeguard)
    (re.compile(rf"\b(same\s+\w+\s+as|like)\s+(?:in\s+)?{_MARK}(?=\s*[,.;:])", re.I), r"\1 an earlier change"),
    # a list of references is one
    (re.compile(rf"{_MARK}(?:\s*(?:,|and|&)\s*{_MARK})+", re.I), _MARK),
    # a sentence that only pointed at a reference: "See #136 for the rationale."
    (
        re.compile(
            rf"(?:(?<=^)|(?<=[.!?]\s))(?:see|check(?: out)?|refer to|read)\s+(?:also\s+)?{_MARK}[^.!?\n]*[.!?]?[ \t]*",
            re.I,
        ),
        "",
    ),
    # a credit: "by @a, @b and @c in #12" (GitHub's generated notes), what it credited goes with it
    (re.compile(rf"\s*\bby\s+{_MARK}(?:\s*(?:,|and|&)\s*{_MARK})*(?:\s+in\s+{_MARK})?", re.I), _MARK),
    # "Raised in #618 by x", "bug, #12, introduced": the reference's own preposition or commas go
    (re.compile(rf"\b(?:in|at|from|see)\s+{_MARK}(?=\s+(?:by|from|with|thanks)\b)", re.I), _MARK),
    (re.compile(rf",\s*{_MARK}\s*,"), ","),
    # a reference as a clause's subject: "lost when #3208 began writing" -> "when an earlier change began"
    (
        re.compile(rf"\b(when|after|since|until|because|before|once)\s+{_MARK}(?=\s+[a-z])", re.I),
        r"\1 an earlier change",
    ),
    # a dash that only led to the reference: "fixes `Arbitrary File Write via verify function` - CVE-2022-23529"
    (re.compile(rf"\s+[-\u2013\u2014]+\s*{_MARK}(?=\s*(?:[.;,)\]]|$))"), _MARK),
    # a preposition whose object was the reference, at the end of a clause: "introduced in 8.4 by @x."
    (
        re.compile(
            rf"\s*\b(?:by|from|in|at|via|see(?: also)?|with|per|thanks to|and|or)\s+{_MARK}(?=\s*(?:[.;:,)\]]|$))", re.I
        ),
        _MARK,
    ),
]


# A sentence that credits someone, whoever: "Thanks @a for the PR.", "Thanks for reporting.", "Reported by Jo."
_CREDIT_SENTENCE = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s)|(?<=[.!?]\n))[ \t]*(?:(?:many |special |big )?thanks\b|thank you\b|kudos\b|props\b|"
    r"h/t\b|credits? (?:to|goes to)\b|"
    r"(?:(?:the|this) (?:vulnerability|issue|bug|problem|regression) (?:was|were) )?(?:originally |initially )?"
    r"(?:reported|contributed|suggested|requested|discovered|brought up(?: and fixed)?|"
    r"proposed|implemented|written|submitted|authored|found|investigated|patch(?:ed)?|fixed)\s+"
    r"(?:by|with help from)\b(?!\s+(?:an?|the|this|that|its|their|default|\w+ing)\b)|"
    # to its sentence's end: a full stop inside a link's address ("github.com/Julian") ends nothing
    r"(?:initial |original )?patch by\b|co-authored-by:)(?:[^.!?\n]|[.!?](?=[\w/]))*(?:[.!?]+|$)",
    re.I | re.M,
)


# A sentence that only points elsewhere: "See the discussion: https://...", "See https://... for details."
_POINTER_SENTENCE = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s)|(?<=[.!?]\n))[ \t]*see\b[^.!?\n]*?<?https?://[^\s>]+>?[^.!?\n]*(?:[.!?]+|$)", re.I | re.M
)


def strip_credits(text: str) -> str:
    """The text without sentences that credit people ("Thanks @x for the PR.", "Reported by Jo.") or only point at
    a page ("See the discussion: <url>"): a credit is who, a pointer where, never what to build (with its name
    removed a credit reads "Thanks for the PR.")."""
    return _POINTER_SENTENCE.sub("", _CREDIT_SENTENCE.sub("", text))


# the credits closing an entry: "(@a, b.c)", or, in an entry opening with its commit's link (release-please,
# npm's template-oss), its last parenthetical of bare names: "x-range build metadata support (i529015)"
_CLOSING_CREDITS = re.compile(r"\s*\(\s*@[\w-]+(?:\[bot\])?(?:\s*,\s*@?[\w.-]+(?:\[bot\])?)*\s*\)\s*$")
_COMMIT_LINK_OPENING = re.compile(r"^\s*(?:[-*+]\s+)?\[[^\]\n]{1,60}\]\(https?://\S+/commit/[0-9a-f]{7,40}/?\)")
_CLOSING_NAMES = re.compile(r"\s*\((?![^()]*#)[^()\s]+(?:\s*,\s*[^()\s]+)*\)\s*$")


# an @name that is the object of a preposition, article or verb is a decorator, not a person: "Add an optional
# condition parameter to @cached and @cachedmethod" (an @name joined to a kept one by "and" too)
_AT = "\x02"
_OBJECT_AT = re.compile(
    r"\b(?:to|the|a|an|of|on|into|for|use|using|uses|decorators?|new|existing)\s+@[A-Za-z_][\w.]*"
    r"(?:(?:\s*,\s*|\s+(?:and|or)\s+)@[A-Za-z_][\w.]*)*",
    re.I,
)


def _tidied(text: str, rules: list[tuple[re.Pattern, str]]) -> str:
    for _ in range(3):  # each rule can make another apply: "(#4), see #5 and #6."
        before = text
        for pattern, replacement in rules:
            text = pattern.sub(replacement, text)
        if text == before:
            break
    return text


def strip_refs(text: str) -> str:
    """The text without PR/issue references, credits to people ("by @x in #12", "Thanks @x for reporting."), the
    words that only named them ("Issue #5", "see #3 for details.") and the brackets they leave behind."""
    source = text
    if _COMMIT_LINK_OPENING.match(text):
        text = _CLOSING_NAMES.sub("", text)
    text = strip_credits(_CLOSING_CREDITS.sub("", text))
    capital = text.lstrip()[:1].isupper()
    if fixed := _FIX_PREFIX.match(text):
        text = "Fix: " + text[fixed.end() :]
    elif breaking := _BREAKING_PREFIX.match(text):  # a conventional commit's footer, in the words a page would use
        text = "Breaking change: " + text[breaking.end() :][:1].lower() + text[breaking.end() + 1 :]
    elif prefix := _NUMBERED_PREFIX.match(text):
        text = text[prefix.end() :][:1].upper() + text[prefix.end() + 1 :]
    text = _OBJECT_AT.sub(lambda match: match[0].replace("@", _AT), text)
    for pattern, _ in _TYPED:
        text = pattern.sub(_MARK, text)
    text = _LINKING.sub(_MARK, text).replace(_AT, "@")
    text = _BARE.sub(_MARK, text)
    text = _tidied(text, _REFERENCE_TIDYING)
    # brackets that held only references are then a reference like any other, but for the word before them: the
    # "issues" of "any kind of issues (See #1688) when ..." is the sentence's, not the reference's name (luxon)
    text = _tidied(text.replace(_HELD, _MARK), [rule for rule in _REFERENCE_TIDYING if rule is not _NAMING_WORDS])
    text = text.replace(_MARK, "")
    text = re.sub(r"\s+([,.;:])(?=\s|$)", r"\1", text)  # (not `.copy()`, `.pyi`: words, not punctuation)
    text = re.sub(r"([.;:!?])[,;]+(?=\s|$)", r"\1", text)
    text = re.sub(r"[,;]+\s*(?=[.!?](?:\s|$))", "", text)  # "for X, by @a." -> "for X."
    # what "`#1 <url>`_, `#2 <url>`_:" leaves, "x, see #3", or the full stop of "Fixes <issue url>. Makes ..."
    text = re.sub(r"^(?:[\s,;:]|\.(?=\s))+|[\s,;]+$", "", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    if ".." not in source:  # "... in type hooks. Fixes #140." left "... in type hooks.."
        text = re.sub(r"(?<!\.)([.!?])\s*\.(?!\.)", r"\1", text)
    if "...." not in source:  # an ellipsis stays one: "Wait for it... see #3." -> "Wait for it..."
        text = re.sub(r"\.\.\.\s*\.(?!\.)", "...", text)
    return text[:1].upper() + text[1:] if capital and text[:1].islower() else text  # "Follow-up to #3: keep"
