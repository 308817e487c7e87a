"""Exports: distilled rows in the formats trainers and harnesses read, with a dataset card.

`export(store, formats, out)` reads `distilled/` (run `distill` first) and writes, per format,
JSON lines and Parquet (through `datasets`, nested values as `Json` features, so
`datasets.load_dataset("parquet", ...)` gives back exactly the rows):

- `sft`: SFT segments, stuck slices and chain rows; `trl` (prompt/completion, tool arguments as dicts, a
  `tools` column), `swift` (`messages` with per-message `loss`, JSON-string arguments, `tools` as a
  JSON string), `openrlhf` (prompt/response, tool schemas in the system message).
- `dpo`: pairs; `trl` (prompt/chosen/rejected + tools), `swift` (`messages` = prompt + chosen,
  `rejected_response`), `openrlhf` (prompt/chosen/rejected, tools in the system message).
- `kto`: `trl` (prompt/completion/label + tools), `swift` (`messages` + `label`).
- `atif`: the runs' ATIF v1.7 trajectories.
- `swebench`: SWE-bench-style `instances.jsonl` of the verified tasks.
- `harbor`: a Harbor task folder per verified task (`tasks/<id>/`: instruction, task.toml, environment
  with a Dockerfile and a bundle of the history up to the base commit, tests, solution).

Rows of synthetic runs (the oracle's) are refused unless `allow_synthetic`; a run the Reviewer
rejected feeds only the datasets the rules' `distill.gates` table allows for each of its discard
reasons (cheating: nothing; an agent loop: its KTO negatives, stuck slices and the rejected side of
pairs). Both are counted in the card, the discarded rows per dataset and per reason.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analytics.database import connect_read_only
from ..analytics.rows import MemorisationRateRow, has_tables, read_rows
from ..distill.outputs import (
    CHAINS,
    DPO_PAIRS,
    KTO,
    REVIEWS,
    SFT,
    STUCK_SLICES,
    TASK_CARDS,
    VERIFIED_TASKS,
    read_distilled,
)
from ..errors import ArtifactError, ConfigError
from ..harness.tools import TOOLS
from ..models.distill import KTORow, PreferencePair, Review, RunProvenance, Segment, TaskCard
from ..rules import Rules, load_rules
from ..store import Store, atomic_file, atomic_write
from . import chat
from .card import dataset_card
from .harbor import harbor_tasks
from .swebench import instance

FORMATS = ("sft", "dpo", "kto", "atif", "swebench", "harbor")
# What `verify-tasks` proved of a card: a card still equal in these reproduces as it did.
REPRODUCED = {
    "base_commit",
    "verify_commit",
    "dockerfile",
    "dependency_files",
    "test_cmd",
    "fail_to_pass",
    "pass_to_pass",
}


@dataclass
class ExportReport:
    out: Path
    files: list[Path] = field(default_factory=list)
    rows: Counter = field(default_factory=Counter)  # per output file stem
    refused_synthetic: Counter = field(default_factory=Counter)  # per kind of row
    discarded: Counter = field(default_factory=Counter)  # per kind of row: left out by the rules' distill.gates
    discarded_for: Counter = field(default_factory=Counter)  # the same rows, per discard reason of their run
    verified: bool = True  # `verify-tasks` has run: Harbor tasks and SWE-bench instances come from its output
    unverified_cards: list[str] = field(default_factory=list)  # task ids left out: not (or no longer) verified


def export(
    store: Store, formats: list[str], out: Path, allow_synthetic: bool = False, rules: Rules | None = None
) -> ExportReport:
    unknown = [name for name in formats if name not in (*FORMATS, "all")]
    if unknown:
        raise ConfigError(f"unknown export format(s) {', '.join(unknown)}; use {', '.join(FORMATS)} or all")
    named = "all" not in formats  # harbor and swebench asked for by name need verified tasks
    formats = list(FORMATS) if "all" in formats else formats
    source = store.distilled_manifest()
    if not source.exists():
        raise ArtifactError(f"{source.parent}: nothing distilled yet; run `harnessforge distill` first")
    try:
        manifest = json.loads(source.read_bytes())
    except ValueError as e:
        raise ArtifactError(f"{source}: not valid JSON ({e}); re-run `harnessforge distill`") from None
    reviews = read_distilled(store, REVIEWS)
    gates = (rules or load_rules()).distill
    reasons = {(review.repo, review.run_id, review.milestone_id): review.discard_reasons for review in reviews}
    report = ExportReport(out)

    def keep(kind: str, provenance: RunProvenance, dataset: str | None = None) -> bool:
        """Synthetic rows only when allowed; a rejected run's rows only where `distill.gates` lets its reasons."""
        if provenance.synthetic and not allow_synthetic:
            report.refused_synthetic[kind] += 1
            return False
        why = reasons.get((provenance.repo, provenance.run_id, provenance.milestone_id), [])
        if not gates.allows(why, dataset or kind):
            report.discarded[kind] += 1
            report.discarded_for.update(why)
            return False
        return True

    def keep_pair(pair: PreferencePair) -> bool:
        return keep("dpo", pair.provenance) and keep("dpo", pair.rejected_provenance, "dpo_rejected")

    out.mkdir(parents=True, exist_ok=True)
    if "sft" in formats:
        for output in (SFT, STUCK_SLICES, CHAINS):  # a chain goes only if each of its milestone runs may
            segments = [
                segment
                for segment in read_distilled(store, output)
                if all(keep(output.stem, run) for run in getattr(segment, "runs", [segment.provenance]))
            ]
            _write(report, out / output.stem, "trl", [_meta(segment) | _sft_trl(segment) for segment in segments])
            _write(report, out / output.stem, "swift", [_meta(segment) | _sft_swift(segment) for segment in segments])
            _write(
                report, out / output.stem, "openrlhf", [_meta(segment) | _sft_openrlhf(segment) for segment in segments]
            )
    if "dpo" in formats:
        pairs = [pair for pair in read_distilled(store, DPO_PAIRS) if keep_pair(pair)]
        _write(report, out / "dpo", "trl", [_meta(pair) | _dpo_trl(pair) for pair in pairs])
        _write(report, out / "dpo", "swift", [_meta(pair) | _dpo_swift(pair) for pair in pairs])
        _write(report, out / "dpo", "openrlhf", [_meta(pair) | _dpo_openrlhf(pair) for pair in pairs])
    if "kto" in formats:
        rows = [
            row
            for row in read_distilled(store, KTO)
            if keep("kto", row.provenance, "kto" if row.label else "kto_negatives")
        ]
        _write(report, out / "kto", "trl", [_meta(row) | _kto_trl(row) for row in rows])
        _write(report, out / "kto", "swift", [_meta(row) | _kto_swift(row) for row in rows])
    if "atif" in formats:
        _atif(store, report, reviews, keep)
    tasks = [
        card
        for card in verified_cards(store, report, formats, named)
        if allow_synthetic or not card.synthetic_reference
    ]
    if "harbor" in formats and report.verified:
        report.files += harbor_tasks(store, tasks, out, rules or load_rules())
        report.rows["harbor_tasks"] = len(tasks)
    if "swebench" in formats and report.verified:
        found = [instance(store, card.repo, card.milestone_id) for card in tasks]
        path = out / "swebench" / "instances.jsonl"
        atomic_write(path, b"".join(json.dumps(instance).encode() + b"\n" for instance in found))
        report.files.append(path)
        report.rows["instances"] = len(found)
    card = dataset_card(report, reviews, manifest, allow_synthetic, _memorisation_rates(store))
    atomic_write(out / "README.md", card.encode())
    report.files.append(out / "README.md")
    return report


