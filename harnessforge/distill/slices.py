"""Stuck slices: from the first stuck signal to its resolution, with the context before it.

Overlapping stuck points of one run (a same-error streak that is also a loop) make one slice. The
slice ends at the first test run that raised the passing count after the signal, or at a passing
verification, whichever comes first; with neither, at the end of the run (`unresolved`). A hint
released inside the slice makes it `resolved_after_hint` (with the highest level released).
"""

from __future__ import annotations

from ..models.distill import Segment
from ..rules import DistillRules
from .runs import RunView


def stuck_slices(run: RunView, rules: DistillRules) -> list[Segment]:
    out = []
    for kinds, start, signal, _ in _merged(run.stuck):
        resolved_at = _resolution(run, signal)
        stop = resolved_at if resolved_at is not None else run.events[-1].seq
        hints = [h for h in run.hints if start < h["hint_seq"] <= stop]
        if resolved_at is None:
            label, level = "unresolved", None
        elif hints:
            label, level = "resolved_after_hint", max(h["level"] for h in hints)
        else:
            label, level = "resolved_by_self", None
        begin = run.turn_start_before(run.first_index_from(start))
        context_from = max(2, run.turn_start_before(max(2, begin - rules.slice_context_messages)))
        context = run.messages[:2] + run.messages[context_from:begin]
        body = run.messages[begin : run.last_index_upto(stop)]
        if not any(m["role"] == "assistant" for m in body):
            continue
        out.append(Segment(
            id=f"{run.id}/slice-{start}", kind="+".join(kinds), messages=context + body, train_from=len(context),
            provenance=run.provenance, label=label, hint_level=level, start_seq=start, end_seq=stop,
        ))  # fmt: skip
    return out


def _merged(points: list[dict]) -> list[tuple[list[str], int, int, int]]:
    """(kinds, start_seq, first signal_seq, end_seq) of overlapping stuck points merged."""
    out: list[tuple[list[str], int, int, int]] = []
    for p in sorted(points, key=lambda p: p["start_seq"]):
        if out and p["start_seq"] <= out[-1][3]:
            kinds, start, signal, end = out[-1]
            out[-1] = (sorted({*kinds, p["kind"]}), start, min(signal, p["signal_seq"]), max(end, p["end_seq"]))
        else:
            out.append(([p["kind"]], p["start_seq"], p["signal_seq"], p["end_seq"]))
    return out


def _resolution(run: RunView, signal: int) -> int | None:
    """The first event after `signal` that shows the Dev out of it: more tests passing, or a pass."""
    candidates = [p["seq"] for p in run.progress if p["improved"] and p["seq"] > signal]
    candidates += [e.seq for e in run.events if e.passed_verification and e.seq > signal]
    return min(candidates, default=None)
