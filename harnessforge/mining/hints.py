"""The hint ladder, taken from the repository itself, from vague to nearly the answer.

L0 names the issues (GitHub titles) or the work's own names (PR titles), rendered and withheld as
the description is, without restating it; L1 the issue bodies, or the bodies of the individual
commits; L2 the PR descriptions (GitHub, else the merge or squash commit's own message: title and
body, + review comments);
L3 the source files touched; L4 the key diff hunks, largest and most central first, capped.
Each level carries only material the levels before it (and the description) lack. A level left
with nothing of its own is marked empty with the reason, and the Mentor skips it.
"""

from __future__ import annotations

import re
from collections import Counter

from unidiff import PatchedFile

from ..files import FileClassifier
from ..github import IssueText, PullText
from ..gitio import display
from ..models import Hint, HintLadder, Milestone
from ..models.task import asked
from ..refs import strip_refs
from ..rules import PlanningRules
from ..text_lint import text_problems
from .describe import Withholding
from .kinds import KindReader
from .markup import render
from .pulls import Unit, without_trailers


def _unit_ref(unit: Unit) -> str:
    return f"PR #{unit.pr}" if unit.pr else f"commit {unit.sha[:10]}"


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", strip_refs(text).lower()).split())


def _message_text(body: str) -> str:
    """A commit message body without trailers and lines that are only references ("Closes #3")."""
    kept = without_trailers(body).splitlines()
    kept = [line for line in kept if _normal(line) or not line.strip()]
    return "\n".join(kept).strip()


class _Seen:
    """What earlier levels (and the description) already said, to keep each level's own material."""

    def __init__(self, *texts: str):
        self.text = " ".join(_normal(text) for text in texts)

    def new(self, text: str) -> bool:
        words = _normal(text)
        return bool(words) and words not in self.text

    def add(self, text: str) -> None:
        self.text += " " + _normal(text)


def _empty(level: int, name: str, reason: str, sources: list[str] | None = None) -> Hint:
    return Hint(level=level, name=name, content="", empty_reason=reason, sources=sources or [])


def level0(
    issues: list[IssueText], features: list[tuple[str, list[Unit]]], seen: _Seen, withholding: Withholding
) -> Hint:
    """The issues' titles (GitHub); else the names the work was given (its PR titles), rendered and withheld as
    the description is: only what the description does not say already. Bare numbers say nothing to a Dev
    without the network: references stay in `sources` only."""
    named = [(issue.title, [f"issue:#{issue.number}"]) for issue in issues]
    if not issues:
        named = [(name, [_unit_ref(unit) for unit in units]) for name, units in features]
    lines, sources = [], []
    for name, refs in named:
        text, withheld = withholding.apply(render(name, "markdown").text)
        text = " ".join(text.split())
        if withheld and len(text.split()) < 3:
            continue  # "switch" of "switch tests from Jest to `node:test`": what is left of it says nothing
        if text and seen.new(text) and not text_problems(text, name):
            lines.append(f"- {text}")
            sources += refs
    lines = list(dict.fromkeys(lines))
    if not lines:
        why = (
            "the issues' titles say nothing the description does not"
            if issues
            else ("no issue titles (no GitHub token), and the work's names are the description's")
        )
        return _empty(0, "issue_titles", why)
    content = "\n".join(lines)
    seen.add(content)
    return Hint(level=0, name="issue_titles", content=content, sources=list(dict.fromkeys(sources)))


def level1(issues: list[IssueText], units: list[Unit], seen: _Seen) -> Hint:
    """Issue bodies; else the bodies of the individual commits (a squash commit's body is its PR's: L2)."""
    with_body = [issue for issue in issues if issue.body.strip() and seen.new(issue.body)]
    if with_body:
        content = "\n\n".join(f"#{issue.number} {issue.title}\n{issue.body.strip()}" for issue in with_body)
        seen.add(content)
        return Hint(
            level=1, name="issue_bodies", content=content, sources=[f"issue:#{issue.number}" for issue in with_body]
        )
    parts, sources = [], []
    for unit in units:
        if unit.kind == "squash":
            continue
        for subject, body in unit.side_messages or [(unit.commit.subject, unit.commit.body)]:
            text = _message_text(body)
            if text and seen.new(text):
                parts.append(f"{subject}\n{text}")
                sources.append(_unit_ref(unit))
    if not parts:
        why = "no issue texts (no GitHub token) and no commit message body beyond references and trailers"
        return _empty(1, "issue_bodies", why)
    content = "\n\n".join(dict.fromkeys(parts))
    seen.add(content)
    return Hint(level=1, name="issue_bodies", content=content, sources=list(dict.fromkeys(sources)))


def level2(units: list[Unit], pulls: dict[int, PullText], seen: _Seen) -> Hint:
    """PR descriptions: GitHub's, else the merge or squash commit's own message (title and body)."""
    parts, sources = [], []
    for unit in units:
        pull = pulls.get(unit.pr) if unit.pr else None
        if pull is None and unit.kind == "direct":
            continue  # a direct commit has no PR: its message is L1's
        title, body = (pull.title, pull.body) if pull else (unit.title, unit.body)
        body = _message_text(body or "")
        extra = ""
        if pull and pull.labels:
            extra += f"\nLabels: {', '.join(pull.labels)}"
        if pull and pull.review_comments:
            extra += "\nReview comments:\n" + "\n".join(f"> {comment.strip()}" for comment in pull.review_comments[:10])
        if not (body and seen.new(body)) and not extra:
            continue
        parts.append(f"{_unit_ref(unit)}: {title}" + (f"\n{body}" if body else "") + extra)
        sources.append(_unit_ref(unit))
    if not parts:
        why = "no PR descriptions: the merge and squash messages carry no text beyond their titles"
        return _empty(2, "pr_descriptions", why)
    content = "\n\n".join(parts)
    seen.add(content)
    return Hint(level=2, name="pr_descriptions", content=content, sources=sources)


