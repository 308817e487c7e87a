"""Stage 3 distillation: analytics rows and event logs cut into training data.

`distill(store, rules)` loads new trajectories, rebuilds the SQL models, then writes
`distilled/` in the store: stuck slices, DPO pairs, KTO rows, SFT segments, reviews and task cards
(one per valid milestone), one JSON line per row (each with its provenance and the rules hash),
plus `manifest.json` with the counts. Synthetic runs are distilled like any other and stay
labelled; exports decide whether they go out.

`distill(..., only=(repo, milestone))` cuts the rows of one milestone (all its runs) into
`distilled/milestones/<repo>/<milestone>/`, the unit Dagster partitions by; `assemble(store)` then
joins every milestone's files into the top-level ones that exports read.
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
    analytics: AnalyticsReport | None  # None: read the analytics as they stood (one milestone's cut)
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    out_dir: Path | None = None


Milestone = tuple[str, str]  # (repo key, milestone id)


def distill(
    store: Store,
    rules: Rules,
    log=print,
    progress=None,
    analytics: AnalyticsReport | None = None,
    reviewer: Reviewer | None = None,
    only: Milestone | None = None,
) -> DistillReport:
    """Analyze (unless `analytics` says it was just done), then cut the rows. `reviewer` grades the
    runs (default: the rule-based Reviewer; an `LLMJudge` implements the same interface). `only`
    limits the cut to one milestone's runs and writes them to its own folder; it reads the analytics
    as they stand (the caller rebuilt them once for all milestones)."""
    if not only:
        analytics = analytics or analyze(store, rules, progress)
    report = DistillReport(analytics)
    skipped: list[str] = []
    with connect(store) as con:
        if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'milestone_summary'").fetchall():
            raise ArtifactError(
                f"{store.analytics_database()}: no trajectory analytics yet; run `harnessforge distill` "
                "(or materialize trajectory_analytics) first"
            )
        runs = load_runs(store, con, rules.hash, log=lambda msg: (skipped.append(msg), log(msg)), only=only)
    reviewer = reviewer or Reviewer(rules.distill.reviewer, rules.hash)
    rows: dict[str, list[BaseModel]] = {name: [] for name in OUTPUTS}
    for run in runs:
        rows["stuck_slices"] += stuck_slices(run, rules.distill)
        rows["dpo_pairs"] += hint_pairs(run, rules.distill)
        rows["kto"] += kto_rows(run)
        rows["sft"] += sft_segments(run)
        rows["reviews"].append(reviewer.review(run.summary, flaky=_flaky(store, run.provenance)))
    rows["dpo_pairs"] += outcome_pairs(runs)
    rows["task_cards"] = task_cards(store, rows["reviews"], rules.hash, only=only)
    out = store.distilled_dir(only)
    for name, items in rows.items():
        atomic_write(store.distilled_file(name, only), b"".join(i.model_dump_json().encode() + b"\n" for i in items))
    report.counts = {name: len(items) for name, items in rows.items()}
    report.skipped, report.out_dir = skipped, out
    manifest = {"rules_hash": rules.hash, "created_at": utcnow().isoformat(), "runs": len(runs),
                "counts": report.counts, "skipped": skipped}  # fmt: skip
    atomic_write(store.distilled_manifest(only), (json.dumps(manifest, indent=2) + "\n").encode())
    return report


def assemble(store: Store, rules_hash: str) -> dict[str, int]:
    """Join every milestone's distilled files (`distill(..., only=...)`) into the store-wide ones.

    Rows are concatenated in (repo, milestone) order; the verification verdicts of `verify-tasks`
    come along. Returns the row counts. Raises when no milestone was distilled yet."""
    folders = store.distilled_milestones()
    out = store.distilled_dir()
    if not folders:
        raise ArtifactError(f"{out}: no milestone is distilled yet; materialize the distilled assets")
    counts: dict[str, int] = {}
    for name in (*OUTPUTS, "verified_tasks"):
        files = [store.distilled_file(name, f) for f in folders]
        parts = [path.read_bytes() for path in files if path.exists()]
        atomic_write(store.distilled_file(name), b"".join(parts))
        counts[name] = sum(len(p.splitlines()) for p in parts)
    verdicts = [store.task_checks_file(f) for f in folders if store.task_checks_file(f).exists()]
    checks = [c for path in verdicts for c in json.loads(path.read_text())]
    atomic_write(store.task_checks_file(), (json.dumps(checks, indent=2) + "\n").encode())
    manifests = [json.loads(store.distilled_manifest(f).read_text()) for f in folders]
    manifest = {"rules_hash": rules_hash, "created_at": utcnow().isoformat(), "runs": sum(m["runs"] for m in manifests),
                "counts": counts, "skipped": [s for m in manifests for s in m["skipped"]],
                "milestones": [f"{key}/{mid}" for key, mid in folders],
                "stale_rules": sorted({m["rules_hash"] for m in manifests} - {rules_hash})}  # fmt: skip
    atomic_write(store.distilled_manifest(), (json.dumps(manifest, indent=2) + "\n").encode())
    return counts


def _flaky(store: Store, prov) -> bool:
    """Did validation see flaky tests in this milestone? (False when the store has no validation.)"""
    try:
        return bool(store.load_validation(prov.repo, prov.milestone_id).flaky)
    except (ArtifactError, FileNotFoundError):
        return False
