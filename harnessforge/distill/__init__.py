"""Stage 3 distillation: analytics rows and event logs cut into training data.

`distill(store, rules)` loads new trajectories, rebuilds the SQL models, then writes
`distilled/` in the store: stuck slices, DPO pairs, KTO rows, SFT segments, reviews, task cards
(one per valid milestone) and chain rows (a run's passing milestones joined), one JSON line per row
(each with its provenance and the rules hash), plus `manifest.json` with the counts. Synthetic runs
are distilled like any other and stay labelled; exports decide whether they go out.

The outputs, their files and their Dagster assets are one table, `outputs.DISTILLED_OUTPUTS`.

`distill(..., only=(repo, milestone))` cuts the rows of one milestone (all its runs) into
`distilled/milestones/<repo>/<milestone>/`, the unit Dagster partitions by; `assemble(store)` then
joins every milestone's files into the top-level ones that exports read, and cuts the chain rows
(which span milestones) from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from ..analytics import AnalyticsReport, analyze
from ..analytics.database import connect
from ..analytics.rows import MilestoneSummaryRow, has_tables
from ..atomic import write_together
from ..errors import ArtifactError
from ..models.common import utcnow
from ..models.distill import Review, RunProvenance
from ..rules import Rules
from ..store import Store
from .chains import chain_order, chain_segments
from .contamination import with_contamination
from .outputs import (
    CHAINS,
    DISTILLED_OUTPUTS,
    DPO_PAIRS,
    KTO,
    REVIEWS,
    SFT,
    STUCK_SLICES,
    TASK_CARDS,
    VERIFIED_TASKS,
    read_distilled,
)
from .pairs import hint_level_pairs, hint_pairs, kto_rows, outcome_pairs
from .reviewer import Reviewer
from .runs import RunView, load_runs
from .sft import sft_segments
from .slices import stuck_slices
from .tasks import task_cards


@dataclass
class DistillReport:
    analytics: AnalyticsReport | None  # None: read the analytics as they stood (one milestone's cut)
    counts: dict[str, int] = field(default_factory=dict)  # rows per output (`DistilledOutput.stem`)
    skipped: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    reviews: list[Review] = field(default_factory=list)  # as written to reviews.jsonl


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
    skipped: list[str] = []

    def skip(message: str) -> None:
        skipped.append(message)
        log(message)

    with connect(store) as con:
        if not has_tables(con, MilestoneSummaryRow.table):
            raise ArtifactError(
                f"{store.analytics_database()}: no trajectory analytics yet; run `harnessforge distill` "
                "(or materialize the analytics assets) first"
            )
        runs = load_runs(store, con, rules.hash, log=skip, only=only)
    with_contamination(runs, store, rules.distill.contamination, skip)
    rows = _cut(store, rules, runs, reviewer or Reviewer(rules.distill.reviewer, rules.hash), only, skip)
    if not only:  # a chain spans milestones, so one milestone's cut has none: `assemble` makes them
        rows[CHAINS.stem] = _chains(store, rows[SFT.stem], rows[REVIEWS.stem], rules)
    generation = {
        store.distilled_file(stem, only): b"".join(item.model_dump_json().encode() + b"\n" for item in items)
        for stem, items in rows.items()
    }
    counts = {stem: len(items) for stem, items in rows.items()}
    manifest = {
        "rules_hash": rules.hash,
        "created_at": utcnow().isoformat(),
        "runs": len(runs),
        "counts": counts,
        "skipped": skipped,
    }
    judged = [review.judge_cost_usd for review in rows[REVIEWS.stem] if review.judge_cost_usd is not None]
    if judged:  # an LLM judge graded the runs: what it cost
        manifest["judge_cost_usd"] = round(sum(judged), 6)
    generation[store.distilled_manifest(only)] = (json.dumps(manifest, indent=2) + "\n").encode()
    write_together(generation)  # all or nothing: a full disk leaves the earlier generation whole
    return DistillReport(analytics, counts, skipped, store.distilled_dir(only), rows[REVIEWS.stem])


def _cut(
    store: Store, rules: Rules, runs: list[RunView], reviewer: Reviewer, only: Milestone | None, skip=print
) -> dict[str, list[BaseModel]]:
    """Every output's rows, by `DistilledOutput.stem`, in `DISTILLED_OUTPUTS` order; `skip` says what is left
    out and why."""
    rows: dict[str, list[BaseModel]] = {output.stem: [] for output in DISTILLED_OUTPUTS}
    for run in runs:
        rows[STUCK_SLICES.stem] += stuck_slices(run, rules.distill)
        rows[DPO_PAIRS.stem] += hint_pairs(run, rules.distill)
        rows[KTO.stem] += kto_rows(run)
        rows[SFT.stem] += sft_segments(run, rules.distill.plan_patterns)
        env_issue = run.summary.status == "ENV_ERROR"  # the sandbox was lost: the run says nothing about the Dev
        review = reviewer.review(run.summary, flaky=_flaky(store, run.provenance), env_issue=env_issue, run=run)
        rows[REVIEWS.stem].append(review)
    rows[DPO_PAIRS.stem] += outcome_pairs(runs) + hint_level_pairs(runs, rules.distill.hint_level_pairs)
    rows[TASK_CARDS.stem] = task_cards(store, rows[REVIEWS.stem], runs, rules.hash, rules.distill, only=only, log=skip)
    return rows


def assemble(store: Store, rules: Rules) -> dict[str, int]:
    """Join every milestone's distilled files (`distill(..., only=...)`) into the store-wide ones, and
    cut the chain rows from them.

    Rows are concatenated in (repo, milestone) order; the verification verdicts of `verify-tasks`
    come along. Returns the row counts. Raises when no milestone was distilled yet."""
    rules_hash = rules.hash
    folders = store.distilled_milestones()
    out = store.distilled_dir()
    if not folders:
        raise ArtifactError(f"{out}: no milestone is distilled yet; materialize the distilled assets")
    counts: dict[str, int] = {}
    generation: dict[Path, bytes] = {}  # written together at the end: a failure leaves the earlier one whole
    for output in (*DISTILLED_OUTPUTS, VERIFIED_TASKS):
        files = [store.distilled_file(output.stem, folder) for folder in folders]
        parts = [path.read_bytes() for path in files if path.exists()]
        generation[store.distilled_file(output.stem)] = b"".join(parts)
        counts[output.stem] = sum(len(part.splitlines()) for part in parts)
    sft, reviews = ([row for folder in folders for row in read_distilled(store, out, folder)] for out in (SFT, REVIEWS))
    chains = _chains(store, sft, reviews, rules)
    generation[store.distilled_file(CHAINS.stem)] = b"".join(row.model_dump_json().encode() + b"\n" for row in chains)
    counts[CHAINS.stem] = len(chains)
    verdicts = [store.task_checks_file(folder) for folder in folders if store.task_checks_file(folder).exists()]
    checks = [check for path in verdicts for check in json.loads(path.read_text())]
    generation[store.task_checks_file()] = (json.dumps(checks, indent=2) + "\n").encode()
    manifests = [json.loads(store.distilled_manifest(folder).read_text()) for folder in folders]
    manifest = {
        "rules_hash": rules_hash,
        "created_at": utcnow().isoformat(),
        "runs": sum(part["runs"] for part in manifests),
        "counts": counts,
        "skipped": [line for part in manifests for line in part["skipped"]],
        "milestones": [f"{key}/{milestone_id}" for key, milestone_id in folders],
        "stale_rules": sorted({part["rules_hash"] for part in manifests} - {rules_hash}),
    }
    generation[store.distilled_manifest()] = (json.dumps(manifest, indent=2) + "\n").encode()
    write_together(generation)
    return counts


def _chains(store: Store, sft: list, reviews: list[Review], rules: Rules) -> list:
    order = chain_order(store, {review.repo for review in reviews})
    return chain_segments(sft, reviews, order, rules.distill.chains)


def _flaky(store: Store, provenance: RunProvenance) -> bool:
    """Did validation see flaky tests in this milestone? (False when the store has no validation.)"""
    try:
        return bool(store.load_validation(provenance.repo, provenance.milestone_id).flaky)
    except (ArtifactError, FileNotFoundError):
        return False
