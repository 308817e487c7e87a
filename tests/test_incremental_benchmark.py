"""benchmarks/incremental.py on a tiny generated store: both kinds of arrival take the automated path
and reach their milestone's distilled rows, and the results carry the full rebuild measured beside
them. Times are not judged here (the benchmark does that, on a million events)."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_incremental_benchmark_runs_on_a_tiny_store():
    sys.path.insert(0, str(BENCHMARKS))  # as benchmarks/run.py has it: `common`, `analytics` beside it
    from incremental import incremental_benchmarks

    lines: list[str] = []
    results = incremental_benchmarks(True, repeats=1, events=6_000, runs=2, log=lines.append)
    by_name = {result.name: result for result in results}
    assert set(by_name) == {"incremental_new_run", "incremental_next_milestone", "incremental_analytics"}
    assert all(result.status == "ok" for result in results), [result.detail for result in results]
    for name in ("incremental_new_run", "incremental_next_milestone"):
        result = by_name[name]
        assert result.ratio_kind == "cost" and result.target == 0.10 and result.met is not None
        assert 0 < result.median_s and 0 < result.ratio == result.median_s / result.baseline_median_s
        assert set(result.extra["parts_median_s"]) == {"load", "models", "repo_models", "distill"}
    assert "(3 runs cut)" in by_name["incremental_new_run"].detail  # m0001: its two runs and the new one
    assert "(1 run cut)" in by_name["incremental_next_milestone"].detail
    assert lines[0].startswith("incremental: 6,000 events, 6 milestone runs")
