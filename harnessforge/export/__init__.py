"""Exports: distilled rows in the formats trainers and harnesses read, with a dataset card.

`export(store, formats, out)` reads `distilled/` (run `distill` first) and writes, per format,
JSON lines and Parquet (through `datasets`, nested values as `Json` features, so
`datasets.load_dataset("parquet", ...)` gives back exactly the rows), and a card with each file's
token counts (with `tokenizer`'s chat template when one is given) and the trainer settings it needs:

- `sft`: SFT segments, stuck slices and chain rows; `trl` (prompt/completion, tool arguments as objects, a
  `tools` column), `swift` (`messages` with per-message `loss`, reasoning as `<think>`, `tools` as a
  JSON string), `openrlhf` (prompt/response and the whole `messages`, tool schemas in the system message).
- `dpo`: pairs; `trl` (prompt/chosen/rejected + tools), `swift` (`messages` = prompt + chosen,
  `rejected_messages` = prompt + rejected), `openrlhf` (prompt/chosen/rejected, tools in the system message).
- `kto`: `trl` (prompt/completion/label + tools), `swift` (`messages` + `label`).
  rows.py makes each trainer's row, columns.py declares each column's one type and writes the files.
- `atif`: the runs' ATIF v1.7 trajectories.
- `swebench`: a swebench 5.x task repo of the verified tasks (`sweb.yaml`, `tasks/<id>/` with eval.sh
  and a Dockerfile, `instances.jsonl`), test ids as swebench's log parser reports them.
- `harbor`: a Harbor task folder per verified task (`tasks/<id>/`: instruction, task.toml, environment
  with a Dockerfile and a bundle of the history up to the base commit, tests, solution).

Rows of synthetic runs (the oracle's) are refused unless `allow_synthetic`; a run the Reviewer
rejected feeds only the datasets the rules' `distill.gates` table allows for each of its discard
reasons (cheating: nothing; an agent loop: its KTO negatives, stuck slices and the rejected side of
pairs). Both are counted in the card, the discarded rows per dataset and per reason.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analytics.database import connect_read_only
from ..analytics.rows import MemorisationRateRow, has_tables, read_rows
from ..atomic import atomic_write
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
from ..distill.poc import Criterion, criteria, funnel
from ..errors import ArtifactError, ConfigError
from ..harness import atif
from ..harness.tools import TOOLS
from ..models.distill import PreferencePair, Review, RunProvenance, TaskCard
from ..rules import Rules, load_rules
from ..store import Store
from . import rows as trainer
from .card import dataset_card
from .columns import write
from .format_checks import format_checks
from .harbor import harbor_tasks
from .hub import front_matter
from .splits import HELDOUT, TRAIN, split_of
from .swebench_repo import write_task_repo
from .tokens import TokenCount, TokenCounter

FORMATS = ("sft", "dpo", "kto", "atif", "swebench", "harbor")
FORMAT_CHECKS = "format_checks.json"  # beside the card: each file's check by its tool (the report reads it)
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
    labels: dict[str, Counter] = field(default_factory=dict)  # per file with a boolean `label`: KTO's balance
    tokens: dict[str, TokenCount] = field(default_factory=dict)  # per file
    token_method: str = ""  # how `tokens` were counted
    heldout_repos: list[str] = field(default_factory=list)  # their rows are under heldout/ (rules: export.heldout)
    format_checks: dict[str, str | None] = field(default_factory=dict)  # per file: None if its tool loads it
    poc: list[Criterion] = field(default_factory=list)  # seed 001's criteria (distill/poc.py)
    funnel: dict[str, dict[str, int]] = field(default_factory=dict)  # per repo: milestones at each stage
    warnings: list[str] = field(default_factory=list)  # said on the console and in the card (licenses)


def export(
    store: Store,
    formats: list[str],
    out: Path,
    allow_synthetic: bool = False,
    rules: Rules | None = None,
    tokenizer: Any = None,
    force: bool = False,
) -> ExportReport:
    """The dataset, built beside `out` and swapped in whole: a failure leaves `out` as it was, and nothing of an
    earlier export mixes in. A non-empty `out` that is no earlier export (it has no format checks) is refused
    unless `force`. `tokenizer`: a local tokenizer directory (or a loaded tokenizer) whose chat template counts
    the card's tokens."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ArtifactError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / FORMAT_CHECKS).exists() and not force:
        raise ArtifactError(f"{out}: not empty and no earlier export; export into an empty folder, or --force")
    out.parent.mkdir(parents=True, exist_ok=True)
    building, replaced = (out.parent / f".{out.name}.{part}-{os.getpid()}" for part in ("partial", "replaced"))
    shutil.rmtree(building, ignore_errors=True)
    try:
        report = _export(store, formats, building, allow_synthetic, rules, tokenizer)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    if out.exists():
        out.rename(replaced)
    building.rename(out)  # beside it: one filesystem, one rename
    shutil.rmtree(replaced, ignore_errors=True)
    report.out = out
    report.files = [out / path.relative_to(building) for path in report.files]
    return report


