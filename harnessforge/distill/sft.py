"""SFT segments: whole passing milestone runs, and their phases as prompt/completion cuts.

Phases of a run: `explore` (up to the first edit), `implement` (the first edit up to the first
all-green test run) and `verify` (the rest). Each is the conversation up to the phase's end, trained
from the phase's first turn.
"""

from __future__ import annotations

from ..models.distill import Segment
from .runs import RunView


def sft_segments(run: RunView) -> list[Segment]:
    if run.summary["status"] != "PASS":
        return []
    msgs = run.messages
    out = [Segment(id=f"{run.id}/milestone", kind="milestone", messages=msgs, train_from=2, provenance=run.provenance)]
    edits = [e.seq for e in run.events if e.role == "dev" and e.action.type in ("write_file", "edit_file") and e.ok]
    greens = [p["seq"] for p in run.progress if p["tests_failed"] == 0 and p["tests_total"] > 0]
    first_edit = run.turn_start_before(run.first_index_from(edits[0])) if edits else len(msgs)
    first_green = run.last_index_upto(min((g for g in greens if not edits or g > edits[0]), default=run.events[-1].seq))
    for kind, start, end in (("explore", 2, first_edit), ("implement", first_edit, first_green),
                             ("verify", first_green, len(msgs))):  # fmt: skip
        if any(m["role"] == "assistant" for m in msgs[start:end]):
            out.append(Segment(id=f"{run.id}/{kind}", kind=kind, messages=msgs[:end], train_from=start,
                               provenance=run.provenance))  # fmt: skip
    return out
