"""SFT segments: whole passing milestone runs, and their phases as prompt/completion cuts.

Phases of a run, one after the other (a phase with no Dev turn is left out):
- `explore`: up to the plan, or to the first edit when no plan is stated;
- `plan`: from the first Dev message before the first edit that states a plan (`distill.plan_patterns`,
  in its text or reasoning) up to that edit; a plan stated in the turn of the first edit is `implement`;
- `implement`: the first edit up to the first failing test run after it (or to the first all-green one);
- `debug`: after that failing test run up to the next all-green one;
- `verify`: the rest.
Each is the conversation up to the phase's end, trained from the phase's first turn, as the model saw it: a phase
that spans a compaction is one row per stretch between compactions (`cut` says which), since the turns after it read
stubs or a summary where the turns before had read the outputs whole.
"""

from __future__ import annotations

import re

from ..models.distill import Segment
from ..models.trajectory import Message
from .runs import RunView


def sft_segments(run: RunView, plan_patterns: list[str] = ()) -> list[Segment]:
    if run.summary.status != "PASS":
        return []
    whole = run.whole
    messages = whole.messages
    edits = run.edit_seqs
    greens = [point.seq for point in run.progress if point.tests_failed == 0 and point.tests_total > 0]
    first_edit = whole.turn_start_before(whole.first_index_from(edits[0])) if edits else len(messages)
    green_after_edit = min((seq for seq in greens if not edits or seq > edits[0]), default=run.events[-1].seq)
    first_green = whole.last_index_upto(green_after_edit)
    plan = next((index for index in range(2, first_edit) if _states_plan(messages[index], plan_patterns)), first_edit)
    failing = [
        point.seq
        for point in run.progress
        if point.tests_failed > 0 and edits and edits[0] < point.seq < green_after_edit
    ]
    debug = max(first_edit, whole.last_index_upto(failing[0])) if failing else first_green
    phases = (
        ("milestone", 2, len(messages)),
        ("explore", 2, plan),
        ("plan", plan, first_edit),
        ("implement", first_edit, debug),
        ("debug", debug, first_green),
        ("verify", first_green, len(messages)),
    )
    segments = []
    for kind, start, end in phases:
        first = next((i for i in range(start, end) if messages[i]["role"] == "assistant"), None)
        if first is None:
            continue
        last = max(origin for origin in whole.conversation.origins[:end] if origin is not None)
        stretches = run.seen(whole.conversation.origins[first], last)
        for number, (seen, train_from) in enumerate(stretches, 1):
            segments.append(
                Segment(
                    id=f"{run.id}/{kind}" + (f"-{number}" if number > 1 else ""),
                    kind=kind,
                    messages=seen,
                    train_from=train_from,
                    provenance=run.provenance,
                    cut=f"stretch {number} of {len(stretches)} between compactions" if len(stretches) > 1 else None,
                )
            )
    return segments


def _states_plan(message: Message, patterns: list[str]) -> bool:
    if message["role"] != "assistant":
        return False
    said = "\n".join(str(message.get(key) or "") for key in ("content", "reasoning_content"))
    return any(re.search(pattern, said, re.IGNORECASE | re.MULTILINE) for pattern in patterns)
