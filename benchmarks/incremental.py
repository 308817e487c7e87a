"""Incremental by construction: one new milestone run arriving in a store that holds a million events.

The store is benchmarks/analytics.py's generator (1,000,000 events: 10 runs x 100 milestones x 1,000
events, one trajectory.jsonl per milestone; --quick 100,000), analysed and distilled whole once. Then
milestone runs arrive, of two kinds:
- `incremental_new_run`: a new run's first milestone (its milestone already has 10 runs: 11 to cut);
- `incremental_next_milestone`: an existing run's next milestone (a milestone no run has had yet).
Each arrival takes the automated path, what the Dagster assets run for its (repo, milestone):
`analytics_load` (`load_milestones`), `analytics_by_milestone` (`build_milestones`: every model's
rows of that milestone), `analytics_by_repo` (`build_repos`: memorisation_rates of its repo) and the
`distilled` multi-asset (`distill(..., only=...)`). The baseline, measured in the same run on the same
store, is the full rebuild: the analytics thrown away, every trajectory loaded, every model built and
every milestone distilled (every distilled partition; `harnessforge distill`'s one cut of all runs
holds them all in memory and does not fit 24 GB at this size). Target: the path costs <= 10% of it
(median of `--repeats` arrivals of each kind against one full rebuild).

Also shown (no target): the analytics alone (load + models of the milestone against load + models of
everything), and what the previous design ran for one new run (`trajectory_analytics`: the new file
loaded, then every model rebuilt whole; then every distilled partition stale and cut again, so at
least the full rebuild's distill).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import Result

from harnessforge.analytics import analyze, build_milestones, build_repos, load_milestones
from harnessforge.analytics.database import connect
from harnessforge.distill import distill
from harnessforge.rules import load_rules
from harnessforge.store import Store

GROUP = "incremental"
TARGET = 0.10  # the automated path's cost, at most this share of a full rebuild
EVENTS = {"full": 1_000_000, "quick": 100_000}


def quiet(*_) -> None:
    """Distillation's log lines (runs skipped and why): not the benchmark's output."""


def full_rebuild(store: Store, rules) -> dict[str, float]:
    """The analytics thrown away, then everything loaded and built, and every milestone distilled (as
    every distilled partition: one cut of all runs at once holds them all in memory, 23 GB at a
    million events), timed by part."""
    shutil.rmtree(store.analytics_dir(), ignore_errors=True)
    start = time.perf_counter()
    analyze(store, rules)
    analysed = time.perf_counter()
    for milestone in sorted({(files.repo_key, files.milestone_id) for files in store.milestone_runs()}):
        distill(store, rules, log=quiet, only=milestone)
    done = time.perf_counter()
    return {"analytics": analysed - start, "distill": done - analysed, "total": done - start}


def automated_path(store: Store, rules, milestone: tuple[str, str]) -> dict[str, float]:
    """What the assets run for one (repo, milestone), timed by asset step."""
    times, start = {}, time.perf_counter()
    load_milestones(store, [milestone])
    times["load"] = time.perf_counter() - start
    built = build_milestones(store, rules, [milestone])
    times["models"] = time.perf_counter() - start - times["load"]
    build_repos(store, rules, [milestone[0]])
    times["repo_models"] = time.perf_counter() - start - times["load"] - times["models"]
    report = distill(store, rules, log=quiet, only=milestone)
    times["distill"] = time.perf_counter() - start - times["load"] - times["models"] - times["repo_models"]
    times["total"] = time.perf_counter() - start
    times["runs_cut"] = len(report.reviews)
    times["summary_rows"] = next(model for model in built.models if model.name == "milestone_summary").rows
    return times


def previous_analytics(store: Store, rules) -> float:
    """The previous design's `trajectory_analytics` for one new run: the new file loaded, every model whole."""
    start = time.perf_counter()
    analyze(store, rules)
    return time.perf_counter() - start


