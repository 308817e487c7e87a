"""Analytics at scale: generated trajectories loaded into Parquet and DuckDB, then the SQL models.

Three results over N generated events (10 million; --quick 1 million) in a store laid out as
the harness writes it (runs x milestones x events, one trajectory.jsonl per milestone, with its
summary, test results and diffs); `generate_events.sql` says what a milestone holds (one
stretch for each stuck detector among ordinary work):
- analytics_load: `load` (JSONL -> Parquet -> DuckDB, keys and sequence neighbours computed on
  the way), target <= 60 s;
- analytics_models: building every `dbt_like_sql/` model once loaded, target <= 10 s;
- analytics_stuck_points: the `stuck_points` model against a pure-Python implementation of the
  same four detectors over the same rows (already in memory and sorted), target >= 50x; both
  results must be equal, or the benchmark fails.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from string import Template

from common import Result

from harnessforge.analytics.load import connect, load
from harnessforge.analytics.sqlmodels import build, discover, render
from harnessforge.rules import load_rules
from harnessforge.store import RUN_METADATA, Store

EVENTS_PER_MILESTONE = 1000
RUNS = 10
# every milestone's outcome: the Dev's diff and the reference touch src/f1.py (memorisation reads them)
GROUND_TRUTH = (
    "diff --git a/src/f1.py b/src/f1.py\n--- a/src/f1.py\n+++ b/src/f1.py\n@@ -1 +1,2 @@\n def f1():\n"
    "+    return total(items) * rate\n"
)
FINAL_DIFF = GROUND_TRUTH.replace("total(items) * rate", "sum(items) * rate") + (
    "diff --git a/src/f2.py b/src/f2.py\n--- a/src/f2.py\n+++ b/src/f2.py\n@@ -1 +1,2 @@\n def f2():\n+    pass\n"
)


def generate(
    root: Path,
    events: int,
    runs: int = RUNS,
    per_milestone: int = EVENTS_PER_MILESTONE,
    repo: str = "bench__repo",
    first_run: int = 0,
    first_milestone: int = 0,
    mode: str = "standard",
) -> Store:
    """Runs x milestones x `per_milestone` events, written by DuckDB straight to JSONL (as the Recorder
    would) into `root/store`: runs bench-<first_run>... of `repo`, milestones m<first_milestone + 1>...
    Called again on the same root, it adds to the store (the arrivals of benchmarks/incremental.py)."""
    store = Store(root / "store")
    milestones = max(1, events // (runs * per_milestone))
    staging = root / f"staging-{repo}-{first_run}-{first_milestone}"
    root.mkdir(parents=True, exist_ok=True)
    import duckdb

    con = duckdb.connect()
    sql = Template((Path(__file__).parent / "generate_events.sql").read_text()).substitute(
        milestones=milestones,
        per_milestone=per_milestone,
        total=runs * milestones * per_milestone,
        staging=staging,
        repo=repo,
        first_run=first_run,
        first_milestone=first_milestone,
    )
    con.execute(sql)
    for part in staging.glob("p_run=*/p_mid=*/*.json"):
        run_id, mid = part.parent.parent.name.split("=")[1], part.parent.name.split("=")[1]
        files = store.milestone_run(repo, run_id, mid)
        files.dir.mkdir(parents=True, exist_ok=True)
        part.rename(files.trajectory)
        files.summary.write_text(
            json.dumps(
                {
                    "run_id": run_id,
                    "milestone_id": mid,
                    "status": "STUCK",
                    "turns": 125,
                    "hints_released": [1, 1],
                    "cost_usd": 0.0,
                    "wall_s": 1.0,
                    "synthetic": False,
                }
            )
        )
        files.test_results.write_text(
            json.dumps({"ground_truth_files": ["src/f1.py"], "candidate_files": ["src/f1.py", "src/f2.py"]})
        )
        files.final_diff.write_text(FINAL_DIFF)
        files.ground_truth.write_text(GROUND_TRUTH)
    for run_dir in store.run_dirs_of(repo):
        if (run_dir / RUN_METADATA).exists():
            continue
        (run_dir / RUN_METADATA).write_text(
            json.dumps(
                {
                    "run_id": run_dir.name,
                    "repo": repo,
                    "agent": "bench",
                    "model": "bench-model",
                    "synthetic": False,
                    "mode": mode,
                }
            )
        )
    shutil.rmtree(staging)
    return store


def python_stuck_points(tools: list[tuple], tests: list[tuple], v: dict) -> set[tuple]:
    """The four detectors of stuck_points.sql, row by row in Python (same inputs, same output)."""
    out = set()
    by_run: dict[tuple, list] = defaultdict(list)
    for row in tests:  # (repo, run, mid, seq, turn, green, signature)
        by_run[row[:3]].append(row)
    for key, runs in by_run.items():
        prev_sig, streak = None, []
        for _, _, _, seq, turn, green, sig in runs:
            failing = not green and sig is not None
            if failing and sig == prev_sig and streak:
                streak.append((seq, turn))
            else:
                _close(out, key, "same_error", streak, v["stuck_same_error_cycles"])
                streak = [(seq, turn)] if failing else []
            prev_sig = sig
        _close(out, key, "same_error", streak, v["stuck_same_error_cycles"])
    by_run = defaultdict(list)
    for row in tools:  # (repo, run, mid, seq, turn, key, observation, ok)
        by_run[row[:3]].append(row)
    steps = v["alternating_steps"]
    for key, rows in by_run.items():
        pair, err = [], []
        ends: list[tuple[int, list, int]] = []  # (tool index of the last window end, its ends, start seq)
        for i, (_, _, _, seq, turn, k, obs, ok) in enumerate(rows):
            prev = rows[i - 1] if i else None
            if prev and k == prev[5] and obs == prev[6]:
                pair.append((seq, turn))
            else:
                _close(out, key, "repeat_action_observation", pair, v["repeat_action_observation"])
                pair = [(seq, turn)]
            if not ok and prev and k == prev[5] and not prev[7] and err:
                err.append((seq, turn))
            else:
                _close(out, key, "repeat_action_error", err, v["repeat_action_error"])
                err = [(seq, turn)] if not ok else []
            window = rows[max(0, i - steps + 1) : i + 1]
            keys, obs_ = [w[5] for w in window], [w[6] for w in window]
            halves = (keys[0::2], keys[1::2], obs_[0::2], obs_[1::2])
            if len(window) == steps and len(set(keys)) == 2 and all(len(set(h)) == 1 for h in halves):
                if ends and ends[-1][0] == i - 1:  # the stretch goes on
                    ends[-1] = (i, ends[-1][1] + [(seq, turn)], ends[-1][2])
                else:
                    ends.append((i, [(seq, turn)], window[0][3]))
        _close(out, key, "repeat_action_observation", pair, v["repeat_action_observation"])
        _close(out, key, "repeat_action_error", err, v["repeat_action_error"])
        for _, stretch, start in ends:
            out.add((*key, "alternating", start, stretch[0][0], len(stretch) + steps - 1))
    return out


def _close(out: set, key: tuple, kind: str, stretch: list, threshold: int) -> None:
    if len(stretch) >= threshold:
        out.add((*key, kind, stretch[0][0], stretch[threshold - 1][0], len(stretch)))


def analytics_benchmarks(quick: bool) -> list[Result]:
    events = 1_000_000 if quick else 10_000_000
    rules = load_rules()
    variables = rules.analytics.model_dump()
    with tempfile.TemporaryDirectory(prefix="hf-bench-analytics-") as tmp:
        t0 = time.perf_counter()
        store = generate(Path(tmp), events)
        generated = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = load(store)
        load_s = time.perf_counter() - t0
        with connect(store) as con:
            t0 = time.perf_counter()
            built = build(con, variables)
            models_s = time.perf_counter() - t0
            tools = con.execute(
                "SELECT repo, run_id, milestone_id, seq, turn_id, action_key, obs_key, ok FROM stg_events "
                "WHERE is_tool ORDER BY repo, run_id, milestone_id, seq"
            ).fetchall()
            tests = con.execute(
                "SELECT repo, run_id, milestone_id, seq, turn_id, green, error_signature FROM stg_test_runs "
                "ORDER BY repo, run_id, milestone_id, seq"
            ).fetchall()
            sql = render(discover()["stuck_points"], variables)
            t0 = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TABLE stuck_points AS {sql}")
            stuck_s = time.perf_counter() - t0
            ours = set(
                con.execute(
                    "SELECT repo, run_id, milestone_id, kind, start_seq, signal_seq, length FROM stuck_points"
                ).fetchall()
            )
        t0 = time.perf_counter()
        theirs = python_stuck_points(tools, tests, variables)
        python_s = time.perf_counter() - t0
    same = ours == theirs
    size = f"{report.events:,} events in {len(report.loaded):,} files"
    return [
        Result(
            "analytics_load",
            "analytics",
            "-",
            load_s,
            None,
            None,
            target=60,
            target_kind="max_seconds",
            detail=f"JSONL -> Parquet -> DuckDB, {size} (generating them took {generated:.1f} s)",
            extra={"events": report.events, "files": len(report.loaded)},
        ).judge(),
        Result(
            "analytics_models",
            "analytics",
            "-",
            models_s,
            None,
            None,
            target=10,
            target_kind="max_seconds",
            detail=f"all {len(built)} SQL models over {size}",
            extra={m.name: m.rows for m in built},
        ).judge(),
        Result(
            "analytics_stuck_points",
            "analytics",
            "pure-Python detectors over the same rows in memory",
            stuck_s,
            python_s,
            python_s / stuck_s,
            target=50,
            target_kind="min_speedup",
            status="ok" if same else "error",
            detail=f"stuck_points over {size}: {len(ours):,} stretches"
            + ("" if same else f"; RESULTS DIFFER: SQL {len(ours)}, Python {len(theirs)}"),
            extra={"tool_events": len(tools), "test_runs": len(tests)},
        ).judge(),
    ]
