"""SFT segments: whole passing milestone runs, and their phases as prompt/completion cuts.

Phases of a run: `explore` (up to the first edit), `implement` (the first edit up to the first
all-green test run) and `verify` (the rest). Each is the conversation up to the phase's end, trained
from the phase's first turn.
"""

from __future__ import annotations

from ..models.distill import Segment
from .runs import RunView


def sft_segments(run: RunView) -> list[Segment]:
    if run.summary.status != "PASS":
        return []
    messages = run.messages
    segments = [
        Segment(id=f"{run.id}/milestone", kind="milestone", messages=messages, train_from=2, provenance=run.provenance)
    ]
    edits = [
        event.seq
        for event in run.events
        if event.role == "dev" and event.action.type in ("write_file", "edit_file") and event.ok
    ]
    greens = [point.seq for point in run.progress if point.tests_failed == 0 and point.tests_total > 0]
    first_edit = run.turn_start_before(run.first_index_from(edits[0])) if edits else len(messages)
    green_after_edit = min((seq for seq in greens if not edits or seq > edits[0]), default=run.events[-1].seq)
    first_green = run.last_index_upto(green_after_edit)
    phases = (
        ("explore", 2, first_edit),
        ("implement", first_edit, first_green),
        ("verify", first_green, len(messages)),
    )
    for kind, start, end in phases:
        if any(message["role"] == "assistant" for message in messages[start:end]):
            segments.append(
                Segment(
                    id=f"{run.id}/{kind}",
                    kind=kind,
                    messages=messages[:end],
                    train_from=start,
                    provenance=run.provenance,
                )
            )
    return segments