def incremental_benchmarks(
    quick: bool, repeats: int = 3, events: int | None = None, runs: int | None = None, log=print
) -> list[Result]:
    from analytics import RUNS, generate

    events = events or EVENTS["quick" if quick else "full"]
    runs = runs or RUNS
    rules = load_rules()
    with tempfile.TemporaryDirectory(prefix="hf-bench-incremental-") as tmp:
        root = Path(tmp)
        store = generate(root, events, runs=runs)
        milestones = max(1, events // (runs * 1000))
        loaded = sum(1 for _ in store.milestone_runs())
        log(f"incremental: {events:,} events, {loaded:,} milestone runs ({runs} runs x {milestones} milestones)")
        baseline = full_rebuild(store, rules)
        parts = f"analytics {baseline['analytics']:.2f}s, distill {baseline['distill']:.2f}s"
        log(f"full rebuild: {baseline['total']:.2f}s ({parts})")
        measured: dict[str, list[dict]] = {"incremental_new_run": [], "incremental_next_milestone": []}
        previous = []
        for i in range(repeats):
            # a new run's first milestone: bench-<runs + i> on m0001, whose other runs are there
            generate(root, 1_000, runs=1, first_run=runs + i)
            measured["incremental_new_run"].append(automated_path(store, rules, ("bench__repo", "m0001")))
            # an existing run's next milestone: bench-<i> on a milestone no run has had yet
            generate(root, 1_000, runs=1, first_run=i, first_milestone=milestones + i)
            measured["incremental_next_milestone"].append(
                automated_path(store, rules, ("bench__repo", f"m{milestones + i + 1:04d}"))
            )
            for name, times in measured.items():
                log(f"{name} #{i + 1}: {times[-1]['total']:.2f}s")
        generate(root, 1_000, runs=1, first_run=runs + repeats)  # one more new run for the previous design
        previous.append(previous_analytics(store, rules))
        with connect(store) as con:
            total_events = con.execute("SELECT count(*) FROM raw_events").fetchone()[0]
    return [_result(name, times, baseline, previous[0], total_events, runs) for name, times in measured.items()] + [
        _analytics_result(measured, baseline, previous[0], total_events)
    ]


def _median(samples: list[dict], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def _result(name: str, samples: list[dict], baseline: dict, previous: float, events: int, runs: int) -> Result:
    ours = _median(samples, "total")
    parts = {key: round(_median(samples, key), 4) for key in ("load", "models", "repo_models", "distill")}
    cut = int(_median(samples, "runs_cut"))
    kind = "a new run's first milestone" if name.endswith("new_run") else "an existing run's next milestone"
    ok = all(sample["summary_rows"] == sample["runs_cut"] > 0 for sample in samples)
    return Result(
        name,
        GROUP,
        "full rebuild: analytics thrown away, every trajectory loaded, every model built, every milestone distilled",
        ours,
        baseline["total"],
        ours / baseline["total"],
        "cost",
        TARGET,
        "max_cost",
        status="ok" if ok else "error",
        detail=f"{kind} arriving in a store of {events:,} events: its load, its rows of every model, its repo's "
        f"rows, its distilled partition ({cut} run{'s' if cut != 1 else ''} cut), median of {len(samples)} arrivals"
        + ("" if ok else "; THE NEW MILESTONE'S ROWS ARE MISSING"),
        iterations=len(samples),
        extra={
            "parts_median_s": parts,
            "baseline_parts_s": {key: round(baseline[key], 3) for key in ("analytics", "distill")},
            "previous_design_analytics_s": round(previous, 3),
            "events": events,
        },
    ).judge()


def _analytics_result(measured: dict, baseline: dict, previous: float, events: int) -> Result:
    """The analytics alone: the milestone's load and models against everything's (informational)."""
    samples = [sample for each in measured.values() for sample in each]
    ours = statistics.median(sample["load"] + sample["models"] + sample["repo_models"] for sample in samples)
    return Result(
        "incremental_analytics",
        GROUP,
        "the analytics of everything: every trajectory loaded, every model built",
        ours,
        baseline["analytics"],
        ours / baseline["analytics"],
        "cost",
        detail=f"one milestone's load and rows of every model (both kinds of arrival) in a store of {events:,} "
        f"events; no target; the previous design's trajectory_analytics for one new run took {previous:.2f} s "
        "(the new file loaded, every model rebuilt whole), then re-cut every distilled partition",
        iterations=len(samples),
        extra={"previous_design_analytics_s": round(previous, 3)},
    ).judge()
