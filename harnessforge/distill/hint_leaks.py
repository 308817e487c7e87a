"""Hint leakage: a trained turn that shows it saw a hint its own prompt does not hold.

A pre/post-hint pair drops the hint from its prompt (`hint_in_prompt: drop`), and a stuck slice keeps
only a few messages of context, so a Mentor hint can be missing from what a trainer shows the model
while the turn it learns from acts on it. Such a turn is caught by the hint's own words (an
identifier or path only the hint, not the prompt, had) or by an explicit reference to the hint (the
rules' `distill.hint_references`, e.g. "the hint points at ..."), in its text or its reasoning. The
rules' `distill.hint_leaks` then drops the row, keeps it marked, or gives it its hint.
"""

from __future__ import annotations

import json
import re

from ..models.trajectory import Message

_WORD = re.compile(r"[A-Za-z_][\w./-]{2,}")


def hint_leak(turn: Message, hints: list[str], prompt: list[Message], references: list[str]) -> str:
    """Why `turn` shows one of `hints` that `prompt` lacks ('' when it does not): the first reference
    to a hint in its text or reasoning, else the words only the hints had."""
    if not hints:
        return ""
    said = "\n".join(str(turn.get(key) or "") for key in ("content", "reasoning_content"))
    for pattern in references:
        match = re.search(pattern, said, re.IGNORECASE)
        if match:
            return f"refers to the hint: {match.group(0)!r}"
    seen = {word for message in prompt for word in _WORD.findall(json.dumps(message, ensure_ascii=False))}
    hint_only = {word for hint in hints for word in _WORD.findall(hint)} - seen
    used = hint_only & set(_WORD.findall(json.dumps(turn, ensure_ascii=False)))
    return f"uses words only the hint had: {', '.join(sorted(used))}" if used else ""