def verified_cards(store: Store, report: ExportReport, formats: list[str], named: bool) -> list[TaskCard]:
    """The task cards `verify-tasks` reproduced that are still current: the card of the latest `distill`
    with the same environment, tests and commits (a card re-cut since, or dropped by new rules, is left
    out until verified again). Asking for `harbor` or `swebench` by name before any `verify-tasks` is an
    error; `all` then writes the other formats and the card says why these are missing."""
    if not {"harbor", "swebench"} & set(formats):
        return []
    if not store.distilled_file(VERIFIED_TASKS.stem).exists():
        report.verified = False
        if named:
            raise ArtifactError(
                f"{store.distilled_file(VERIFIED_TASKS.stem)}: no verified tasks yet; Harbor tasks and SWE-bench "
                "instances come from them: run `harnessforge verify-tasks` first"
            )
        return []
    current = {card.task_id: card for card in read_distilled(store, TASK_CARDS)}
    verified = []
    for card in read_distilled(store, VERIFIED_TASKS):
        now = current.pop(card.task_id, None)
        if now is not None and now.model_dump(include=REPRODUCED) == card.model_dump(include=REPRODUCED):
            verified.append(now)
        else:
            report.unverified_cards.append(card.task_id)
    report.unverified_cards += sorted(current)
    return verified


def _memorisation_rates(store: Store) -> list[MemorisationRateRow]:
    """The memorisation probe's rates for the dataset card (none without analytics or probe runs)."""
    if not store.analytics_database().exists():
        return []
    with connect_read_only(store) as con:
        if not has_tables(con, MemorisationRateRow.table):
            return []
        return read_rows(con, MemorisationRateRow, order_by=("repo", "model"))


