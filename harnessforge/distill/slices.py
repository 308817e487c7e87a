"""Stuck slices: from the first stuck signal to its resolution, with the context before it.

Overlapping stuck points of one run (a same-error streak that is also a loop) make one slice. The
slice ends at the first test run that raised the passing count after the signal, or at a passing
verification, whichever comes first; with neither, at the end of the run (`unresolved`). It holds
`distill.slice_turns` Dev turns after the task (seed 001: 10-20): a longer stretch keeps its last
`max` turns, ending at the resolution (`cut` says how many went); a shorter one gets earlier turns
as context (never trained) up to `min`, and at least `slice_context_messages` messages of it. A hint
released inside the slice makes it `resolved_after_hint` (with the highest level released). A resolved
slice trains only from the turn the Dev started to recover (after the slice's last hint or last test run
that did not improve, whichever is later): the stuck turns before it are shown, not imitated. An
`unresolved` slice trains nothing in an SFT dialect (the export leaves it out; its loop turns are KTO
negatives and DPO rejected sides). A slice
whose trained turns act on a hint released before its context (`hint_leaks`) is dropped, marked, or
given those hints after the task, per `distill.hint_leaks`.
"""

from __future__ import annotations

from ..analytics.rows import StuckPointRow
from ..models.distill import Segment
from ..rules import DistillRules
from .hint_leaks import hint_leak
from .runs import RunView


def stuck_slices(run: RunView, rules: DistillRules) -> list[Segment]:
    slices = []
    for kinds, start, signal, _ in _merged(run.stuck):
        resolved_at = _resolution(run, signal)
        stop = resolved_at if resolved_at is not None else run.events[-1].seq
        hints = [hint for hint in run.hints if start < hint.hint_seq <= stop]
        if resolved_at is None:
            label, level = "unresolved", None
        elif hints:
            label, level = "resolved_after_hint", max(hint.level for hint in hints)
        else:
            label, level = "resolved_by_self", None
        view = run.at(stop)  # (no later compaction's stubs)
        end = view.last_index_upto(stop)
        begin, context_from, cut = _window(view, view.turn_start_before(view.first_index_from(start)), end, rules)
        context = view.messages[:2] + view.messages[context_from:begin]
        body = view.messages[begin:end]
        if not any(message["role"] == "assistant" for message in body):
            continue
        # the stuck turns before the recovery are shown, not trained; so are turns before a compaction in the slice
        # (they had read what it elided)
        shown = max(0, _recovery(view, signal, resolved_at, hints) - begin) if resolved_at is not None else 0
        compacted = max((seq for seq in run.compactions if seq <= stop), default=-1)
        shown = max(shown, view.first_turn_from(compacted) - begin) if resolved_at is not None else shown
        if resolved_at is not None and not any(message["role"] == "assistant" for message in body[shown:]):
            continue
        leak, earlier = _leak(view, stop, context + body, len(context) + shown, rules)
        if leak and rules.hint_leaks == "drop":
            continue
        if leak and rules.hint_leaks == "give_hint":  # the hints it acts on, in their order, before the context
            context = view.messages[:2] + [{"role": "user", "content": text} for text in earlier] + context[2:]
        slices.append(
            Segment(
                id=f"{run.id}/slice-{start}",
                kind="+".join(kinds),
                messages=context + body,
                train_from=len(context) + shown,
                provenance=run.provenance,
                label=label,
                hint_level=level,
                start_seq=start,
                end_seq=stop,
                depends_on_hint=bool(leak) and rules.hint_leaks == "mark",
                cut=cut,
            )
        )
    return slices


def _recovery(run: RunView, signal: int, resolved_at: int, hints: list) -> int:
    """Index of the assistant message where the Dev started to recover: the first after the stretch's last hint or
    last test run that did not improve (before the resolution), else the turn of the resolution itself."""
    failed = [point.seq for point in run.progress if signal <= point.seq < resolved_at and not point.improved]
    pivot = max([signal, *failed, *(hint.hint_seq for hint in hints if hint.hint_seq < resolved_at)])
    after = run.first_index_from(pivot + 1)
    resolution = run.turn_start_before(run.first_index_from(resolved_at))
    first = next((index for index in range(after, resolution) if run.messages[index]["role"] == "assistant"), None)
    return first if first is not None else resolution


def _window(run: RunView, begin: int, end: int, rules: DistillRules) -> tuple[int, int, str | None]:
    """The slice's trained start, its context's start (after the task) and why turns were cut: the
    stretch `messages[begin:end]` keeps its last `slice_turns.max` Dev turns; the context is
    `slice_context_messages` messages, widened to whole turns until the slice holds `slice_turns.min`
    turns, and never taking it beyond `max`. Cuts fall on assistant messages, so a tool call keeps
    its result."""
    turns = [index for index, message in enumerate(run.messages) if message["role"] == "assistant" and index >= 2]
    body = [index for index in turns if begin <= index < end]
    cut, most = None, rules.slice_turns.max
    if len(body) > most:
        cut = f"the first {len(body) - most} of its {len(body)} turns (slice_turns.max {most})"
        begin, body = body[-most], body[-most:]
    before = [index for index in turns if index < begin]
    by_messages = run.turn_start_before(max(2, begin - rules.slice_context_messages))
    wanted = max(len([index for index in before if index >= by_messages]), rules.slice_turns.min - len(body))
    wanted = min(wanted, rules.slice_turns.max - len(body), len(before))
    context_from = before[-wanted] if wanted > 0 else begin
    return begin, max(2, context_from), cut


def _leak(run: RunView, stop: int, messages: list, train_from: int, rules: DistillRules) -> tuple[str, list[str]]:
    """Whether a trained turn of the slice shows a hint released before its end that its messages lack
    (before its context, or in turns cut from it), and those hints' texts."""
    present = {str(message.get("content")) for message in messages if message["role"] == "user"}
    earlier = [run.events[hint.hint_seq].action.content for hint in run.hints if hint.hint_seq <= stop]
    earlier = [text for text in earlier if text not in present]
    for index in range(train_from, len(messages)):
        if messages[index]["role"] == "assistant":
            leak = hint_leak(messages[index], earlier, messages[:index], rules.hint_references)
            if leak:
                return leak, earlier
    return "", earlier


def _merged(points: list[StuckPointRow]) -> list[tuple[list[str], int, int, int]]:
    """(kinds, start_seq, first signal_seq, end_seq) of overlapping stuck points merged."""
    merged: list[tuple[list[str], int, int, int]] = []
    for point in sorted(points, key=lambda point: point.start_seq):
        if merged and point.start_seq <= merged[-1][3]:
            kinds, start, signal, end = merged[-1]
            merged[-1] = (
                sorted({*kinds, point.kind}),
                start,
                min(signal, point.signal_seq),
                max(end, point.end_seq),
            )
        else:
            merged.append(([point.kind], point.start_seq, point.signal_seq, point.end_seq))
    return merged


def _resolution(run: RunView, signal: int) -> int | None:
    """The first event after `signal` that shows the Dev out of it: more tests passing, or a pass."""
    candidates = [point.seq for point in run.progress if point.improved and point.seq > signal]
    candidates += [event.seq for event in run.events if event.passed_verification and event.seq > signal]
    return min(candidates, default=None)