def level3(source_stats: list[tuple[str, int, int]]) -> Hint:
    lines = [f"{display(path)} (+{added} -{deleted})" for path, added, deleted in source_stats] or [
        "(no non-test files change)"
    ]
    return Hint(level=3, name="files_touched", content="\n".join(lines), sources=["diff"])


def level4(patch: list[PatchedFile], centrality: Counter, max_chars: int, max_hunks: int) -> Hint:
    """Hunks ranked by how many of the milestone's commits touched their file, then by size."""
    ranked = sorted(
        (
            (centrality[patched_file.path], hunk.added + hunk.removed, patched_file.path, str(hunk))
            for patched_file in patch
            for hunk in patched_file
        ),
        key=lambda item: (-item[0], -item[1], item[2]),
    )
    chosen, used = [], 0
    for _, _, path, text in ranked:
        block = f"--- a/{path}\n+++ b/{path}\n{text}"
        if len(chosen) >= max_hunks or (chosen and used + len(block) > max_chars):
            continue
        chosen.append(block[:max_chars])
        used += len(block)
    content = "\n".join(chosen) or "(only binary files change)"
    return Hint(level=4, name="diff_hunks", content=content, sources=["ground_truth.patch"])


def level0_problems(ladder: HintLadder) -> list[str]:
    """What a reader would stumble on in the first hint, which comes with the task: holes, and names cut to a word."""
    content = ladder.levels[0].content
    cut = [f"a hint cut to one word: “{line}”" for line in content.splitlines() if len(line.split()) < 3]
    return cut + text_problems(content)


def build_ladder(
    milestone_id: str,
    units: list[Unit],
    issues: list[IssueText],
    features: list[tuple[str, list[Unit]]],
    pulls: dict[int, PullText],
    source_stats: list[tuple[str, int, int]],
    patch: list[PatchedFile],
    max_chars: int,
    max_hunks: int,
    description: str = "",
    withholding: Withholding | None = None,
) -> HintLadder:
    """`units`: the work the description covers; `features`: (name, units) per feature, seeds first;
    `withholding`: what L0 must not show (the description's rule)."""
    centrality = Counter(file.path for unit in units for file in unit.files)
    seen = _Seen(description)
    return HintLadder(
        milestone_id=milestone_id,
        levels=[
            level0(issues, features, seen, withholding or Withholding([])),
            level1(issues, units, seen),
            level2(units, pulls, seen),
            level3(source_stats),
            level4(patch, centrality, max_chars, max_hunks),
        ],
    )


def asked_names(named: list[tuple[str, list[Unit]]], milestone: Milestone) -> list[tuple[str, list[Unit]]]:
    """The work's names of the parts the task asks for: a part it names only as context gives no hint (python-dotenv:
    a zipfile task's first hint was another part's "Fix temporary file is deleted before closing")."""
    asked_commits = {sha for index in asked(milestone.parts) for sha in milestone.parts[index].commits}
    return [(name, units) for name, units in named if units[0].sha in asked_commits] if asked_commits else named


def milestone_ladder(
    milestone: Milestone,
    infos: list,
    groups: list,
    others: list,
    text: dict,
    context: tuple[PlanningRules, FileClassifier, dict[int, PullText]],
    withholding: Withholding,
) -> HintLadder:
    """A milestone's hints from its described work (`infos`, `groups`: its units and feature groups; `others`,
    `text`: its non-test file diffs and their parsed hunks): its issues, feature names, PRs, files (L3) and
    code hunks (L4). `context`: the plan's planning rules, file classifier and PR texts."""
    planning, classify, pulls = context
    hint_units = [info.unit for info in infos if info.described] or [info.unit for info in infos]
    issues = [issue for group in groups for issue in group.issues]
    kinds = KindReader(planning)
    named = [
        (kinds.without_prefix(unit.title), [unit])
        for group in groups
        for unit in (info.unit for info in group.infos if info.role == "feature")
        if not kinds.is_housekeeping(unit.title, subject=True) and not re.match(r"merge\b", unit.title, re.I)
    ]
    named = asked_names(named, milestone)
    source_stats = []
    for file in others:
        parsed = text.get(display(file.path))
        source_stats.append((file.path, parsed.added if parsed else 0, parsed.removed if parsed else 0))
    work_paths = {file.path for unit in hint_units for file in unit.files}
    # L3 lists what the work touched (source first): a reformatting chore riding along is not a hint.
    files_hint = [
        stat for stat in source_stats if stat[0] in work_paths and classify.is_source(stat[0])
    ] or source_stats
    hunks = [text[display(file.path)] for file in others if display(file.path) in text]
    # code first: docs and config are no key
    code_hint = [parsed for parsed in hunks if classify.is_source(parsed.path)] or hunks
    return build_ladder(
        milestone.id,
        hint_units,
        issues,
        named,
        pulls,
        files_hint,
        code_hint,
        planning.hint_l4_max_chars,
        planning.hint_l4_max_hunks,
        description=f"{milestone.title}\n{milestone.description}",
        withholding=withholding,
    )
