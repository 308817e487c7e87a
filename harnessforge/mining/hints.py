"""The hint ladder, taken from the repository itself, from vague to nearly the answer.

L0 issue titles (or changelog entries) -> L1 issue bodies (or commit message bodies) ->
L2 PR titles and descriptions (+ review comments) -> L3 non-test files touched ->
L4 the key non-test diff hunks, largest and most central first, capped in size.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from unidiff import PatchedFile

from ..gitio import display
from ..models import Hint, HintLadder
from .pulls import Unit
from .refs import strip_refs


@dataclass
class IssueText:
    number: int
    title: str
    body: str = ""
    labels: list[str] = field(default_factory=list)


@dataclass
class PullText:
    number: int
    title: str
    body: str = ""
    labels: list[str] = field(default_factory=list)
    review_comments: list[str] = field(default_factory=list)


def _unit_ref(u: Unit) -> str:
    return f"PR #{u.pr}" if u.pr else f"commit {u.sha[:10]}"


def level0(issues: list[IssueText], entries: list[str], units: list[Unit]) -> Hint:
    if issues:
        lines, sources = [f"- #{i.number}: {i.title}" for i in issues], [f"issue:#{i.number}" for i in issues]
    elif entries:
        lines, sources = [f"- {strip_refs(e)}" for e in entries], ["changelog"]
    else:
        lines, sources = [f"- {u.title}" for u in units], [_unit_ref(u) for u in units]
    return Hint(level=0, name="issue_titles", content="\n".join(dict.fromkeys(lines)), sources=sources)


def level1(issues: list[IssueText], units: list[Unit]) -> Hint:
    with_body = [i for i in issues if i.body.strip()]
    if with_body:
        content = "\n\n".join(f"#{i.number} {i.title}\n{i.body.strip()}" for i in with_body)
        return Hint(level=1, name="issue_bodies", content=content, sources=[f"issue:#{i.number}" for i in with_body])
    parts, sources = [], []
    for u in units:
        messages = u.side_messages or [(u.commit.subject, u.commit.body)]
        for subject, body in messages:
            if body.strip():
                parts.append(f"{subject}\n{body.strip()}")
        sources.append(_unit_ref(u))
    if not parts:  # no bodies anywhere: the subjects are all the history says
        parts = [s for u in units for s, _ in (u.side_messages or [(u.commit.subject, "")])]
    return Hint(level=1, name="issue_bodies", content="\n\n".join(parts), sources=sources)


def level2(units: list[Unit], pulls: dict[int, PullText]) -> Hint:
    parts, sources = [], []
    for u in units:
        gh = pulls.get(u.pr) if u.pr else None
        title, body = (gh.title, gh.body) if gh else (u.title, u.body)
        text = f"{_unit_ref(u)}: {title}" + (f"\n{body.strip()}" if body and body.strip() else "")
        if gh and gh.labels:
            text += f"\nLabels: {', '.join(gh.labels)}"
        if gh and gh.review_comments:
            text += "\nReview comments:\n" + "\n".join(f"> {c.strip()}" for c in gh.review_comments[:10])
        parts.append(text)
        sources.append(_unit_ref(u))
    return Hint(level=2, name="pr_descriptions", content="\n\n".join(parts), sources=sources)


def level3(source_stats: list[tuple[str, int, int]]) -> Hint:
    lines = [f"{display(p)} (+{a} -{d})" for p, a, d in source_stats] or ["(no non-test files change)"]
    return Hint(level=3, name="files_touched", content="\n".join(lines), sources=["diff"])


def level4(patch: list[PatchedFile], centrality: Counter, max_chars: int, max_hunks: int) -> Hint:
    """Hunks ranked by how many of the milestone's commits touched their file, then by size."""
    ranked = sorted(
        ((centrality[pf.path], h.added + h.removed, pf.path, str(h)) for pf in patch for h in pf),
        key=lambda x: (-x[0], -x[1], x[2]),
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


def build_ladder(
    milestone_id: str,
    units: list[Unit],
    issues: list[IssueText],
    entries: list[str],
    pulls: dict[int, PullText],
    source_stats: list[tuple[str, int, int]],
    patch: list[PatchedFile],
    max_chars: int,
    max_hunks: int,
) -> HintLadder:
    centrality = Counter(f.path for u in units for f in u.files)
    return HintLadder(
        milestone_id=milestone_id,
        levels=[
            level0(issues, entries, units),
            level1(issues, units),
            level2(units, pulls),
            level3(source_stats),
            level4(patch, centrality, max_chars, max_hunks),
        ],
    )
