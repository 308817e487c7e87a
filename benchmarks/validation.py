"""Validation throughput: milestones validated per minute with 1 worker and with 2.

    validation   `validate` (harnessforge/envs/environment.py) over every milestone of the example
                 repository in Docker, K=3 runs per side (the rules' `repeats`), with `workers=1` and
                 `workers=2`, 4 rounds alternating which goes first (--quick: 1). The ratio is the
                 2-worker speed-up (median 1-worker seconds / median 2-worker seconds = throughput
                 ratio; each round's own ratio is in the detail); both must give the same verdicts,
                 or the benchmark fails.

The env image is the example repository's, built (or found cached) and pinned under a private tag
as the sandbox benchmarks do, so a concurrent test session cannot remove it mid-run.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import Result, measured, unavailable
from sandbox import _docker_environment, _unpin

from harnessforge.envs.environment import validate
from harnessforge.examples import build_example_repo
from harnessforge.mining.planner import plan as plan_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store

GROUP = "validation"
NAME = "validation_2_workers"
TARGET = 1.3  # 2 workers vs 1 on 2 CPUs; see README "Benchmarks"


def validation_benchmarks(quick: bool, log: Callable[[str], None] = print) -> list[Result]:
    return measured(NAME, GROUP, TARGET, "min_speedup", lambda: _run(quick, log), log)


def _run(quick: bool, log) -> Result:
    rules = load_rules()
    with tempfile.TemporaryDirectory(prefix="hf-bench-validation-") as tmp:
        store = Store(Path(tmp) / "store")
        repo = build_example_repo(Path(tmp) / "tasklite")
        key = plan_repo(store, str(repo), rules).plan.repo.key
        env, why = _docker_environment(store, key, rules, log)
        if env is None:
            return unavailable(NAME, GROUP, why, TARGET, "min_speedup")
        try:
            store.save_images(env.images)  # the private tags: validate's own Environment uses them
            return _measure(store, key, rules, 1 if quick else 4, log)
        finally:
            _unpin(env)


def _measure(store: Store, key: str, rules, rounds: int, log) -> Result:
    times: dict[int, list[float]] = {1: [], 2: []}
    load: dict[int, list[float]] = {1: [], 2: []}  # 1-minute load average after each run: the machine is shared
    verdicts: dict[int, list] = {}
    for r in range(rounds):
        for workers in (1, 2) if r % 2 == 0 else (2, 1):
            start = time.perf_counter()
            results = validate(store, key, rules, backend="docker", log=lambda *_: None, workers=workers)
            times[workers].append(time.perf_counter() - start)
            load[workers].append(os.getloadavg()[0])
            verdicts[workers] = [(v.milestone_id, v.status, v.fail_to_pass, v.pass_to_pass, v.flaky) for v in results]
            log(
                f"validate, {workers} worker(s): {len(results)} milestones in {times[workers][-1]:.1f}s "
                f"(load {load[workers][-1]:.1f})"
            )
    if verdicts[1] != verdicts[2]:
        raise RuntimeError(f"2 workers gave other verdicts than 1: {verdicts[2]} vs {verdicts[1]}")
    n = len(verdicts[1])
    one, two = statistics.median(times[1]), statistics.median(times[2])
    per_min = {w: n / (statistics.median(t) / 60) for w, t in times.items()}
    statuses = ", ".join(f"{mid} {status}" for mid, status, *_ in verdicts[1])
    paired = [a / b for a, b in zip(times[1], times[2])]  # each round's 1-worker / 2-worker, run back to back
    return Result(
        NAME,
        GROUP,
        "the same validation with 1 worker (milestones one after another)",
        two,
        one,
        one / two,
        "speedup",
        TARGET,
        "min_speedup",
        iterations=rounds,
        detail=f"`validate` of all {n} milestones of the example repository in Docker, K={rules.environments.repeats} "
        f"runs per side, 2 workers vs 1 ({rounds} round(s), alternating order): {per_min[1]:.1f} -> "
        f"{per_min[2]:.1f} milestones/min; same verdicts ({statuses}); 1-min load average after the runs "
        f"{statistics.median(load[1] + load[2]):.1f} on {os.cpu_count()} CPUs; per-round ratios "
        f"{', '.join(f'{x:.2f}' for x in paired)}",
        extra={
            "milestones": n,
            "repeats": rules.environments.repeats,
            "seconds": {str(w): t for w, t in times.items()},
            "milestones_per_minute": {str(w): v for w, v in per_min.items()},
            "loadavg_after": {str(w): v for w, v in load.items()},
            "paired_ratios": paired,
        },
    ).judge()
