"""Chain rows for long-horizon training: one run's milestones, one after the other, as one conversation.

A run's milestones (chain order: the repo's plan, else the milestone ids) are cut into stretches of
consecutive passing milestones: a milestone that did not pass ends a stretch, since SFT trains only
on passing work (and the chain was reset there anyway); so does one whose context was compacted (its SFT rows are
cut at the compactions: the model never saw it whole). Each stretch of at least
`distill.chains.min_milestones` is a row: the first milestone's system prompt, then per milestone a
`[milestone <id>] <task>` user message (its index is in `boundaries`) and the Dev's turns, trained
from the first Dev turn on. The Dev saw each milestone in a fresh conversation, with the memory of
the earlier ones in its task; the row shows it the whole history before each.

Size: a stretch beyond `max_messages` or `max_chars` is cut at milestone boundaries into several
rows (label `part`, `cut` says why); a milestone over the cap by itself is in no chain row. A row
holding every milestone of its run is `whole`.

Rows are made from the SFT `milestone` segments and the reviews, so `assemble` can join them from
every milestone's files (a chain spans the Dagster partitions). The export gates a chain by each of
its runs (`distill.gates`, dataset `chains`): one run gated out drops the row.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from ..errors import ArtifactError
from ..models.distill import ChainSegment, Review, Segment
from ..models.trajectory import Message
from ..rules import ChainRules
from ..store import Store


def chain_order(store: Store, repos: set[str]) -> dict[str, list[str]]:
    """Per repo, its milestone ids in chain order (the plan's), for the repos that have a plan."""
    order = {}
    for repo in repos:
        try:
            order[repo] = [milestone.id for milestone in store.load_plan(repo).milestones]
        except ArtifactError:
            continue  # crafted or imported runs: the milestone ids' order
    return order


def chain_segments(
    milestones: list[Segment], reviews: list[Review], order: dict[str, list[str]], rules: ChainRules
) -> list[ChainSegment]:
    """Chain rows from the SFT `milestone` segments of passing runs and every run's review."""
    if not rules.enabled:
        return []
    passed = {
        (segment.provenance.repo, segment.provenance.run_id, segment.provenance.milestone_id): segment
        for segment in milestones
        if segment.kind == "milestone"
    }
    compacted = {key for key, segment in passed.items() if segment.cut}  # the model never saw it whole
    runs: dict[tuple[str, str], list[Review]] = defaultdict(list)
    for review in reviews:
        runs[(review.repo, review.run_id)].append(review)
    rows = []
    for (repo, run_id), ran in sorted(runs.items()):
        known = order.get(repo, [])
        ran.sort(key=lambda review: (_position(known, review.milestone_id), _natural(review.milestone_id)))
        stretch: list[Segment] = []
        start_note = ""
        for review in [*ran, None]:
            key = (repo, run_id, review.milestone_id) if review else None
            if key in passed and key not in compacted:
                stretch.append(passed[key])
                continue
            why = ("compacted" if key in compacted else review.status) if review else ""
            end_note = f"ends before {review.milestone_id} ({why})" if review else ""
            rows += _pack(stretch, len(ran), start_note, end_note, rules)
            stretch, start_note = [], f"starts after {review.milestone_id} ({why})" if review else ""
    return rows


def _pack(
    stretch: list[Segment], run_milestones: int, start_note: str, end_note: str, rules: ChainRules
) -> list[ChainSegment]:
    """The stretch as rows under the caps, cut at milestone boundaries."""
    groups: list[tuple[list[Segment], list[str]]] = []  # (milestones, why the group is cut)
    current: list[Segment] = []
    notes = [start_note] if start_note else []
    for segment in stretch:
        if _over(rules, [segment]):
            groups.append((current, [*notes, f"ends before {_mid(segment)} (alone over {_over(rules, [segment])})"]))
            current, notes = [], [f"starts after {_mid(segment)} (alone over {_over(rules, [segment])})"]
            continue
        cap = _over(rules, [*current, segment])
        if current and cap:
            groups.append((current, [*notes, f"ends before {_mid(segment)} ({cap} reached)"]))
            current, notes = [], [f"starts at {_mid(segment)} ({cap} reached)"]
        current.append(segment)
    groups.append((current, [*notes, end_note] if end_note else notes))
    rows = []
    for group, why in groups:
        if len(group) < rules.min_milestones:
            continue
        messages, boundaries = _joined(group)
        first = group[0].provenance
        span = f"{_mid(group[0])}..{_mid(group[-1])}"
        runs = [segment.provenance for segment in group]
        synthetic = any(run.synthetic for run in runs)
        rows.append(
            ChainSegment(
                id=f"{first.repo}/{first.run_id}/chain-{span}",
                kind="chain",
                messages=messages,
                train_from=2,
                provenance=first.model_copy(update={"milestone_id": span, "synthetic": synthetic}),
                label="whole" if len(group) == run_milestones else "part",
                cut="; ".join(why) or None,
                milestones=[_mid(segment) for segment in group],
                boundaries=boundaries,
                runs=runs,
            )
        )
    return rows


def _joined(group: list[Segment]) -> tuple[list[Message], list[int]]:
    """The first milestone's system prompt, then each milestone's marked task and turns; where each starts."""
    messages: list[Message] = [group[0].messages[0]]
    boundaries = []
    for segment in group:
        boundaries.append(len(messages))
        task = segment.messages[1]
        messages.append({**task, "content": f"[milestone {_mid(segment)}] {task['content']}"})
        messages += segment.messages[2:]
    return messages, boundaries


def _over(rules: ChainRules, group: list[Segment]) -> str:
    """The cap these milestones joined exceed ('' when none)."""
    messages, _ = _joined(group)
    if len(messages) > rules.max_messages:
        return f"max_messages {rules.max_messages}"
    if sum(len(json.dumps(message, ensure_ascii=False)) for message in messages) > rules.max_chars:
        return f"max_chars {rules.max_chars}"
    return ""


def _mid(segment: Segment) -> str:
    return segment.provenance.milestone_id


def _position(known: list[str], milestone_id: str) -> int:
    return known.index(milestone_id) if milestone_id in known else len(known)


def _natural(milestone_id: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", milestone_id)]
