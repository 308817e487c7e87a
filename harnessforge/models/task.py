"""What a milestone's task asks: its parts (one feature each, as the repository describes it) and which of them
the acceptance tests grade, composed into the title and "What to build" text the Dev reads.

The text asks for what the tests grade. Before validation a part counts as graded when its commits changed a
test; validation decides (`TaskPart.graded`). A part no test grades stays in the ground truth and is named once,
as context ("Also in this change, not graded: ..."), never as a requirement, nor in the title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version
from pydantic import Field

from .common import Model

CONTEXT_LEAD = "Also in this change, not graded and not part of this task:"
SHIPPED_LEAD = "This shipped in release"
_NAMES_NOTHING = re.compile(r"^\W*[A-Za-z]+\W*$")  # a commit subject of one plain word ("Oops.", "wip"): no context
_EMPHASIS = re.compile(r"(\*\*|__)(\S(?:.*?\S)?)\1")
MAX_TITLE_PARTS = 2  # the title names this many features; the rest are its "(+N more)"


class TaskPart(Model):
    """One feature of a milestone: its name and text, the commits that make it and what can test it."""

    heading: str | None = Field(None, description="Its name: a release-note entry, issue or PR title, first sentence.")
    source: str = Field("none", description="Where the name came from: changelog, issue, pull request, commit.")
    body: list[str] = Field([], description="Its text under the name, rendered for the Dev: why, its entries.")
    promises: list[str] = Field([], description="Its release-note entries' first sentences: acceptance criteria.")
    problems: list[str] = Field([], description="Holes a reader would see in its text (`text_lint`).")
    asides: list[str] = Field([], description="What it also does that is no requirement: said once, as context.")
    releases: list[str] = Field([], description="The releases its release-note entries shipped in.")
    commits: list[str] = []
    test_files: list[str] = Field([], description="The test files its commits changed.")
    tests: list[str] = Field([], description="The tests its commits add or change there (names; empty: by file).")
    lines: int = Field(0, description="Source lines its commits change: the size of the work it asks for.")
    kind: str | None = Field(
        None, description="Its work kind by its commits and entries: feature, performance, bug fix, refactor."
    )
    seed: bool = Field(True, description="Release notes (or a PR) describe it: it may title the milestone.")
    housekeeping: bool = Field(
        False, description="Its name says housekeeping (typing, CI, dependencies): not named as context when not asked."
    )
    tested: bool = Field(False, description="Its commits changed a test file: a test can grade it.")
    graded: bool | None = Field(
        None, description="Set by `validate`: a graded FAIL_TO_PASS test is its own (None: not validated yet)."
    )

    @property
    def name(self) -> str:
        """How the text names it: its heading, else its first line."""
        return self.heading or next((line.strip().removeprefix("- ") for line in self.body if line.strip()), "")


def asked(parts: list[TaskPart]) -> list[int]:
    """The parts the task asks for: those validation found graded; before validation those a test can grade (their
    commits changed a test); all of them when none is (nothing to tell apart: the milestone is weak or untested)."""
    graded = [index for index, part in enumerate(parts) if part.graded]
    if graded:
        return graded
    if any(part.graded is not None for part in parts):
        return list(range(len(parts)))
    tested = [index for index, part in enumerate(parts) if part.tested]
    return tested or list(range(len(parts)))


def _words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[A-Za-z0-9_]+", text) if len(word) > 1}


def asked_hint(content: str, parts: list[TaskPart], min_overlap: float = 0.5) -> str:
    """The first hint's lines (the work's titles, planned before validation) without those naming a part the task no
    longer asks for: packaging's PEP 751 task, graded on its markers only, named its Android tags in the hint just
    after saying they are not part of it. A line goes when the part its words match best (`min_overlap` of the
    words of both) is one the task names as context."""
    wanted = set(asked(parts))
    named = [(index, _words(part.name)) for index, part in enumerate(parts) if part.name]
    if all(index in wanted for index, _ in named):
        return content
    kept = []
    for line in content.splitlines():
        words = _words(line)
        overlaps = [(len(words & own) / len(words | own), index) for index, own in named if words | own]
        best = max(overlaps, default=(0.0, -1))
        if best[0] < min_overlap or best[1] in wanted:
            kept.append(line)
    return "\n".join(kept)


@dataclass
class Composed:
    """A milestone's title and description from its parts, and which parts they ask for."""

    title: str
    description: str
    title_source: str
    titled: list[int] = field(default_factory=list)  # the parts the title names
    asked: list[int] = field(default_factory=list)
    promises: list[str] = field(default_factory=list)


def _version(text: str):
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def _says_more(part: TaskPart) -> bool:
    """Whether a part's body says more than its heading: dacite's "### Introduce cache functionality" over the
    one bullet "- Introduce cache functionality" is a bullet, not a section repeating itself."""
    said = [line.strip().removeprefix("- ").strip().rstrip(".").lower() for line in part.body if line.strip()]
    return bool(said) and said != [(part.heading or "").strip().rstrip(".").lower()]


