"""A run in brief: the key moments of a reference run (for its task card) and a digest of the whole
trajectory (for the LLM judge), both from the analytics rows and the events a `RunView` holds."""

from __future__ import annotations

import json

from ..models.distill import HintLogEntry, KeyMoment
from .runs import RunView


def key_moments(run: RunView) -> list[KeyMoment]:
    """Stuck stretches, hints and the changes of direction after them, test runs that raised the
    passing count, submissions and the pass, in turn order."""
    turn_of = {event.seq: event.turn_id for event in run.events}
    moments = [
        KeyMoment(turn=point.signal_turn, kind="stuck", detail=f"{point.kind} for {point.length} steps")
        for point in run.stuck
    ]
    for hint in run.hints:
        moments.append(KeyMoment(turn=hint.hint_turn, kind="hint", detail=f"L{hint.level} by {hint.rule}"))
        if hint.direction_change:
            moved = ", ".join(hint.new_targets) or "new targets"
            moments.append(KeyMoment(turn=hint.hint_turn, kind="direction_change", detail=f"to {moved}"))
    moments += [
        KeyMoment(turn=point.turn_id, kind="tests_improved", detail=f"{point.tests_passed}/{point.tests_total} pass")
        for point in run.progress
        if point.improved
    ]
    for event in run.events:
        if event.role == "dev" and event.action.type == "submit":
            moments.append(KeyMoment(turn=turn_of[event.seq], kind="submitted", detail="asked for verification"))
        if event.passed_verification:
            moments.append(KeyMoment(turn=turn_of[event.seq], kind="passed", detail="the Verifier passed it"))
    order = {kind: index for index, kind in enumerate(KeyMoment.model_fields["kind"].annotation.__args__)}
    return sorted(moments, key=lambda moment: (moment.turn, order[moment.kind]))


def hint_log(run: RunView) -> list[HintLogEntry]:
    return [
        HintLogEntry(
            turn=hint.hint_turn,
            level=hint.level,
            rule=hint.rule,
            text=run.events[hint.hint_seq].action.content,
            direction_change=hint.direction_change,
            tests_improved=hint.tests_improved,
        )
        for hint in run.hints
    ]


def digest(run: RunView, limit: int) -> str:
    """The trajectory in one line per step (the Dev's words, its tool calls, short results, hints and
    verdicts), cut to `limit` characters with its end kept: the end holds the outcome."""
    lines = []
    for event in run.events:
        if event.role == "dev" and event.action.type == "message":
            if event.action.content.strip():
                lines.append(f"t{event.turn_id} dev: {_short(event.action.content, 200)}")
        elif event.role == "dev":
            args = _short(json.dumps(event.action.args, ensure_ascii=False), 120)
            lines.append(f"t{event.turn_id} {event.action.type} {args} -> {_short(event.observation or '', 120)}")
        elif event.role in ("mentor", "verifier"):
            lines.append(f"t{event.turn_id} {event.role}: {_short(event.action.content, 200)}")
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    marker = "[... earlier steps left out ...]\n"
    return marker + text[len(text) - max(0, limit - len(marker)) :]


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
