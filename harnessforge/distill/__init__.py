"""Stage 3 distillation: analytics rows and event logs cut into training data.

`distill(store, rules)` loads new trajectories, rebuilds the SQL models, then writes
`distilled/` in the store: stuck slices, DPO pairs, KTO rows, SFT segments, reviews and task cards
(one per valid milestone), one JSON line per row (each with its provenance and the rules hash),
plus `manifest.json` with the counts. Synthetic runs are distilled like any other and stay
labelled; exports decide whether they go out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from ..analytics import AnalyticsReport, analyze
from ..analytics.load import connect
from ..errors import ArtifactError
from ..models.common import utcnow
from ..rules import Rules
from ..store import Store, atomic_write
from .pairs import hint_pairs, kto_rows, outcome_pairs
from .reviewer import Reviewer
from .runs import load_runs
from .sft import sft_segments
from .slices import stuck_slices
from .tasks import task_cards

OUTPUTS = ("stuck_slices", "dpo_pairs", "kto", "sft", "reviews", "task_cards")


@dataclass
class DistillReport:
    analytics: AnalyticsReport
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    out_dir: Path | None = None


def distilled_dir(store: Store) -> Path:
    return store.root / "distilled"


def distill(
    store: Store,
    rules: Rules,
    log=print,
    progress=None,
    analytics: AnalyticsReport | None = None,
    reviewer: Reviewer | None = None,
) -> DistillReport:
    """Analyze (unless `analytics` says it was just done), then cut the rows. `reviewer` grades the
    runs (default: the rule-based Reviewer; an `LLMJudge` implements the same interface)."""
    analytics = analytics or analyze(store, rules, progress)
    report = DistillReport(analytics)
    skipped: list[str] = []
    with connect(store) as con:
        runs = load_runs(store, con, rules.hash, log=lambda msg: (skipped.append(msg), log(msg)))
    reviewer = reviewer or Reviewer(rules.distill.reviewer, rules.hash)
    rows: dict[str, list[BaseModel]] = {name: [] for name in OUTPUTS}
    for run in runs:
        rows["stuck_slices"] += stuck_slices(run, rules.distill)
        rows["dpo_pairs"] += hint_pairs(run, rules.distill)
        rows["kto"] += kto_rows(run)
        rows["sft"] += sft_segments(run)
        rows["reviews"].append(reviewer.review(run.summary, flaky=_flaky(store, run.provenance)))
    rows["dpo_pairs"] += outcome_pairs(runs)
    rows["task_cards"] = task_cards(store, rows["reviews"], rules.hash)
    out = distilled_dir(store)
    for name, items in rows.items():
        atomic_write(out / f"{name}.jsonl", b"".join(i.model_dump_json().encode() + b"\n" for i in items))
    report.counts = {name: len(items) for name, items in rows.items()}
    report.skipped, report.out_dir = skipped, out
    manifest = {"rules_hash": rules.hash, "created_at": utcnow().isoformat(), "runs": len(runs),
                "counts": report.counts, "skipped": skipped}  # fmt: skip
    atomic_write(out / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return report


def _flaky(store: Store, prov) -> bool:
    """Did validation see flaky tests in this milestone? (False when the store has no validation.)"""
    try:
        return bool(store.load_validation(prov.repo, prov.milestone_id).flaky)
    except (ArtifactError, FileNotFoundError):
        return False
