"""Preference data: DPO pairs cut at the divergence turn, and KTO rows for unpaired turns.

Each side of a pair is one assistant message (text and tool calls), so a trainer's loss never
covers tool output. Three kinds of pair:

- `pre_vs_post_hint`: at a stuck state, the turn that kept the Dev stuck (rejected) against its
  first turn after a hint that worked, one that changed direction or raised passing tests
  (chosen). The prompt is the history before the rejected turn. With `hint_in_prompt: drop` the
  hint is not in it; a chosen turn that shows the hint anyway (`hint_leaks`: its words, or "the
  hint ...") is dropped, kept marked `depends_on_hint`, or given the hint, per `distill.hint_leaks`.
  With `keep`, the hint ends the prompt.
- `fail_vs_pass`: two runs of one milestone (other models or settings), one passed and one did not:
  their shared history up to the first assistant message where they differ.
- `low_vs_high_hint`: two runs of one milestone with the same outcome, where one needed hints
  `distill.hint_level_pairs.min_level_gap` levels higher (its summary's highest level): the other is
  chosen, cut the same way. The shared prompt holds only what both saw, so no hint leaks into it.

KTO: a turn inside a stuck stretch is `label: false`; a turn whose test run raised the passing
count is `label: true`.

Every prompt is the conversation as the model saw it at that turn (`RunView.at`): a later compaction's stubs or
summary are not in it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import product

from ..models.distill import KTORow, PreferencePair
from ..models.trajectory import Message
from ..rules import DistillRules, HintLevelPairRules
from .hint_leaks import hint_leak
from .runs import RunView


def hint_pairs(run: RunView, rules: DistillRules) -> list[PreferencePair]:
    pairs = []
    for hint in run.hints:
        if not (hint.direction_change or hint.tests_improved):
            continue  # the hint did not help: its aftermath is not a better choice
        turns = [event for event in run.events if event.role == "dev" and event.action.type == "message"]
        before = [event for event in turns if event.seq < hint.hint_seq]
        after = [event for event in turns if event.seq > hint.hint_seq]
        if not before or not after:
            continue
        view, later = run.at(before[-1].seq), run.at(after[0].seq)  # each turn as the model saw it
        rejected_at, chosen_at = view.assistant_at(before[-1].seq), later.assistant_at(after[0].seq)
        if rejected_at is None or chosen_at is None:
            continue
        rejected, chosen = view.messages[rejected_at], later.messages[chosen_at]
        if _action(rejected) == _action(chosen):
            continue
        prompt = view.messages[:rejected_at]
        hint_text = run.events[hint.hint_seq].action.content
        keep = rules.hint_in_prompt == "keep"
        leak = "" if keep else hint_leak(chosen, [hint_text], prompt, rules.hint_references)
        if leak and rules.hint_leaks == "drop":
            continue
        keep = keep or bool(leak and rules.hint_leaks == "give_hint")
        depends = bool(leak) and not keep
        evidence = {
            "hint_level": hint.level,
            "rule": hint.rule,
            "direction_change": hint.direction_change,
            "tests_improved": hint.tests_improved,
            **({"hint_leak": leak} if leak else {}),
        }
        pairs.append(
            PreferencePair(
                id=f"{run.id}/hint-{hint.hint_seq}",
                pair_type="pre_vs_post_hint",
                prompt=prompt + ([{"role": "user", "content": hint_text}] if keep else []),
                chosen=[chosen],
                rejected=[rejected],
                divergence_turn=before[-1].turn_id,
                hint_in_prompt=keep,
                depends_on_hint=depends,
                provenance=run.provenance,
                rejected_provenance=run.provenance,
                evidence=evidence,
            )
        )
    return pairs


def outcome_pairs(runs: list[RunView]) -> list[PreferencePair]:
    """Passing against non-passing runs of the same milestone, at their first differing turn."""
    pairs = []
    for group in _by_milestone(runs):
        passed = [run for run in group if run.summary.status == "PASS"]
        failed = [run for run in group if run.summary.status != "PASS"]
        pairs += [_cross_run_pair("fail_vs_pass", good, bad) for good, bad in product(passed, failed)]
    return [pair for pair in pairs if pair]


def hint_level_pairs(runs: list[RunView], rules: HintLevelPairRules) -> list[PreferencePair]:
    """Runs of the same milestone with the same outcome (both passed, or neither did), one of them
    needing hints at least `min_level_gap` levels higher: the other is chosen, at their first
    differing turn."""
    if not rules.enabled:
        return []
    pairs = []
    for group in _by_milestone(runs):
        for low, high in product(group, group):
            if (low.summary.status == "PASS") != (high.summary.status == "PASS"):
                continue  # a pass against a non-pass is `fail_vs_pass`
            if rules.only_passing and low.summary.status != "PASS":
                continue
            if high.summary.max_hint_level - low.summary.max_hint_level >= rules.min_level_gap:
                pairs.append(_cross_run_pair("low_vs_high_hint", low, high))
    return [pair for pair in pairs if pair]


def _by_milestone(runs: list[RunView]) -> list[list[RunView]]:
    """Runs grouped by milestone, without those whose sandbox was lost (ENV_ERROR: no verdict on the Dev)."""
    groups: dict[tuple[str, str], list[RunView]] = defaultdict(list)
    for run in runs:
        if run.summary.status != "ENV_ERROR":
            groups[(run.provenance.repo, run.provenance.milestone_id)].append(run)
    return list(groups.values())


def _cross_run_pair(pair_type: str, good: RunView, bad: RunView) -> PreferencePair | None:
    """`good`'s turn against `bad`'s at the first index where their conversations differ (None when
    they differ before an assistant turn: e.g. a hint only one of them got)."""
    index = _divergence(good.whole.messages, bad.whole.messages)
    if index is None:
        return None
    good_seq, bad_seq = good.whole.conversation.origins[index], bad.whole.conversation.origins[index]
    good_view, bad_view = good.at(good_seq), bad.at(bad_seq)  # the prompt each model saw there
    good_at, bad_at = good_view.assistant_at(good_seq), bad_view.assistant_at(bad_seq)
    if good_at is None or bad_at is None or good_view.messages[:good_at] != bad_view.messages[:bad_at]:
        return None  # compacted differently: no prompt both saw
    turn = next(event.turn_id for event in good.events if event.seq == good_seq)
    evidence = {
        "chosen_status": good.summary.status,
        "rejected_status": bad.summary.status,
        "chosen_model": good.provenance.model,
        "rejected_model": bad.provenance.model,
        "chosen_max_hint_level": good.summary.max_hint_level,
        "rejected_max_hint_level": bad.summary.max_hint_level,
    }
    return PreferencePair(
        id=f"{good.id}~{bad.provenance.run_id}",
        pair_type=pair_type,
        prompt=good_view.messages[:good_at],
        chosen=[good_view.messages[good_at]],
        rejected=[bad_view.messages[bad_at]],
        divergence_turn=turn,
        provenance=good.provenance,
        rejected_provenance=bad.provenance,
        evidence=evidence,
    )


def kto_rows(run: RunView) -> list[KTORow]:
    loop_seqs = {(point.start_seq, point.end_seq) for point in run.stuck}
    raised = {point.seq for point in run.progress if point.improved}
    rows = []
    turns = [event for event in run.events if event.role == "dev" and event.action.type == "message"]
    for index, turn in enumerate(turns):
        end = turns[index + 1].seq if index + 1 < len(turns) else run.events[-1].seq + 1
        tools = [
            event.seq for event in run.events if event.role == "dev" and event.call_id and turn.seq < event.seq < end
        ]
        view = run.at(turn.seq)
        at = view.assistant_at(turn.seq)
        if at is None or not tools:
            continue
        if any(seq in raised for seq in tools):
            label, reason = True, "its test run raised the passing count"
        elif any(low <= seq <= high for seq in tools for low, high in loop_seqs):
            label, reason = False, "inside a stuck stretch"
        else:
            continue
        rows.append(
            KTORow(
                id=f"{run.id}/turn-{turn.turn_id}",
                prompt=view.messages[:at],
                completion=[view.messages[at]],
                label=label,
                reason=reason,
                provenance=run.provenance,
            )
        )
    return rows


def _action(message: Message) -> str:
    calls = [(call["function"]["name"], call["function"]["arguments"]) for call in message.get("tool_calls") or []]
    return json.dumps([message.get("content") or "", calls])


def _divergence(first: list[Message], second: list[Message]) -> int | None:
    """The first index where the two conversations differ, if both have an assistant message there."""
    for index, (one, other) in enumerate(zip(first, second, strict=False)):
        if one != other:
            return index if one["role"] == other["role"] == "assistant" else None
    return None