# ---- rows per trainer -------------------------------------------------------------------------
def _meta(row: Segment | PreferencePair | KTORow) -> dict[str, Any]:
    provenance = row.provenance
    meta = {
        "id": row.id,
        "repo": provenance.repo,
        "run_id": provenance.run_id,
        "milestone_id": provenance.milestone_id,
        "model": provenance.model,
        "synthetic": provenance.synthetic,
        "rules_hash": provenance.rules_hash,
        "mode": provenance.mode,
        "harness_profile": provenance.harness_profile,
    }
    if isinstance(row, Segment):
        meta |= {"kind": row.kind, "label": row.label, "hint_level": row.hint_level}
    if isinstance(row, PreferencePair):
        meta |= {"pair_type": row.pair_type, "depends_on_hint": row.depends_on_hint}
    return meta


def _sft_trl(segment: Segment) -> dict[str, Any]:
    messages = chat.trl(segment.messages)
    return {"prompt": messages[: segment.train_from], "completion": messages[segment.train_from :], "tools": TOOLS}


def _sft_swift(segment: Segment) -> dict[str, Any]:
    return {"messages": chat.swift_loss(segment.messages, segment.train_from), "tools": json.dumps(TOOLS)}


def _sft_openrlhf(segment: Segment) -> dict[str, Any]:
    messages = chat.tools_in_system(segment.messages, TOOLS)
    has_system = segment.messages and segment.messages[0]["role"] == "system"
    cut = segment.train_from + (0 if has_system else 1)
    return {"prompt": messages[:cut], "response": messages[cut:]}


def _dpo_trl(pair: PreferencePair) -> dict[str, Any]:
    return {
        "prompt": chat.trl(pair.prompt),
        "chosen": chat.trl(pair.chosen),
        "rejected": chat.trl(pair.rejected),
        "tools": TOOLS,
    }


def _dpo_swift(pair: PreferencePair) -> dict[str, Any]:
    return {
        "messages": chat.json_args(pair.prompt + pair.chosen),
        "rejected_response": chat.json_args(pair.rejected),
        "tools": json.dumps(TOOLS),
    }


def _dpo_openrlhf(pair: PreferencePair) -> dict[str, Any]:
    return {
        "prompt": chat.tools_in_system(pair.prompt, TOOLS),
        "chosen": chat.json_args(pair.chosen),
        "rejected": chat.json_args(pair.rejected),
    }


def _kto_trl(row: KTORow) -> dict[str, Any]:
    return {"prompt": chat.trl(row.prompt), "completion": chat.trl(row.completion), "label": row.label, "tools": TOOLS}


def _kto_swift(row: KTORow) -> dict[str, Any]:
    return {"messages": chat.json_args(row.prompt + row.completion), "label": row.label, "tools": json.dumps(TOOLS)}


# ---- files ------------------------------------------------------------------------------------
def _write(report: ExportReport, directory: Path, name: str, rows: list[dict[str, Any]]) -> None:
    """`<name>.jsonl` and `<name>.parquet` (nested values as datasets `Json` features)."""
    import datasets

    datasets.disable_progress_bars()  # stderr is for warnings and errors, one line each
    directory.mkdir(parents=True, exist_ok=True)
    jsonl = directory / f"{name}.jsonl"
    atomic_write(jsonl, b"".join(json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows))
    report.files.append(jsonl)
    report.rows[f"{directory.name}/{name}"] = len(rows)
    if rows:
        sample = {
            column: next((row[column] for row in rows if row.get(column) is not None), None) for column in rows[0]
        }
        features = datasets.Features({column: _feature(value) for column, value in sample.items()})
        parquet = directory / f"{name}.parquet"
        with atomic_file(parquet) as partial:  # never half a Parquet file under the dataset's name
            datasets.Dataset.from_list(rows, features=features).to_parquet(str(partial))
        report.files.append(parquet)


def _feature(value: Any):
    from datasets import Json, List, Value

    if isinstance(value, list):
        return List(Json())
    if isinstance(value, dict):
        return Json()
    if isinstance(value, bool):
        return Value("bool")
    if isinstance(value, int):
        return Value("int64")
    return Value("string")


def _atif(store: Store, report: ExportReport, reviews: list[Review], keep) -> None:
    """Copy each kept run's ATIF trajectory to atif/<repo>/<run_id>/<milestone>.json."""
    copied = 0
    for review in reviews:
        provenance = RunProvenance(
            repo=review.repo,
            run_id=review.run_id,
            milestone_id=review.milestone_id,
            rules_hash=review.rules_hash,
            synthetic=review.synthetic,
            mode=review.mode,
            harness_profile=review.harness_profile,
        )
        source = store.milestone_run(review.repo, review.run_id, review.milestone_id).atif
        if not source.exists() or not keep("atif", provenance):
            continue
        destination = report.out / "atif" / review.repo / review.run_id / f"{review.milestone_id}.json"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
        report.files.append(destination)
        copied += 1
    report.rows["atif"] = copied
