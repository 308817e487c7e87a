"""What every benchmark shares: the result record, timing helpers and how results are shown.

A result's `ratio` is always ours against a baseline measured in the same run on the same data:
`ratio_kind="speedup"` is baseline/ours (higher is better), `ratio_kind="cost"` is ours/baseline
(lower is better, 1.0 = no overhead). A target is one of
    min_speedup   ratio >= target        (mining: "10x faster than the naive walk")
    max_cost      ratio <= target        (sandbox exec: "at most 1.2x the raw docker exec")
    max_seconds   median_s <= target     (sandbox start-up: "ready within 2 s")
    min_value     value >= target        (a measure that is not a time: prompt-cache share of input tokens)
    max_value     value <= target        (scaling curves: the fitted exponent b of t = a * n^b)
Every result has the same fields; those that do not apply are None (a share has no median seconds).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Result:
    name: str
    group: str  # what `--only` selects: mining, docker_exec, sandbox_startup, local_exec
    baseline: str  # what the baseline is ("-" when there is none)
    median_s: float | None
    baseline_median_s: float | None
    ratio: float | None
    ratio_kind: str = "speedup"  # "speedup" (baseline/ours) or "cost" (ours/baseline)
    target: float | None = None
    target_kind: str | None = None  # "min_speedup" | "max_cost" | "max_seconds" | "min_value" | "max_value"
    met: bool | None = None
    status: str = "ok"  # "ok", "unavailable" (no Docker engine, no image...) or "error"; detail says why
    detail: str = ""
    iterations: int | None = None
    extra: dict = field(default_factory=dict)  # breakdowns and secondary numbers
    mode: str = ""  # "quick" | "full", filled in by run.py
    measured_at: str = ""
    value: float | None = None  # a measure that is not seconds (see `unit`), judged by min_value / max_value
    unit: str = ""  # of `value`: "share" (0..1) or "exponent"
    scaling: dict | None = None  # scaling curves: sizes, seconds, exponent, linear_or_better

    def judge(self) -> "Result":
        """Set `met` from the target (None when there is no target or nothing was measured)."""
        if self.target is None or self.status != "ok":
            self.met = None
        elif self.target_kind == "min_speedup":
            self.met = self.ratio is not None and self.ratio >= self.target
        elif self.target_kind == "max_cost":
            self.met = self.ratio is not None and self.ratio <= self.target
        elif self.target_kind == "max_seconds":
            self.met = self.median_s is not None and self.median_s <= self.target
        elif self.target_kind == "min_value":
            self.met = self.value is not None and self.value >= self.target
        elif self.target_kind == "max_value":
            self.met = self.value is not None and self.value <= self.target
        else:
            raise ValueError(f"unknown target kind {self.target_kind!r}")
        return self

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return {
            "min_speedup": f">= {self.target:g}x faster",
            "max_cost": f"<= {self.target:g}x baseline",
            "max_seconds": f"<= {self.target:g} s",
            "min_value": f">= {fmt_value(self.target, self.unit)}",
            "max_value": f"<= {fmt_value(self.target, self.unit)}",
        }[self.target_kind]


def unavailable(
    name: str,
    group: str,
    reason: str,
    target: float | None = None,
    kind: str | None = None,
    status: str = "unavailable",
) -> Result:
    """A benchmark that could not be measured ("unavailable": no Docker...; "error": it broke), and why."""
    return Result(name, group, "-", None, None, None, target=target, target_kind=kind, status=status, detail=reason)


def measured(
    name: str,
    group: str,
    target: float | None,
    kind: str | None,
    measure: Callable[[], Result],
    log: Callable[[str], None] = print,
) -> list[Result]:
    """One benchmark's result, or an error row with the cause when it breaks (its target still shown)."""
    try:
        return [measure()]
    except Exception as e:  # noqa: BLE001
        why = f"failed: {type(e).__name__}: {str(e)[:500]}"
        log(f"{group}: {why}")
        return [unavailable(name, group, why, target, kind, status="error")]


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(arms: dict[str, Callable[[], object]], iterations: int, warmup: int = 3) -> dict[str, list[float]]:
    """Time every arm `iterations` times, rotating their order each round so drift hits all alike."""
    names = list(arms)
    for _ in range(warmup):
        for name in names:
            arms[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(iterations):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            arms[name]()
            times[name].append(time.perf_counter() - start)
    return times


def stats(times: Sequence[float]) -> dict[str, float]:
    """Median, quartiles, p90, min of a sample (seconds)."""
    ordered = sorted(times)
    q = statistics.quantiles(ordered, n=20) if len(ordered) >= 2 else [ordered[0]] * 19
    return {"median_s": statistics.median(ordered), "p25_s": q[4], "p75_s": q[14], "p90_s": q[17], "min_s": ordered[0]}


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "share":
        return f"{value * 100:.1f}%"
    if unit == "exponent":
        return f"n^{value:.2f}"
    return f"{value:g} {unit}".strip()


def loglog_fit(sizes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """(a, b) of t = a * n^b by least squares on logs: b is how cost grows with size (1: linearly)."""
    fit = statistics.linear_regression([math.log(n) for n in sizes], [math.log(t) for t in seconds])
    return math.exp(fit.intercept), fit.slope


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
