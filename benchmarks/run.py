"""Run the benchmarks; write benchmarks/results/summary.json and summary.md.

    python benchmarks/run.py            # full size (30,000-commit history)
    python benchmarks/run.py --quick    # 3,000 commits, a minute or two

Every number is the median of repeated runs, and every speed claim is a ratio against a
baseline measured in the same run on the same data (machines here are noisy; ratios are not).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import git

sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import generate  # noqa: E402

from harnessforge.gitio import GitRepo, resolve_repo  # noqa: E402
from harnessforge.mining.planner import build_plan, mine_history  # noqa: E402
from harnessforge.rules import load_rules  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Result:
    name: str
    baseline: str
    median_s: float
    baseline_median_s: float
    ratio: float  # baseline time / our time: how many times faster
    target: float | None
    met: bool | None
    detail: str


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def naive_walk(path: Path, start: str, end: str) -> int:
    """The baseline: GitPython, one diff (with patch) per mainline commit."""
    repo = git.Repo(path)
    lines = 0
    for commit in repo.iter_commits(f"{start}..{end}", first_parent=True):
        for d in commit.parents[0].diff(commit, create_patch=True):
            lines += d.diff.count(b"\n")
    return lines


def mining_benchmarks(commits: int, repeats: int, baseline_repeats: int) -> list[Result]:
    rules = load_rules()
    with tempfile.TemporaryDirectory(prefix="hf-bench-") as tmp:
        src = generate(Path(tmp) / "history", commits)
        bare = Path(tmp) / "history.git"
        git.Repo.clone_from(src, bare, bare=True)
        repo, spec = GitRepo(bare), resolve_repo(str(src))
        mined = mine_history(repo, spec, rules)
        n_main = len(mined.units)
        detail = (
            f"{commits} commits ({n_main} mainline, {mined.from_ref}..{mined.to_ref}), {len(mined.segments)} milestones"
        )
        print(f"history: {detail}", flush=True)
        ours = median_time(lambda: mine_history(repo, spec, rules), repeats)
        print(f"mine_history: {ours:.2f}s", flush=True)
        full = median_time(lambda: build_plan(mine_history(repo, spec, rules), spec), repeats)
        print(f"mine_history + build_plan: {full:.2f}s", flush=True)
        base = median_time(lambda: naive_walk(bare, mined.start, mined.end), baseline_repeats)
        print(f"naive GitPython walk: {base:.2f}s", flush=True)
    naive = "GitPython per-commit diff walk (create_patch=True) over the same mainline range"
    return [
        Result(
            f"mining_{commits}_commits",
            naive,
            ours,
            base,
            base / ours,
            10.0,
            base / ours >= 10.0,
            f"history walk, PR attribution, changelog, features and segmentation; {detail}",
        ),
        Result(
            f"full_plan_{commits}_commits",
            naive,
            full,
            base,
            base / full,
            None,
            None,
            f"mining plus every milestone's patches, acceptance tests, description and hint ladder; {detail}",
        ),
    ]


def write_summary(results: list[Result], quick: bool) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "summary.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    lines = [
        f"# Benchmarks ({'quick' if quick else 'full'})",
        "",
        "| benchmark | ours (s) | baseline (s) | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        target = f">= {r.target:g}x" if r.target else "-"
        met = {True: "yes", False: "**no**", None: "-"}[r.met]
        lines.append(f"| {r.name} | {r.median_s:.2f} | {r.baseline_median_s:.2f} | {r.ratio:.1f}x | {target} | {met} |")
    lines += ["", *[f"- **{r.name}**: {r.detail}. Baseline: {r.baseline}." for r in results]]
    (RESULTS / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes that finish in a few minutes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-repeats", type=int, default=None)
    args = parser.parse_args()
    commits = 3_000 if args.quick else 30_000
    results = mining_benchmarks(commits, args.repeats, args.baseline_repeats or args.repeats)
    write_summary(results, args.quick)


if __name__ == "__main__":
    main()
