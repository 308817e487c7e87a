"""Preference data: DPO pairs cut at the divergence turn, and KTO rows for unpaired turns.

Each side of a pair is one assistant message (text and tool calls), so a trainer's loss never
covers tool output. Two kinds of pair:

- `pre_vs_post_hint`: at a stuck state, the turn that kept the Dev stuck (rejected) against its
  first turn after a hint that worked, one that changed direction or raised passing tests
  (chosen). The prompt is the history before the rejected turn. With `hint_in_prompt: drop` the
  hint is not in it; a chosen turn that uses words only the hint contained is then
  `depends_on_hint` (kept marked, or dropped, per the rules). With `keep`, the hint ends the prompt.
- `fail_vs_pass`: two runs of one milestone (other models or settings), one passed and one did not:
  their shared history up to the first assistant message where they differ.

KTO: a turn inside a stuck stretch is `label: false`; a turn whose test run raised the passing
count is `label: true`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from itertools import product

from ..models.distill import KTORow, PreferencePair
from ..models.trajectory import Message
from ..rules import DistillRules
from .runs import RunView

_WORD = re.compile(r"[A-Za-z_][\w./-]{2,}")


def hint_pairs(run: RunView, rules: DistillRules) -> list[PreferencePair]:
    out = []
    for h in run.hints:
        if not (h["direction_change"] or h["tests_improved"]):
            continue  # the hint did not help: its aftermath is not a better choice
        before = [e for e in run.events if e.role == "dev" and e.action.type == "message" and e.seq < h["hint_seq"]]
        after = [e for e in run.events if e.role == "dev" and e.action.type == "message" and e.seq > h["hint_seq"]]
        if not before or not after:
            continue
        r_at, c_at = run.assistant_at(before[-1].seq), run.assistant_at(after[0].seq)
        if r_at is None or c_at is None:
            continue
        rejected, chosen = run.messages[r_at], run.messages[c_at]
        if _action(rejected) == _action(chosen):
            continue
        prompt = run.messages[:r_at]
        hint_text = run.events[h["hint_seq"]].action.content
        keep = rules.hint_in_prompt == "keep"
        depends = not keep and _uses_hint_only_words(chosen, hint_text, prompt)
        if depends and rules.hint_dependent_pairs == "drop":
            continue
        out.append(PreferencePair(
            id=f"{run.id}/hint-{h['hint_seq']}", pair_type="pre_vs_post_hint",
            prompt=prompt + ([{"role": "user", "content": hint_text}] if keep else []),
            chosen=[chosen], rejected=[rejected], divergence_turn=before[-1].turn_id, hint_in_prompt=keep,
            depends_on_hint=depends, provenance=run.provenance, rejected_provenance=run.provenance,
            evidence={"hint_level": h["level"], "rule": h["rule"], "direction_change": h["direction_change"],
                      "tests_improved": h["tests_improved"]},
        ))  # fmt: skip
    return out


def outcome_pairs(runs: list[RunView]) -> list[PreferencePair]:
    """Passing against non-passing runs of the same milestone, at their first differing turn."""
    by_milestone: dict[tuple[str, str], list[RunView]] = defaultdict(list)
    for r in runs:
        by_milestone[(r.provenance.repo, r.provenance.milestone_id)].append(r)
    out = []
    for group in by_milestone.values():
        passed = [r for r in group if r.summary["status"] == "PASS"]
        failed = [r for r in group if r.summary["status"] not in ("PASS", "ENV_ERROR")]  # a lost sandbox is no verdict
        for good, bad in product(passed, failed):
            i = _divergence(good.messages, bad.messages)
            if i is None:
                continue
            turn = next(e.turn_id for e in good.events if e.seq == good.conversation.origins[i])
            out.append(PreferencePair(
                id=f"{good.id}~{bad.provenance.run_id}", pair_type="fail_vs_pass", prompt=good.messages[:i],
                chosen=[good.messages[i]], rejected=[bad.messages[i]], divergence_turn=turn,
                provenance=good.provenance, rejected_provenance=bad.provenance,
                evidence={"chosen_status": "PASS", "rejected_status": bad.summary["status"],
                          "chosen_model": good.provenance.model, "rejected_model": bad.provenance.model},
            ))  # fmt: skip
    return out


def kto_rows(run: RunView) -> list[KTORow]:
    loop_seqs = {(p["start_seq"], p["end_seq"]) for p in run.stuck}
    raised = {p["seq"] for p in run.progress if p["improved"]}
    out = []
    turns = [e for e in run.events if e.role == "dev" and e.action.type == "message"]
    for i, e in enumerate(turns):
        end = turns[i + 1].seq if i + 1 < len(turns) else run.events[-1].seq + 1
        tools = [t.seq for t in run.events if t.role == "dev" and t.call_id and e.seq < t.seq < end]
        at = run.assistant_at(e.seq)
        if at is None or not tools:
            continue
        if any(s in raised for s in tools):
            label, reason = True, "its test run raised the passing count"
        elif any(lo <= s <= hi for s in tools for lo, hi in loop_seqs):
            label, reason = False, "inside a stuck stretch"
        else:
            continue
        out.append(KTORow(id=f"{run.id}/turn-{e.turn_id}", prompt=run.messages[:at], completion=[run.messages[at]],
                          label=label, reason=reason, provenance=run.provenance))  # fmt: skip
    return out


def _action(message: Message) -> str:
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return json.dumps([message.get("content") or "", calls])


def _divergence(a: list[Message], b: list[Message]) -> int | None:
    """The first index where `a` and `b` differ, if both have an assistant message there."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i if x["role"] == y["role"] == "assistant" else None
    return None


def _uses_hint_only_words(chosen: Message, hint: str, prompt: list[Message]) -> bool:
    """Does the chosen turn use a word (identifier, path) that only the hint, not the prompt, had?"""
    seen = {w for m in prompt for w in _WORD.findall(json.dumps(m))}
    hint_only = set(_WORD.findall(hint)) - seen
    return bool(hint_only & set(_WORD.findall(json.dumps(chosen))))
