"""Run the benchmarks; write benchmarks/results/summary.json and summary.md.

    python benchmarks/run.py                  # everything, full size (30,000-commit history)
    python benchmarks/run.py --quick          # 3,000 commits, fewer iterations: a few minutes
    python benchmarks/run.py --only sandbox   # only some: mining, sandbox (= docker_exec,
                                              # sandbox_startup, local_exec), validation, harness,
                                              # analytics, incremental, prompt_cache, scaling;
                                              # comma-separated

Every number is the median of repeated runs, and every speed claim is a ratio against a
baseline measured in the same run on the same data (machines here are noisy; ratios are not),
except the sandbox start-up target, which is an absolute time. The harness benchmark (overhead of
the Navigator per Dev turn, model and tool time excluded) has no target; it is shown next to the
raw exec time measured in the same run. The prompt-cache result is a share of input tokens, not a
time, and the scaling curves report the fitted exponent of t = a * n^b (`value`, `unit`). With --only,
the results of the benchmarks not run are kept from the previous summary (each says when it was measured).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import traceback
from dataclasses import asdict, fields
from datetime import datetime, timezone
from pathlib import Path

import git

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Result, fmt_s, fmt_value, median_time, unavailable  # noqa: E402
from history import generate  # noqa: E402

from harnessforge.gitio import GitRepo, resolve_repo  # noqa: E402
from harnessforge.mining.planner import build_plan, mine_history  # noqa: E402
from harnessforge.rules import load_rules  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GROUPS = (
    "mining",
    "docker_exec",
    "sandbox_startup",
    "local_exec",
    "validation",
    "harness",
    "analytics",
    "incremental",
    "prompt_cache",
    "scaling",
)
SANDBOX_GROUPS = {"docker_exec", "sandbox_startup", "local_exec"}
ALIASES = {"sandbox": ("docker_exec", "sandbox_startup", "local_exec")}


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
            "mining",
            naive,
            ours,
            base,
            base / ours,
            "speedup",
            10.0,
            "min_speedup",
            detail=f"history walk, PR attribution, changelog, features and segmentation; {detail}",
            iterations=repeats,
        ).judge(),
        Result(
            f"full_plan_{commits}_commits",
            "mining",
            naive,
            full,
            base,
            base / full,
            "speedup",
            detail=f"mining plus every milestone's patches, acceptance tests, description and hint ladder; {detail}",
            iterations=repeats,
        ).judge(),
    ]


def machine() -> dict:
    info = {
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        docker = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True
        )
        info["docker_server"] = docker.stdout.strip() or docker.stderr.strip()[:200]
    except OSError:
        info["docker_server"] = "no docker CLI"
    return info


def previous_results() -> list[Result]:
    """The results in the current summary.json (older summaries were a bare list of mining results)."""
    try:
        data = json.loads((RESULTS / "summary.json").read_text())
    except (OSError, ValueError):
        return []
    rows = data if isinstance(data, list) else data.get("results", [])
    names = {f.name for f in fields(Result)}
    out = []
    for row in rows:
        row = {k: v for k, v in row.items() if k in names}
        row.setdefault("group", "mining")
        if isinstance(row.get("target"), (int, float)) and not row.get("target_kind"):
            row["target_kind"] = "min_speedup"
        try:
            out.append(Result(**row))
        except TypeError:
            continue
    return out


def _ratio_text(r: Result) -> str:
    if r.ratio is None:
        return "-"
    if r.ratio_kind == "speedup":
        return f"{r.ratio:.1f}x faster"
    return f"{r.ratio:.2f}x baseline" if r.ratio >= 0.1 else f"{r.ratio:.3f}x baseline"


def _extra_text(r: Result) -> str:
    """The breakdowns worth reading in the markdown (the json has everything)."""
    e, parts = r.extra, []
    if "sdk_floor" in e:
        parts.append(
            f"bare docker-py exec (floor) {fmt_s(e['sdk_floor']['median_s'])}, ours/floor "
            f"{e['ours_over_sdk_floor']:.2f}x, ours - raw {e['overhead_vs_raw_ms']:+.1f} ms"
        )
        parts.append(
            "floor phases " + ", ".join(f"{k[:-2]} {fmt_s(v)}" for k, v in e["sdk_floor_phases_median_s"].items())
        )
    if "phases_median_s" in e:
        parts.append("phases (median) " + ", ".join(f"{k} {fmt_s(v)}" for k, v in e["phases_median_s"].items()))
    if "stats" in e and "p90_ms" not in e:
        parts.append(f"p90 {fmt_s(e['stats']['p90_s'])}")
    if "close_median_s" in e:
        parts.append(f"close {fmt_s(e['close_median_s'])}")
    if "overhead_ms" in e:
        parts.append(f"overhead {e['overhead_ms']:.1f} ms per call")
    if "turns" in e and "overhead_breakdown" in e:
        parts.append(
            f"{e['turns']} turns; overhead median {e['median_ms']:.2f} ms, p90 {e['p90_ms']:.2f} ms; "
            f"raw `DockerSandbox.exec('true')` {fmt_s(e['raw_sandbox_exec_true']['median_s'])}"
            + (
                f", raw docker CLI exec {fmt_s(e['raw_docker_cli_exec_true']['median_s'])}"
                if e.get("raw_docker_cli_exec_true")
                else ""
            )
            + f"; overhead / DockerSandbox.exec {e['over_sandbox_exec_true']:.3f}x"
        )
        parts.append(
            f"turn wall (median) {fmt_s(e['turn_wall_median_s'])}: model {fmt_s(e['model_median_s'])}, "
            f"tool {fmt_s(e['tool_median_s'])}; overhead {e['overhead_share_of_turn_wall'] * 100:.2f}% "
            "of all turn time"
        )
        sp = e.get("overhead_split_ms", {})
        if sp.get("with_harness_sandbox_calls", {}).get("turns"):
            w, wo = sp["with_harness_sandbox_calls"], sp["without"]
            parts.append(
                f"bimodal: {w['turns']} turns with the harness's own sandbox calls (workspace snapshot "
                f"after a mutating tool) median {w['median_ms']:.1f} ms (p90 {w['p90_ms']:.1f}), "
                f"{wo['turns']} without median {wo['median_ms']:.1f} ms (p90 {wo['p90_ms']:.1f})"
            )
        parts.append(
            "overhead per turn (median/mean ms) "
            + ", ".join(f"{k} {v['median_ms']:.2f}/{v['mean_ms']:.2f}" for k, v in e["overhead_breakdown"].items())
        )
    elif "p90_ms" in e:
        parts.append(f"median {e['median_ms']:.2f} ms, p90 {e['p90_ms']:.2f} ms")
    if "parts_median_s" in e:
        parts.append("parts (median) " + ", ".join(f"{k} {fmt_s(v)}" for k, v in e["parts_median_s"].items()))
        parts.append("full rebuild " + ", ".join(f"{k} {fmt_s(v)}" for k, v in e["baseline_parts_s"].items()))
    if r.scaling:
        parts.append(f"sizes {r.scaling['sizes']}, seconds {[round(t, 3) for t in r.scaling['seconds']]}")
    if "isolation_argv" in e:
        parts.append(
            f"the {e['isolation']} command alone {fmt_s(e['isolation_argv']['median_s'])} "
            f"(+{e['isolation_argv_overhead_ms']:.1f} ms over bash), our Python around it "
            f"{e['python_wrapper_overhead_ms']:+.1f} ms"
        )
    return "; ".join(parts)


def write_summary(results: list[Result], quick: bool, info: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    doc = {"machine": info, "results": [asdict(r) for r in results]}
    (RESULTS / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# Benchmarks ({'quick' if quick else 'full'})",
        "",
        f"Machine: {info['cpus']} CPUs, load {', '.join(f'{x:.2f}' for x in info['loadavg'])}, "
        f"Docker {info['docker_server']}, Python {info['python']}, {info['platform']}.",
        "",
        "| benchmark | ours (median) | baseline (median) | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        met = {True: "yes", False: "**no**", None: "-"}[r.met] if r.status == "ok" else f"**{r.status}**"
        ours = fmt_value(r.value, r.unit) if r.unit else fmt_s(r.median_s)
        lines.append(
            f"| {r.name} | {ours} | {fmt_s(r.baseline_median_s)} | {_ratio_text(r)} | {r.target_text} | {met} |"
        )
    lines.append("")
    for r in results:
        when = f" _({r.mode}, {r.measured_at})_" if r.mode else ""
        base = f" Baseline: {r.baseline}." if r.baseline != "-" else ""
        extra = _extra_text(r)
        lines.append(f"- **{r.name}**{when}: {r.detail}.{base}" + (f" {extra}." if extra else ""))
    (RESULTS / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def selected(only: str | None) -> list[str]:
    if not only:
        return list(GROUPS)
    out: list[str] = []
    for name in (n.strip() for n in only.split(",") if n.strip()):
        if name not in GROUPS and name not in ALIASES:
            raise SystemExit(f"--only: unknown benchmark {name!r}; choose from {', '.join([*GROUPS, *ALIASES])}")
        out += [g for g in ALIASES.get(name, (name,)) if g not in out]
    return out


def _module(name: str):
    """A benchmark module, imported only when its group runs (Docker, DuckDB... load on demand)."""
    return importlib.import_module(name)


def guarded(group: str, run) -> list[Result]:
    """A group that crashes is one error row naming it and the cause; the other groups still run."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        why = f"failed: {type(e).__name__}: {str(e)[:500]}"
        print(f"{group}: {why}", flush=True)
        return [unavailable(group, group.split(",")[0], why, status="error")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes that finish in a few minutes")
    parser.add_argument("--repeats", type=int, default=3, help="mining: runs per measurement")
    parser.add_argument("--baseline-repeats", type=int, default=None)
    parser.add_argument("--only", help=f"comma-separated subset of {', '.join([*GROUPS, *ALIASES])}")
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="exec round trips per arm (50; --quick 20), also for the harness's raw exec",
    )
    parser.add_argument("--startups", type=int, default=None, help="sandbox starts and resets each (10; --quick 5)")
    args = parser.parse_args()
    groups = selected(args.only)
    commits = 3_000 if args.quick else 30_000
    mode = "quick" if args.quick else "full"
    info = machine()
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results: list[Result] = []
    iterations = args.iterations or (20 if args.quick else 50)
    startups = args.startups or (5 if args.quick else 10)
    sandbox_groups = set(groups) & SANDBOX_GROUPS
    if "mining" in groups:
        baseline_repeats = args.baseline_repeats or args.repeats
        results += guarded("mining", lambda: mining_benchmarks(commits, args.repeats, baseline_repeats))
    if sandbox_groups:
        run = lambda: _module("sandbox").sandbox_benchmarks(sandbox_groups, iterations, startups, commits)  # noqa: E731
        results += guarded(",".join(sorted(sandbox_groups)), run)
    if "harness" in groups:
        results += guarded("harness", lambda: _module("harness").harness_benchmarks(iterations, args.quick))
    if "validation" in groups:
        results += guarded("validation", lambda: _module("validation").validation_benchmarks(args.quick))
    if "analytics" in groups:
        results += guarded("analytics", lambda: _module("analytics").analytics_benchmarks(args.quick))
    if "incremental" in groups:
        run = lambda: _module("incremental").incremental_benchmarks(args.quick, args.repeats)  # noqa: E731
        results += guarded("incremental", run)
    if "prompt_cache" in groups:
        results += guarded("prompt_cache", lambda: _module("prompt_cache").prompt_cache_benchmarks(args.quick))
    if "scaling" in groups:
        by_name = {r.name: r for r in results if r.group == "analytics" and r.status == "ok"}
        known = {}  # the analytics benchmark's size, measured above: not generated again
        if {"analytics_load", "analytics_models"} <= set(by_name):
            known[by_name["analytics_load"].extra["events"]] = {
                "load": by_name["analytics_load"].median_s,
                "models": by_name["analytics_models"].median_s,
            }
        results += guarded("scaling", lambda: _module("scaling").scaling_benchmarks(args.quick, args.repeats, known))
    for r in results:
        r.mode, r.measured_at = mode, now
    kept = [r for r in previous_results() if r.group not in groups]
    order = {g: i for i, g in enumerate(GROUPS)}
    merged = sorted(kept + results, key=lambda r: order.get(r.group, len(order)))
    write_summary(merged, args.quick, info)


if __name__ == "__main__":
    main()