def compose(parts: list[TaskPart], release: str | None) -> Composed:
    """Title, "What to build" and criteria of the asked parts (`asked`); the others named once as context. A part
    with no more to say than its name is a bullet, listed before the parts with sections (a bare bullet after a
    section would read as that section's). `release`: where the milestone ships when no asked entry says."""
    wanted = asked(parts)
    speaking = [index for index in wanted if parts[index].name]
    seeds = [index for index in speaking if parts[index].seed and parts[index].heading]
    titled_pool = sorted(
        seeds or [index for index in speaking if parts[index].heading], key=lambda i: not parts[i].tested
    )
    names = list(dict.fromkeys(parts[index].heading for index in titled_pool))
    title = "; ".join(names[:MAX_TITLE_PARTS]) + (f" (+{len(names) - 2} more)" if len(names) > MAX_TITLE_PARTS else "")
    title = _EMPHASIS.sub(r"\2", title)  # a heading's own weight: dayjs' `**plugin:** timezone ...` read as asterisks
    titled = [index for index in titled_pool if parts[index].heading in names[:MAX_TITLE_PARTS]]
    lines: list[str] = []
    if len(speaking) == 1:
        part = parts[speaking[0]]
        lines += part.body if any(line.strip() for line in part.body) else [f"{part.heading}."]
    else:
        bare = [parts[index] for index in speaking if not _says_more(parts[index])]
        full = [parts[index] for index in speaking if _says_more(parts[index])]
        full.sort(key=lambda part: bool(part.heading))  # a headless body after a section would read as its own
        lines += list(dict.fromkeys(f"- {part.heading}" for part in bare))  # dayjs' changelog listed one twice
        for part in full:
            lines += ["", f"### {part.heading}", "", *part.body] if part.heading else ["", *part.body]
    context = [
        parts[index].name for index in range(len(parts)) if index not in wanted and not parts[index].housekeeping
    ]
    context = list(dict.fromkeys(context + [aside for index in wanted for aside in parts[index].asides]))
    context = [name.rstrip(".") for name in context if name and not _NAMES_NOTHING.match(name)]
    if context:
        lines += ["", f"{CONTEXT_LEAD} " + "; ".join(context) + "."]
    shipped = sorted({release for index in wanted for release in parts[index].releases}, key=_version)
    shipped = shipped or ([release] if release else [])
    if shipped:
        said = shipped[0] if len(shipped) == 1 else ", ".join(shipped[:-1]) + f" and {shipped[-1]}"
        lines += ["", f"{SHIPPED_LEAD}{'s' * (len(shipped) > 1)} {said}."]
    description = "\n".join(lines).strip()
    while "\n\n\n" in description:
        description = description.replace("\n\n\n", "\n\n")
    source = parts[titled[0]].source if titled else "none"
    promises = list(dict.fromkeys(promise for index in wanted for promise in parts[index].promises))
    if not title:
        title = "Milestone" + (f" towards {release}" if release else "")
    return Composed(title, description, source, titled, wanted, promises)


def statement_words(description: str, documentation: list[str]) -> int:
    """The words a task states its work in: its "What to build" (what it names as context and where it shipped
    aside), and the documentation and interface lines it quotes (a new function's declaration and doc say what
    to write: lo's "Add `ConcatBy`" with its signature is a task a reader accepts)."""
    said = [line for line in description.splitlines() if not line.startswith((CONTEXT_LEAD, SHIPPED_LEAD))]
    return len(" ".join(said + documentation).split())


def held_back(
    description: str,
    documentation: list[str],
    parts: list[TaskPart],
    min_words: int,
    max_parts: int,
    keeping_kinds: list[str] = (),
    max_releases: int = 0,
    change_words: str = "",
    unstated_values: int = 0,
    max_unstated_values: int = 0,
    ungraded: bool = False,
):
    """Why a task cannot be given to a Dev, as SWE-bench Verified's filter would find it (empty: it can): a
    statement of fewer than `min_words` words (a title such as "Add `truncate` function" cannot say what the tests
    check), more than `max_parts` features asked at once (a grab-bag no statement specifies), or only work of
    `keeping_kinds` asked (a speed-up or refactor keeps behaviour: a test failing before it checks what no text
    says) unless a part's name says a change in `change_words`, or work that shipped over more than `max_releases`
    releases (later entries revise earlier ones), or tests expecting more than `max_unstated_values` messages only the
    new code holds that the task does not give (`unstated_values`: translations, tip texts), or, `ungraded`, a task
    none of whose asked work a graded test covers (its tests check a change the text does not ask for). 0 or empty
    turns a rule off."""
    reasons = []
    if ungraded:
        reasons.append("ungraded: no test it is graded by covers the work it asks for (flag weak_acceptance)")
    if max_unstated_values and unstated_values > max_unstated_values:
        reasons.append(
            f"unstated_values: its tests expect {unstated_values} messages the task does not give "
            f"(planning.max_unstated_values: {max_unstated_values})"
        )
    kinds = {parts[index].kind for index in asked(parts)} if parts else set()
    says_change = change_words and any(re.search(change_words, parts[index].name, re.I) for index in asked(parts))
    if keeping_kinds and kinds and kinds <= set(keeping_kinds) and not says_change:
        said = " and ".join(sorted(kinds))
        reasons.append(f"unstated: it asks only for {said} work, which keeps behaviour, yet its tests fail before it")
    words = statement_words(description, documentation)
    if min_words and words < min_words:
        reasons.append(f"terse: its statement has {words} words (planning.min_statement_words: {min_words})")
    releases = {release for index in asked(parts) for release in parts[index].releases} if parts else set()
    if max_releases and len(releases) > max_releases:
        reasons.append(
            f"spans_releases: its work shipped in {len(releases)} releases (planning.max_task_releases: {max_releases})"
        )
    features = len(asked(parts)) if parts else 0
    if max_parts and features > max_parts:
        reasons.append(f"grab_bag: it asks for {features} features (planning.max_asked_parts: {max_parts})")
    return reasons
