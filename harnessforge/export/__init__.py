"""Exports: distilled rows in the formats trainers and harnesses read, with a dataset card.

`export(store, formats, out)` reads `distilled/` (run `distill` first) and writes, per format,
JSON lines and Parquet (through `datasets`, nested values as `Json` features, so
`datasets.load_dataset("parquet", ...)` gives back exactly the rows):

- `sft`: SFT segments and stuck slices; `trl` (prompt/completion, tool arguments as dicts, a
  `tools` column), `swift` (`messages` with per-message `loss`, JSON-string arguments, `tools` as a
  JSON string), `openrlhf` (prompt/response, tool schemas in the system message).
- `dpo`: pairs; `trl` (prompt/chosen/rejected + tools), `swift` (`messages` = prompt + chosen,
  `rejected_response`), `openrlhf` (prompt/chosen/rejected, tools in the system message).
- `kto`: `trl` (prompt/completion/label + tools), `swift` (`messages` + `label`).
- `atif`: the runs' ATIF v1.7 trajectories.
- `swebench`: SWE-bench-style `instances.jsonl` of the validated milestones.
- `harbor`: a Harbor task folder per task card (`tasks/<id>/`: instruction, task.toml, environment
  with a Dockerfile and a bundle of the history up to the base commit, tests, solution).

Rows of synthetic runs (the oracle's) are refused unless `allow_synthetic`; rows of runs the
Reviewer rejected for cheating or suspected memorisation are discarded. Both are counted in the card.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ArtifactError, ConfigError
from ..harness.tools import TOOLS
from ..models.common import first_error
from ..models.distill import KTORow, PreferencePair, Provenance, Review, Segment, TaskCard
from ..rules import Rules, load_rules
from ..store import Store, atomic_file, atomic_write
from . import chat
from .card import dataset_card
from .harbor import harbor_tasks
from .swebench import instances

FORMATS = ("sft", "dpo", "kto", "atif", "swebench", "harbor")
DISCARDED_FOR = ("cheating", "suspected_memorisation")


@dataclass
class ExportReport:
    out: Path
    files: list[Path] = field(default_factory=list)
    rows: Counter = field(default_factory=Counter)  # per output file stem
    refused_synthetic: Counter = field(default_factory=Counter)  # per kind of row
    discarded: Counter = field(default_factory=Counter)


def export(
    store: Store, formats: list[str], out: Path, allow_synthetic: bool = False, rules: Rules | None = None
) -> ExportReport:
    unknown = [f for f in formats if f not in (*FORMATS, "all")]
    if unknown:
        raise ConfigError(f"unknown export format(s) {', '.join(unknown)}; use {', '.join(FORMATS)} or all")
    formats = list(FORMATS) if "all" in formats else formats
    src = store.distilled_manifest()
    if not src.exists():
        raise ArtifactError(f"{src.parent}: nothing distilled yet; run `harnessforge distill` first")
    try:
        manifest = json.loads(src.read_bytes())
    except ValueError as e:
        raise ArtifactError(f"{src}: not valid JSON ({e}); re-run `harnessforge distill`") from None
    reviews = _read(store.distilled_file("reviews"), Review)
    bad_runs = {(r.repo, r.run_id, r.milestone_id) for r in reviews if set(r.discard_reasons) & set(DISCARDED_FOR)}
    report = ExportReport(out)

    def keep(kind: str, prov: Provenance) -> bool:
        if prov.synthetic and not allow_synthetic:
            report.refused_synthetic[kind] += 1
            return False
        if (prov.repo, prov.run_id, prov.milestone_id) in bad_runs:
            report.discarded[kind] += 1
            return False
        return True

    out.mkdir(parents=True, exist_ok=True)
    if "sft" in formats:
        for name in ("sft", "stuck_slices"):
            segs = [s for s in _read(store.distilled_file(name), Segment) if keep(name, s.provenance)]
            _write(report, out / name, "trl", [_meta(s) | _sft_trl(s) for s in segs])
            _write(report, out / name, "swift", [_meta(s) | _sft_swift(s) for s in segs])
            _write(report, out / name, "openrlhf", [_meta(s) | _sft_openrlhf(s) for s in segs])
    if "dpo" in formats:
        pairs = [p for p in _read(store.distilled_file("dpo_pairs"), PreferencePair) if keep("dpo", p.provenance)]
        _write(report, out / "dpo", "trl", [_meta(p) | _dpo_trl(p) for p in pairs])
        _write(report, out / "dpo", "swift", [_meta(p) | _dpo_swift(p) for p in pairs])
        _write(report, out / "dpo", "openrlhf", [_meta(p) | _dpo_openrlhf(p) for p in pairs])
    if "kto" in formats:
        rows = [k for k in _read(store.distilled_file("kto"), KTORow) if keep("kto", k.provenance)]
        _write(report, out / "kto", "trl", [_meta(k) | _kto_trl(k) for k in rows])
        _write(report, out / "kto", "swift", [_meta(k) | _kto_swift(k) for k in rows])
    if "atif" in formats:
        _atif(store, report, reviews, keep)
    if "harbor" in formats:
        cards = _read(store.distilled_file("task_cards"), TaskCard)
        cards = [c for c in cards if allow_synthetic or not c.synthetic_reference]
        report.files += harbor_tasks(store, cards, out, rules or load_rules())
        report.rows["harbor_tasks"] = len(cards)
    if "swebench" in formats:
        rows = instances(store)
        path = out / "swebench" / "instances.jsonl"
        atomic_write(path, b"".join(json.dumps(r).encode() + b"\n" for r in rows))
        report.files.append(path)
        report.rows["instances"] = len(rows)
    card = dataset_card(report, reviews, manifest, allow_synthetic)
    atomic_write(out / "README.md", card.encode())
    report.files.append(out / "README.md")
    return report


# ---- rows per trainer -------------------------------------------------------------------------
def _meta(row: Segment | PreferencePair | KTORow) -> dict[str, Any]:
    p = row.provenance
    meta = {"id": row.id, "repo": p.repo, "run_id": p.run_id, "milestone_id": p.milestone_id, "model": p.model,
            "synthetic": p.synthetic, "rules_hash": p.rules_hash}  # fmt: skip
    if isinstance(row, Segment):
        meta |= {"kind": row.kind, "label": row.label, "hint_level": row.hint_level}
    if isinstance(row, PreferencePair):
        meta |= {"pair_type": row.pair_type, "depends_on_hint": row.depends_on_hint}
    return meta


def _sft_trl(s: Segment) -> dict[str, Any]:
    msgs = chat.trl(s.messages)
    return {"prompt": msgs[: s.train_from], "completion": msgs[s.train_from :], "tools": TOOLS}


def _sft_swift(s: Segment) -> dict[str, Any]:
    return {"messages": chat.swift_loss(s.messages, s.train_from), "tools": json.dumps(TOOLS)}


def _sft_openrlhf(s: Segment) -> dict[str, Any]:
    msgs = chat.tools_in_system(s.messages, TOOLS)
    cut = s.train_from + (0 if s.messages and s.messages[0]["role"] == "system" else 1)
    return {"prompt": msgs[:cut], "response": msgs[cut:]}


def _dpo_trl(p: PreferencePair) -> dict[str, Any]:
    return {"prompt": chat.trl(p.prompt), "chosen": chat.trl(p.chosen), "rejected": chat.trl(p.rejected),
            "tools": TOOLS}  # fmt: skip


def _dpo_swift(p: PreferencePair) -> dict[str, Any]:
    return {"messages": chat.json_args(p.prompt + p.chosen), "rejected_response": chat.json_args(p.rejected),
            "tools": json.dumps(TOOLS)}  # fmt: skip


def _dpo_openrlhf(p: PreferencePair) -> dict[str, Any]:
    return {"prompt": chat.tools_in_system(p.prompt, TOOLS), "chosen": chat.json_args(p.chosen),
            "rejected": chat.json_args(p.rejected)}  # fmt: skip


def _kto_trl(k: KTORow) -> dict[str, Any]:
    return {"prompt": chat.trl(k.prompt), "completion": chat.trl(k.completion), "label": k.label, "tools": TOOLS}


def _kto_swift(k: KTORow) -> dict[str, Any]:
    return {"messages": chat.json_args(k.prompt + k.completion), "label": k.label, "tools": json.dumps(TOOLS)}


# ---- files ------------------------------------------------------------------------------------
def _read(path: Path, model):
    if not path.exists():
        return []
    rows = []
    for n, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate_json(line))
        except ValidationError as e:
            why = f"invalid {model.__name__}: {first_error(e)}"
            raise ArtifactError(f"{path}:{n}: {why}; re-run `harnessforge distill`") from None
    return rows


def _write(report: ExportReport, directory: Path, name: str, rows: list[dict[str, Any]]) -> None:
    """`<name>.jsonl` and `<name>.parquet` (nested values as datasets `Json` features)."""
    import datasets

    datasets.disable_progress_bars()  # stderr is for warnings and errors, one line each
    directory.mkdir(parents=True, exist_ok=True)
    jsonl = directory / f"{name}.jsonl"
    atomic_write(jsonl, b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows))
    report.files.append(jsonl)
    report.rows[f"{directory.name}/{name}"] = len(rows)
    if rows:
        sample = {k: next((r[k] for r in rows if r.get(k) is not None), None) for k in rows[0]}
        features = datasets.Features({k: _feature(v) for k, v in sample.items()})
        parquet = directory / f"{name}.parquet"
        with atomic_file(parquet) as tmp:  # never half a Parquet file under the dataset's name
            datasets.Dataset.from_list(rows, features=features).to_parquet(str(tmp))
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
    n = 0
    for r in reviews:
        prov = Provenance(repo=r.repo, run_id=r.run_id, milestone_id=r.milestone_id, rules_hash=r.rules_hash,
                          synthetic=r.synthetic)  # fmt: skip
        src = store.milestone_run(r.repo, r.run_id, r.milestone_id).atif
        if not src.exists() or not keep("atif", prov):
            continue
        dest = report.out / "atif" / r.repo / r.run_id / f"{r.milestone_id}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        report.files.append(dest)
        n += 1
    report.rows["atif"] = n
