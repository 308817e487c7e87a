"""One exported row per distilled record, per trainer: the columns each trainer reads as it is.

- `trl`: prompt/completion (SFT, KTO + `label`) or prompt/chosen/rejected (DPO), tool arguments as
  objects, a `tools` column; reasoning as `reasoning_content`.
- `swift`: `messages` (with a per-message `loss` in SFT), `rejected_messages` (DPO: the whole rejected
  conversation; a `rejected_response` would replace everything after the last user message, and our
  pairs part ways after tool turns), `label` (KTO), `tools` as a JSON string; reasoning as a
  `<think>` prefix of the content (see chat.py).
- `openrlhf`: input/output plus the whole conversation as `messages` (SFT: `--data.multiturn`),
  input/chosen_output/rejected_output (DPO); object arguments, the tool schemas in the system
  message. Not `prompt`, `response` or `chosen`: OpenRLHF's datasets map rows to columns of those
  names, and `datasets` keeps a `Json` column's type for a same-named output, so its rendered
  strings came back as lists of characters.
Every row starts with the same provenance columns (`meta`).
"""

from __future__ import annotations

import json
from typing import Any

from ..harness.tools import TOOLS
from ..models.distill import KTORow, PreferencePair, Segment
from . import chat


def meta(row: Segment | PreferencePair | KTORow) -> dict[str, Any]:
    provenance = row.provenance
    out = {
        "id": row.id,
        "repo": provenance.repo,
        "run_id": provenance.run_id,
        "milestone_id": provenance.milestone_id,
        "model": provenance.model,
        "synthetic": provenance.synthetic,
        "rules_hash": provenance.rules_hash,
        "mode": provenance.mode,
        "harness_profile": provenance.harness_profile,
        "test_visibility": provenance.test_visibility,
        "plan_id": provenance.plan_id,
        "scaffold": provenance.scaffold,  # whose loop and tools; `tools` holds that scaffold's schemas
        "scaffold_version": provenance.scaffold_version,
        # could the Dev model have seen the solution in training (distill/contamination.py)
        "repo_created_at": provenance.repo_created_at,
        "base_commit_date": provenance.base_commit_date,
        "verify_commit_date": provenance.verify_commit_date,
        "model_cutoff": provenance.model_cutoff,
        "contamination_risk": provenance.contamination_risk,
    }
    if isinstance(row, Segment):  # `resolution`, not `label`: KTO's `label` is a boolean column
        out |= {"kind": row.kind, "resolution": row.label, "hint_level": row.hint_level}
        out |= {"depends_on_hint": row.depends_on_hint}
    if isinstance(row, PreferencePair):
        out |= {"pair_type": row.pair_type, "depends_on_hint": row.depends_on_hint}
    return out


def sft_trl(segment: Segment, tools: list[dict] = TOOLS) -> dict[str, Any]:
    messages = chat.trl(segment.messages)
    return {"prompt": messages[: segment.train_from], "completion": messages[segment.train_from :], "tools": tools}


def sft_swift(segment: Segment, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {"messages": chat.swift(segment.messages, segment.train_from), "tools": json.dumps(tools)}


def sft_openrlhf(segment: Segment, tools: list[dict] = TOOLS) -> dict[str, Any]:
    messages = chat.openrlhf(segment.messages, tools)
    has_system = segment.messages and segment.messages[0]["role"] == "system"
    cut = segment.train_from + (0 if has_system else 1)  # the system message added for the tools
    return {"input": messages[:cut], "output": messages[cut:], "messages": messages}


def dpo_trl(pair: PreferencePair, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {
        "prompt": chat.trl(pair.prompt),
        "chosen": chat.trl(pair.chosen),
        "rejected": chat.trl(pair.rejected),
        "tools": tools,
    }


def dpo_swift(pair: PreferencePair, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {
        "messages": chat.swift(pair.prompt + pair.chosen),
        "rejected_messages": chat.swift(pair.prompt + pair.rejected),
        "tools": json.dumps(tools),
    }


def dpo_openrlhf(pair: PreferencePair, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {
        "input": chat.openrlhf(pair.prompt, tools),
        "chosen_output": chat.trl(pair.chosen),
        "rejected_output": chat.trl(pair.rejected),
    }


def kto_trl(row: KTORow, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {"prompt": chat.trl(row.prompt), "completion": chat.trl(row.completion), "label": row.label, "tools": tools}


def kto_swift(row: KTORow, tools: list[dict] = TOOLS) -> dict[str, Any]:
    return {"messages": chat.swift(row.prompt + row.completion), "label": row.label, "tools": json.dumps(tools)}


# Per dataset, the row of each dialect it is written in.
SFT_DIALECTS = {"trl": sft_trl, "swift": sft_swift, "openrlhf": sft_openrlhf}
DPO_DIALECTS = {"trl": dpo_trl, "swift": dpo_swift, "openrlhf": dpo_openrlhf}
KTO_DIALECTS = {"trl": kto_trl, "swift": kto_swift}