def _export(
    store: Store, formats: list[str], out: Path, allow_synthetic: bool, rules: Rules | None, tokenizer: Any
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
    tokens = TokenCounter(tokenizer, (rules or load_rules()).export.chars_per_token)
    report.token_method = tokens.method

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
    heldout = (rules or load_rules()).export.heldout
    cards = verified_cards(store, report, formats, named)
    cards = [card for card in cards if allow_synthetic or not card.synthetic_reference]

    run_tools: dict[tuple[str, str], list[dict]] = {}  # each run's tool schemas, read once

    def write_split(split: str, directory: Path) -> None:
        """Every asked-for format, for the rows of this split's repositories, under `directory`."""

        def ours(provenance: RunProvenance) -> bool:
            return split_of(provenance.repo, heldout) == split

        def rows(output) -> list:
            return [row for row in read_distilled(store, output) if ours(row.provenance)]

        def meta(row) -> dict[str, Any]:
            return trainer.meta(row) | {"split": split}

        def tools(row) -> list[dict]:
            run = (row.provenance.repo, row.provenance.run_id)
            if run not in run_tools:
                run_tools[run] = tools_of(store, row.provenance)
            return run_tools[run]

        if "sft" in formats:
            for output in (SFT, STUCK_SLICES, CHAINS):  # a chain goes only if each of its milestone runs may
                segments = [
                    segment
                    for segment in rows(output)
                    if all(keep(output.stem, run) for run in getattr(segment, "runs", [segment.provenance]))
                    and getattr(segment, "label", None) != "unresolved"  # a loop it never left is not imitated
                ]
                for dialect, row in trainer.SFT_DIALECTS.items():
                    made = [meta(one) | row(one, tools(one)) for one in segments]
                    write(report, directory / output.stem, dialect, made, tokens)
        if "dpo" in formats:
            pairs = [pair for pair in rows(DPO_PAIRS) if keep_pair(pair)]
            for dialect, row in trainer.DPO_DIALECTS.items():
                write(
                    report, directory / "dpo", dialect, [meta(pair) | row(pair, tools(pair)) for pair in pairs], tokens
                )
        if "kto" in formats:
            kept = [one for one in rows(KTO) if keep("kto", one.provenance, "kto" if one.label else "kto_negatives")]
            for dialect, row in trainer.KTO_DIALECTS.items():
                write(report, directory / "kto", dialect, [meta(one) | row(one, tools(one)) for one in kept], tokens)
        prefix = f"{directory.relative_to(out)}/" if directory != out else ""
        if "atif" in formats:
            ran = [review for review in reviews if split_of(review.repo, heldout) == split]
            report.rows[f"{prefix}atif"] = _atif(store, report, directory, ran, keep)
        tasks = [card for card in cards if split_of(card.repo, heldout) == split]
        if "harbor" in formats and report.verified:
            report.files += harbor_tasks(store, tasks, directory, rules or load_rules())
            report.rows[f"{prefix}harbor_tasks"] = len(tasks)
        if "swebench" in formats and report.verified:
            chosen = [(card.repo, card.milestone_id) for card in tasks]
            written = write_task_repo(store, chosen, directory / "swebench", rules or load_rules())
            report.files += written.files
            report.rows[f"{prefix}instances"] = written.instances

    write_split(TRAIN, out)
    known = {review.repo for review in reviews} | set(store.repo_keys())
    report.heldout_repos = sorted(key for key in known if split_of(key, heldout) == HELDOUT)
    if report.heldout_repos:  # the same layout again, for the held-out repositories' rows
        write_split(HELDOUT, out / HELDOUT)
    report.format_checks = format_checks(out, report.files)
    atomic_write(out / FORMAT_CHECKS, (json.dumps(report.format_checks, indent=2) + "\n").encode())
    report.files.append(out / FORMAT_CHECKS)
    report.poc = criteria(store, rules or load_rules(), report.format_checks)
    report.funnel = funnel(store)
    card = dataset_card(report, reviews, manifest, allow_synthetic, _memorisation_rates(store))
    repos = {review.repo for review in reviews if allow_synthetic or not review.synthetic}
    front, report.warnings = front_matter(store, out, report.rows, sorted(repos))
    warned = ["## Warnings", "", *[f"- {warning}" for warning in report.warnings], ""] if report.warnings else []
    atomic_write(out / "README.md", (front + card + "\n" + "\n".join(warned)).encode())
    report.files.append(out / "README.md")
    return report


def tools_of(store: Store, provenance: RunProvenance) -> list[dict]:
    """The tool schemas the Dev of this row's run was given: its scaffold's own (in the run's
    metadata), else ours."""
    try:
        scaffold = json.loads(store.run_metadata(provenance.repo, provenance.run_id).read_text()).get("scaffold") or {}
    except (OSError, ValueError):
        scaffold = {}
    return scaffold.get("tools") or TOOLS


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


def _atif(store: Store, report: ExportReport, directory: Path, reviews: list[Review], keep) -> int:
    """Each kept run's ATIF trajectory, as this harness writes it now (`atif.upgrade`), to
    `directory`/atif/<repo>/<run_id>/<milestone>.json; how many."""
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
            test_visibility=review.test_visibility,
            plan_id=review.plan_id,
        )
        source = store.milestone_run(review.repo, review.run_id, review.milestone_id).atif
        if not source.exists() or not keep("atif", provenance):
            continue
        destination = directory / "atif" / review.repo / review.run_id / f"{review.milestone_id}.json"
        try:
            doc = atif.upgrade(json.loads(source.read_bytes()))
            atif.validate_atif(doc)
        except ValueError as e:
            raise ArtifactError(f"{source}: not valid ATIF ({e})") from None
        atomic_write(destination, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
        report.files.append(destination)
        copied += 1
    return copied
