"""One event of the trajectory viewer: its blocks (text, tool calls, arguments, the observation folded
when long, a hint's facts), its badges and its timing line, as the page template reads them."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..analytics.rows import HintResponseRow
from ..models.trajectory import Event, MentorDecision

FOLD_LINES = 20  # observations (and arguments) longer than this are folded into a <details>
FOLD_CHARS = 2000

Block = dict[str, Any]  # one block of an event, as the template reads it (its `type` says which)


def blocks(
    event: Event,
    by_call: dict[str, int],
    decision: MentorDecision | None,
    response: HintResponseRow | None,
    full_observation: str | None = None,
) -> list[Block]:
    """What an event shows: a hint with its facts, a Dev message with its calls, or the action's text;
    then its remaining arguments and its observation (in full when the outputs sidecar has it)."""
    action = event.action
    arguments = dict(action.args)
    shown: list[Block] = []
    if action.type == "hint":
        text = event.mentor_hint if event.mentor_hint is not None else action.content
        shown.append(_text(text, "hinttext"))
        if arguments.get("rewritten_by"):  # the model Mentor's wording, as the Dev read it
            shown.append(_text(action.content, "hinttext"))
        arguments.pop("rule", None)
        if facts := _decision_facts(decision, response):
            shown.append({"type": "facts", "facts": facts})
    elif action.type == "message":
        if isinstance(reasoning := arguments.pop("reasoning", None), str) and reasoning:
            shown.append(_text(reasoning, "reasoning"))
        if action.content:
            shown.append(_text(action.content))
        calls = _calls(arguments.pop("tool_calls", None) or [], by_call)
        if calls:
            shown.append({"type": "calls", "calls": calls})
    elif action.content:
        shown.append(_text(action.content, "task" if action.type == "milestone_start" else ""))
    if arguments:
        shown.append(_pre(_pretty(arguments), "arguments", "args"))
    if full_observation is not None:
        note = f"in full: {len(full_observation):,} chars; the Dev saw {len(event.observation):,} of them (cut)"
        shown.append(_pre(full_observation, "observation", "obs", note))
    elif event.observation or event.call_id is not None:
        cut = event.observation_chars - len(event.observation)
        note = f"truncated: {event.observation_chars:,} chars in full, {cut:,} not recorded" if cut > 0 else ""
        shown.append(_pre(event.observation, "observation", "obs", note))
    return shown


def badges(event: Event) -> list[tuple[str, str, str]]:
    """(class, text, title) of the event's badges: hint level, test counts or failure, files touched."""
    found: list[tuple[str, str, str]] = []
    if event.action.type == "hint":
        rule = event.action.args.get("rule")
        found.append(("hint", f"hint L{event.hint_level}" + (f" · rule {rule}" if rule else ""), "Mentor hint release"))
    if event.test_status is not None:
        tests = event.test_status
        found.append(
            (
                "good" if tests.failed == 0 else "bad",
                f"tests {tests.passed} passed · {tests.failed} failed / {tests.total}",
                f"error signature {event.error_signature}" if event.error_signature else "",
            )
        )
    elif not event.ok:
        found.append(("bad", "failed", ""))
    if event.files_touched:
        found.append(("", "touched " + ", ".join(event.files_touched), ""))
    return found


def when(event: Event, start: datetime) -> str:
    """Model, tokens, cost, latency and the time since the run's first event."""
    parts = [f"+{(event.ts - start).total_seconds():.1f}s"]
    if event.usage is not None:
        usage = event.usage
        parts.insert(0, f"{usage.input:,} in / {usage.cached:,} cached / {usage.output:,} out tok")
    if event.cost_usd:
        parts.insert(-1, f"${event.cost_usd:.4f}")
    if event.latency_s:
        parts.insert(-1, f"{event.latency_s:.1f}s latency")
    if event.model:
        parts.insert(0, event.model)
    return " · ".join(parts)


def _calls(calls: list[Any], by_call: dict[str, int]) -> list[dict[str, Any]]:
    """A Dev message's tool calls, each linked to the event that ran it (its arguments shown there)."""
    found = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        seq = by_call.get(str(call.get("id")))
        arguments = call.get("args") if seq is None or call.get("error") else None
        found.append(
            {
                "name": str(call.get("name", "?")),
                "seq": seq,
                "error": call.get("error"),
                "args": _pretty(arguments) if arguments else "",
            }
        )
    return found


def _pretty(data: Any) -> str:
    """Indented JSON; a short flat object stays on one line (most tool calls: `{"path": "src/app.py"}`)."""
    flat = json.dumps(data, ensure_ascii=False, default=str)
    nested = isinstance(data, dict) and any(isinstance(value, dict | list) for value in data.values())
    if len(flat) <= 100 and not nested:
        return flat
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _pre(text: str, label: str, cls: str, note: str = "") -> Block:
    lines = text.count("\n") + 1
    fold = lines > FOLD_LINES or len(text) > FOLD_CHARS
    preview = next((line.strip() for line in text.splitlines() if line.strip()), "")[:100]
    return {
        "type": "pre",
        "text": text,
        "label": label,
        "cls": cls,
        "fold": fold,
        "lines": lines,
        "chars": f"{len(text):,}",
        "preview": preview,
        "note": note,
    }


def _text(text: str, cls: str = "") -> Block:
    return {"type": "text", "text": text, "cls": cls}


def _decision_facts(decision: MentorDecision | None, response: HintResponseRow | None) -> list[tuple[str, str]]:
    """What the Mentor recorded when it released the hint, and what the analytics saw after it."""
    facts: list[tuple[str, str]] = []
    if decision is not None:
        snapshot = decision.snapshot
        state = ", ".join(
            f"{name.replace('_', ' ')} {snapshot[name]}"
            for name in ("test_runs", "edit_count", "best_passed")
            if name in snapshot
        )
        facts.append(("released", f"turn {decision.turn_id}, level {decision.level}, rule {decision.rule}"))
        if state:
            facts.append(("Dev state", state))
        if snapshot.get("evidence"):
            facts.append(("evidence", json.dumps(snapshot["evidence"], ensure_ascii=False, default=str)))
        if decision.response:
            seen = decision.response
            new = ", ".join(seen.get("new_files") or []) or "none"
            facts.append(
                (
                    "Mentor saw",
                    f"direction changed: {'yes' if seen.get('direction_changed') else 'no'} (new files: {new}); "
                    f"tests improved: {'yes' if seen.get('tests_improved') else 'no'}",
                )
            )
    if response is not None:
        new = ", ".join(response.new_targets) or "none"
        after = "" if response.passed_after is None else f" → {response.passed_after}"
        facts.append(
            (
                "analytics",
                f"direction change: {'yes' if response.direction_change else 'no'} (new targets: {new}); "
                f"passed {response.passed_before}{after}",
            )
        )
    return facts
