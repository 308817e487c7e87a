"""Scaling curves: how the cost grows with the input, as the exponent b of t = a * n^b.

    scaling_history_commits   `mine_history` (median of --repeats runs) on generated histories of
                              1,000, 10,000 and 30,000 commits (--quick: 1,000, 3,000, 10,000; 300 would
                              hold no release to plan between), benchmarks/history.py's generator.
                              Fitted against the mainline commits between the first and last release,
                              the part mining walks (a release every 400 mainline commits makes that a
                              step function of the commit count).
    scaling_events            analytics `load` + every SQL model on 1 and 10 million generated events
                              (--quick: 100,000 and 1 million), benchmarks/analytics.py's generator; a
                              size the analytics benchmark measured in the same invocation is reused.

b is fitted by least squares on log n, log t; the target is b <= 1.1 ("linear or better": a little
above 1 is noise on a shared machine). Fixed costs (process start, DuckDB set-up) flatten the curve
at small sizes, so b below 1 means that part is still visible, not that the work is sub-linear.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import git
from common import Result, loglog_fit, median_time

from harnessforge.gitio import GitRepo, resolve_repo
from harnessforge.mining.planner import mine_history
from harnessforge.rules import load_rules

GROUP = "scaling"
TARGET = 1.1  # max exponent: linear or better, with room for noise
COMMITS = {"full": (1_000, 10_000, 30_000), "quick": (1_000, 3_000, 10_000)}
EVENTS = {"full": (1_000_000, 10_000_000), "quick": (100_000, 1_000_000)}


def scaling_benchmarks(
    quick: bool, repeats: int, known_events: dict[int, dict[str, float]] | None = None, log: Callable = print
) -> list[Result]:
    mode = "quick" if quick else "full"
    return [history_curve(COMMITS[mode], repeats, log), events_curve(EVENTS[mode], known_events or {}, log)]


def history_curve(sizes: tuple[int, ...], repeats: int, log) -> Result:
    from history import generate

    rules, seconds, mainline = load_rules(), [], []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="hf-bench-scaling-") as tmp:
            src = generate(Path(tmp) / "history", n)
            bare = Path(tmp) / "history.git"
            git.Repo.clone_from(src, bare, bare=True)
            repo, spec = GitRepo(bare), resolve_repo(str(src))
            mainline.append(len(mine_history(repo, spec, rules).units))
            seconds.append(median_time(lambda r=repo, s=spec: mine_history(r, s, rules), repeats))
        log(f"mine_history, {n} commits: {seconds[-1]:.2f}s")
    # Mining walks the mainline between the first and the last release: that, not the commits after
    # the last release or on side branches, is the size of its input, so the fit is against it.
    points = ", ".join(f"{n:,} commits ({m:,} mainline in range)" for n, m in zip(sizes, mainline))
    what = f"`mine_history` (median of {repeats}) on generated histories of {points}"
    _, vs_commits = loglog_fit(sizes, seconds)
    return _curve(
        "scaling_history_commits",
        mainline,
        seconds,
        "mainline commits",
        what,
        repeats,
        {"commits": list(sizes), "exponent_vs_all_commits": vs_commits},
    )


def events_curve(sizes: tuple[int, ...], known: dict[int, dict[str, float]], log) -> Result:
    from analytics import generate

    from harnessforge.analytics.load import connect, load
    from harnessforge.analytics.sqlmodels import build

    variables = load_rules().analytics.model_dump()
    parts: dict[str, list[float]] = {"load": [], "models": []}
    for n in sizes:
        if n in known:
            measured = known[n]
        else:
            with tempfile.TemporaryDirectory(prefix="hf-bench-scaling-") as tmp:
                store = generate(Path(tmp), n)
                start = time.perf_counter()
                load(store)
                measured = {"load": time.perf_counter() - start}
                with connect(store) as con:
                    start = time.perf_counter()
                    build(con, variables)
                    measured["models"] = time.perf_counter() - start
        for k in parts:
            parts[k].append(measured[k])
        log(
            f"analytics, {n:,} events: load {measured['load']:.2f}s, models {measured['models']:.2f}s"
            + (" (from the analytics benchmark)" if n in known else "")
        )
    seconds = [a + b for a, b in zip(parts["load"], parts["models"])]
    exponents = {k: loglog_fit(sizes, v)[1] for k, v in parts.items()}
    what = "analytics `load` (JSONL -> Parquet -> DuckDB) + every SQL model on generated events, one run each"
    return _curve(
        "scaling_events",
        sizes,
        seconds,
        "events",
        what,
        1,
        {"seconds_by_part": parts, "exponent_by_part": exponents, "reused_sizes": sorted(set(sizes) & set(known))},
    )


def _curve(name: str, sizes, seconds: list[float], unit: str, what: str, repeats: int, extra: dict) -> Result:
    _, b = loglog_fit(sizes, seconds)
    linear = b <= TARGET
    points = ", ".join(f"{n:,} {unit} {s:.2f} s" for n, s in zip(sizes, seconds))
    verdict = "linear or better" if linear else "worse than linear"
    return Result(
        name,
        GROUP,
        "-",
        seconds[-1],
        None,
        None,
        target=TARGET,
        target_kind="max_value",
        value=b,
        unit="exponent",
        iterations=repeats,
        detail=f"{what}: {points}; grows as n^{b:.2f}: {verdict} (least-squares fit of log t on log n; "
        f"`ours` is the largest size)",
        scaling={"sizes": list(sizes), "seconds": seconds, "exponent": b, "linear_or_better": linear},
        extra=extra,
    ).judge()
