"""Harness benchmark: what the Navigator itself costs per Dev turn, model time and tool time excluded.

    harness   The offline oracle (`OracleAgent`) driven by the `Navigator` through milestones of the
              example repository in the Docker sandbox (full: m01..m05 with the profiles of
              tests/test_run_chain.py, 30 turns at most per milestone; --quick: m01 and m02). Every
              turn is timed by wrapping methods (nothing in the harness is changed):

                  turn wall = model        OracleAgent.turn
                            + tool         ToolBox.call: the sandbox round trips and ToolBox's own work
                            + grading      on `submit`: the candidate's `sandbox.diff()` and Verifier.verify
                            + OVERHEAD     everything else the Navigator does for the turn: building the
                                           Event/Action models, Recorder.append (JSON + write + fsync),
                                           Mentor.observe, messages, hint events, and any sandbox call or
                                           file the harness makes on its own (e.g. a workspace diff snapshot
                                           after an edit), whatever navigator.py does today

              A turn runs from the start of its `agent.turn` to the start of the next one (the last turn of
              a milestone: to the end of its last recorded event). Reported next to the raw exec cost
              measured in the same run on a sandbox of the same image: `DockerSandbox.exec("true")` and the
              docker CLI's `docker exec ... bash -c true` (interleaved). No target: informational.

Two results: `harness_turn_overhead` (all overhead) and `harness_turn_overhead_in_process` (the same
without the sandbox calls the harness makes itself: what the Python around the Dev costs).
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from common import Result, interleaved, stats, unavailable
from sandbox import LABELS, _docker_environment, _unpin, shown

from harnessforge.envs.workspace import SANDBOX_UID, WORKSPACE
from harnessforge.examples import build_example_repo
from harnessforge.mining.planner import plan as plan_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store

GROUP = "harness"
NAMES = ("harness_turn_overhead", "harness_turn_overhead_in_process")
PROFILES = {"m01": "direct", "m02": "needs_hints", "m03": "stuck", "m04": "partial", "m05": "asks"}
QUICK_MILESTONES = ("m01", "m02")
MAX_TURNS = 30  # as tests/test_run_chain.py: the `stuck` milestone ends at this budget
CLI_BASELINE = "raw `docker exec -u 1000:1000 -w /workspace <container> bash -c true` (docker CLI), same image"

# Outer kinds of the spans (see Timeline): what a turn's time is attributed to.
EXCLUDED = ("model", "tool", "grading")


# ---- instrumentation ----------------------------------------------------------------------------------
@dataclass
class Span:
    outer: str  # the outermost wrapped call it happened in (its own kind at top level)
    kind: str
    start: float
    end: float
    exclusive: float  # its time minus the wrapped calls inside it
    info: dict = field(default_factory=dict)
    depth: int = 0  # 0: not inside another wrapped call
    root: int = 0  # the number of the top-level call it is part of


class Timeline:
    """Every call of the wrapped methods as a span, with exclusive times, by wrapping (as sandbox.Phases)."""

    def __init__(self):
        self.spans: list[Span] = []
        self.marks: list[Span] = []  # milestone spans: boundaries, not part of the attribution
        self._stack: list[list] = []  # [kind, start, time of wrapped calls inside, root number]
        self._roots = 0
        self._undo: list[tuple[object, str, object, bool]] = []

    def wrap(self, owner: object, attr: str, kind: str, info: Callable[..., dict] | None = None, mark=False) -> None:
        orig = getattr(owner, attr)
        own = attr in vars(owner)

        @functools.wraps(orig)
        def timed(*args, **kwargs):
            if mark:
                start = time.perf_counter()
                try:
                    return orig(*args, **kwargs)
                finally:
                    self.marks.append(Span(kind, kind, start, time.perf_counter(), 0.0, info(*args, **kwargs)))
            if not self._stack:
                self._roots += 1
            frame = [kind, time.perf_counter(), 0.0, self._roots]
            self._stack.append(frame)
            try:
                return orig(*args, **kwargs)
            finally:
                end = time.perf_counter()
                self._stack.pop()
                elapsed = end - frame[1]
                if self._stack:
                    self._stack[-1][2] += elapsed
                outer = self._stack[0][0] if self._stack else kind
                extra = info(*args, **kwargs) if info else {}
                span = Span(outer, kind, frame[1], end, elapsed - frame[2], extra, len(self._stack), frame[3])
                self.spans.append(span)

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, orig, own))

    def __enter__(self) -> Timeline:
        import docker.models.containers as containers

        import harnessforge.envs.docker_sandbox as ds
        import harnessforge.envs.sandbox as sandbox_base
        import harnessforge.harness.navigator as nav
        import harnessforge.harness.recorder as recorder
        from harnessforge.agents.oracle import OracleAgent
        from harnessforge.harness.mentor import Mentor
        from harnessforge.harness.tools import ToolBox
        from harnessforge.harness.verifier import Verifier
        from harnessforge.models.trajectory import Action, Event

        # One milestone: `MilestoneRun.run` (resumable runs), else the older `Navigator.run_milestone(m)`.
        if hasattr(nav, "MilestoneRun"):
            self.wrap(
                nav.MilestoneRun, "run", "milestone", lambda run, *a, **k: {"milestone": run.milestone.id}, mark=True
            )
            if hasattr(nav.MilestoneRun, "_snapshot"):  # the workspace diff saved after a mutating tool
                self.wrap(nav.MilestoneRun, "_snapshot", "snapshot")
        else:
            self.wrap(
                nav.Navigator, "run_milestone", "milestone", lambda _s, m, *a, **k: {"milestone": m.id}, mark=True
            )
        self.wrap(OracleAgent, "turn", "model")
        self.wrap(ToolBox, "call", "tool", lambda _self, tc, *a, **k: {"tool": tc.name})
        self.wrap(Verifier, "verify", "grading")
        self.wrap(sandbox_base.Sandbox, "diff", "diff")
        self.wrap(ds.DockerSandbox, "_run", "container")
        self.wrap(containers.Container, "put_archive", "container")
        self.wrap(Event, "__init__", "event")
        self.wrap(Action, "__init__", "event")
        self.wrap(
            recorder.Recorder,
            "append",
            "record",
            lambda _self, ev, *a, **k: {"turn": ev.turn_id, "action": ev.action.type, "milestone": ev.milestone_id},
        )
        self.wrap(Event, "model_dump_json", "record.json")
        self.wrap(os, "fsync", "fsync")
        for name in ("write_json", "write_patch"):
            self.wrap(recorder.Recorder, name, "artefact")
        self.wrap(Mentor, "observe", "mentor")
        return self

    def __exit__(self, *exc) -> None:
        for owner, attr, orig, own in reversed(self._undo):
            if own:
                setattr(owner, attr, orig)
            else:
                delattr(owner, attr)  # it was inherited: uncover the original again
        self._undo.clear()


@dataclass
class Turn:
    milestone: str
    index: int
    wall: float
    by: dict[str, float]  # exclusive seconds per outer kind and per "outer/kind" (see turns_of)
    tools: list[str]
    events: int  # events recorded in the turn (each one fsync'd)

    @property
    def excluded(self) -> float:
        return sum(self.by.get(k, 0.0) for k in EXCLUDED)

    @property
    def overhead(self) -> float:
        return self.wall - self.excluded

    @property
    def harness_sandbox(self) -> float:
        """Round trips to the container the harness makes itself (snapshots...), not in a tool or grading."""
        return sum(v for k, v in self.by.items() if k.endswith("/container") and k.split("/")[0] not in EXCLUDED)

    @property
    def in_process(self) -> float:
        return self.overhead - self.harness_sandbox


def turns_of(tl: Timeline) -> tuple[list[Turn], list[dict]]:
    """Cut the timeline into Dev turns; also each milestone's set-up and wind-down around its turns."""
    turns, milestones = [], []
    for ms in sorted(tl.marks, key=lambda s: s.start):
        inside = sorted((s for s in tl.spans if ms.start <= s.start < ms.end), key=lambda s: s.start)
        starts = [s.start for s in inside if s.kind == "model" and s.outer == "model"]
        if not starts:
            continue
        last_events = [
            s.end
            for s in inside
            if s.kind == "record" and s.info.get("turn") == len(starts) and s.info.get("action") != "milestone_end"
        ]
        ends = starts[1:] + [max(last_events, default=ms.end)]
        for i, (ws, we) in enumerate(zip(starts, ends), start=1):
            window = [s for s in inside if ws <= s.start < we]
            top = [s for s in window if s.depth == 0]
            grading_diffs = {  # the diff handed to the Verifier is part of grading
                top[j - 1].root
                for j, s in enumerate(top)
                if s.kind == "grading" and j > 0 and top[j - 1].kind == "diff"
            }
            by: dict[str, float] = defaultdict(float)
            for s in window:
                outer = "grading" if s.root in grading_diffs else s.outer
                by[outer] += s.exclusive
                by[f"{outer}/{s.kind}"] += s.exclusive
            tools = [s.info["tool"] for s in window if s.kind == "tool" and s.outer == "tool"]
            events = sum(1 for s in window if s.kind == "record")
            turns.append(Turn(ms.info["milestone"], i, we - ws, dict(by), tools, events))
        milestones.append(
            {
                "milestone": ms.info["milestone"],
                "turns": len(starts),
                "wall_s": ms.end - ms.start,
                "setup_s": starts[0] - ms.start,
                "wind_down_s": ms.end - ends[-1],
            }
        )
    return turns, milestones


# ---- the benchmark -------------------------------------------------------------------------------------
def harness_benchmarks(iterations: int, quick: bool, log: Callable[[str], None] = print) -> list[Result]:
    rules = load_rules()
    with tempfile.TemporaryDirectory(prefix="hf-bench-harness-") as tmp:
        store = Store(Path(tmp) / "store")
        repo = build_example_repo(Path(tmp) / "tasklite")
        key = plan_repo(store, str(repo), rules).plan.repo.key
        log(f"example repository planned: {key}")
        env, why = _docker_environment(store, key, rules, log)
        if env is None:
            log(f"harness benchmark unavailable: {why}")
            return [unavailable(n, GROUP, why) for n in NAMES]
        try:
            store.save_images(env.images)  # the private tags: every Environment of the run uses them
            return _guarded(lambda: _measure(store, key, env, iterations, quick, log), log)
        finally:
            _unpin(env)


def _guarded(run: Callable[[], list[Result]], log) -> list[Result]:
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        why = f"failed: {type(e).__name__}: {str(e)[:500]}"
        log(f"{GROUP}: {why}")
        return [unavailable(n, GROUP, why, status="error") for n in NAMES]


def _measure(store: Store, key: str, env, iterations: int, quick: bool, log) -> list[Result]:
    from harnessforge.agents.oracle import OracleAgent
    from harnessforge.envs.environment import validate
    from harnessforge.harness.navigator import Navigator

    rules = load_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": MAX_TURNS})})
    wanted = list(QUICK_MILESTONES if quick else PROFILES)
    start = time.perf_counter()
    valid = []
    for mid in wanted:
        (v,) = validate(store, key, rules, milestone=mid, backend="docker", log=lambda *_: None)
        if v.status == "valid":
            valid.append(mid)
    log(f"validated {wanted} in {time.perf_counter() - start:.1f}s: valid {valid}")
    if not valid:
        raise RuntimeError(f"none of {wanted} validates in Docker")

    agent = OracleAgent(seed=0, profiles={m: PROFILES[m] for m in valid})
    nav = Navigator(store, key, agent, rules, run_id=f"bench-{os.getpid()}", backend="docker", log=log)
    start = time.perf_counter()
    with Timeline() as tl:
        summaries = nav.run(valid)
    run_s = time.perf_counter() - start
    turns, milestones = turns_of(tl)
    if not turns:
        raise RuntimeError("the Navigator ran no Dev turn")
    outcome = ", ".join(f"{s.milestone_id} {s.status} in {s.turns}" for s in summaries)
    log(f"navigator: {len(turns)} turns in {run_s:.1f}s ({outcome})")

    raw = _raw_exec(env, store, valid[0], iterations)
    return _results(turns, milestones, raw, iterations, outcome, env, store, valid[0], log)


def _raw_exec(env, store: Store, mid: str, iterations: int) -> dict[str, dict]:
    """`DockerSandbox.exec("true")` and the docker CLI's `docker exec` on one container, interleaved."""
    m = store.load_plan(env.key).milestone(mid)
    sb = env.opener(m, LABELS)(m.verify_commit)
    try:
        arms: dict[str, Callable[[], object]] = {"sandbox_exec": lambda: sb.exec("true")}
        if shutil.which("docker"):
            user = f"{SANDBOX_UID}:{SANDBOX_UID}"
            cli = ["docker", "exec", "-u", user, "-w", WORKSPACE, sb.container.id, "bash", "-c"]
            if subprocess.run([*cli, "true"], capture_output=True).returncode != 0:
                raise RuntimeError("raw `docker exec ... true` failed")
            arms["docker_cli"] = lambda: subprocess.run([*cli, "true"], capture_output=True)
        if sb.exec("true").exit_code != 0:
            raise RuntimeError("DockerSandbox.exec('true') failed")
        return {k: stats(v) for k, v in interleaved(arms, iterations).items()}
    finally:
        sb.close()


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _results(
    turns: list[Turn], milestones: list[dict], raw: dict, iterations: int, outcome: str, env, store, mid: str, log
) -> list[Result]:
    n = len(turns)
    overhead, in_process = stats([t.overhead for t in turns]), stats([t.in_process for t in turns])
    sb_exec = raw["sandbox_exec"]["median_s"]
    cli = raw.get("docker_cli", {}).get("median_s")
    base = cli if cli is not None else sb_exec
    keys = sorted({k for t in turns for k in t.by})
    # Where the overhead goes: each part's median and mean per turn (mean x turns = the total).
    parts = {k: k for k in keys if k.split("/")[0] not in EXCLUDED and "/" in k}
    breakdown = {}
    for k in parts:
        values = [t.by.get(k, 0.0) * 1000 for t in turns]
        breakdown[k] = {"median_ms": _med(values), "mean_ms": statistics.fmean(values)}
    residual = [
        (t.overhead - sum(v for k, v in t.by.items() if "/" in k and k.split("/")[0] not in EXCLUDED)) * 1000
        for t in turns
    ]
    breakdown["bookkeeping (not wrapped: messages, loop, closures)"] = {
        "median_ms": _med(residual),
        "mean_ms": statistics.fmean(residual),
    }
    by_tool: dict[str, list[Turn]] = defaultdict(list)
    for t in turns:
        by_tool["+".join(t.tools) or "(no tool call)"].append(t)
    with_sb = [t.overhead * 1000 for t in turns if t.harness_sandbox > 0]
    without_sb = [t.overhead * 1000 for t in turns if t.harness_sandbox == 0]
    split = {  # the overhead is bimodal when the harness makes sandbox calls after some tools (snapshots)
        "with_harness_sandbox_calls": {
            "turns": len(with_sb),
            "median_ms": _med(with_sb),
            "p90_ms": stats(with_sb)["p90_s"] if with_sb else 0.0,
        },
        "without": {
            "turns": len(without_sb),
            "median_ms": _med(without_sb),
            "p90_ms": stats(without_sb)["p90_s"] if without_sb else 0.0,
        },
    }
    context = {
        "turns": n,
        "milestones": milestones,
        "outcome": outcome,
        "turn_wall_median_s": _med([t.wall for t in turns]),
        "model_median_s": _med([t.by.get("model", 0.0) for t in turns]),
        "tool_median_s": _med([t.by.get("tool", 0.0) for t in turns]),
        "tool_sandbox_median_s": _med([t.by.get("tool/container", 0.0) for t in turns]),
        "grading_total_s": sum(t.by.get("grading", 0.0) for t in turns),
        "harness_sandbox_median_ms": _med([t.harness_sandbox * 1000 for t in turns]),
        "harness_sandbox_turns": sum(t.harness_sandbox > 0 for t in turns),
        "overhead_share_of_turn_wall": sum(t.overhead for t in turns) / sum(t.wall for t in turns),
        "raw_sandbox_exec_true": raw["sandbox_exec"],
        "raw_docker_cli_exec_true": raw.get("docker_cli"),
        "overhead_breakdown": breakdown,
        "overhead_split_ms": split,
        "events_per_turn_mean": statistics.fmean(t.events for t in turns),
        "overhead_by_tool_ms": {
            k: {
                "turns": len(v),
                "overhead_median_ms": _med([t.overhead * 1000 for t in v]),
                "overhead_max_ms": max(t.overhead * 1000 for t in v),
                "harness_sandbox_median_ms": _med([t.harness_sandbox * 1000 for t in v]),
                "tool_median_ms": _med([t.by.get("tool", 0.0) * 1000 for t in v]),
            }
            for k, v in sorted(by_tool.items())
        },
        "setup_median_s": _med([m["setup_s"] for m in milestones]),
        "wind_down_median_s": _med([m["wind_down_s"] for m in milestones]),
    }
    what = (
        f"oracle Dev through {', '.join(m['milestone'] for m in milestones)} of the example repository "
        f"({outcome} turns; profiles {PROFILES}, max {MAX_TURNS} turns) in Docker, image "
        f"{shown(env.image_of(store.load_plan(env.key).milestone(mid)))}; {n} turns; raw exec: {iterations} "
        "interleaved iterations after 3 warm-up; no target (informational)"
    )
    baseline = CLI_BASELINE if cli is not None else "`DockerSandbox.exec('true')` (no docker CLI)"
    out = []
    for name, s, desc, extra in (
        (
            NAMES[0],
            overhead,
            "turn wall time minus model (agent.turn), tool execution (ToolBox.call) and grading "
            "(submit's diff + Verifier.verify): events, Recorder.append with fsync, Mentor.observe, messages, "
            "and the harness's own sandbox calls if any",
            context,
        ),
        (
            NAMES[1],
            in_process,
            "the overhead without the sandbox calls the harness makes itself (outside "
            "tools and grading): the Python around the Dev",
            {},
        ),
    ):
        m = s["median_s"]
        out.append(
            Result(
                name,
                GROUP,
                baseline,
                m,
                base,
                m / base,
                "cost",
                detail=f"{desc}; {what}",
                iterations=n,
                extra={
                    "stats": s,
                    "p90_ms": s["p90_s"] * 1000,
                    "median_ms": m * 1000,
                    "over_raw_docker_cli": m / cli if cli else None,
                    "over_sandbox_exec_true": m / sb_exec,
                    **extra,
                },
            ).judge()
        )
    cli_ms = cli * 1000 if cli else float("nan")
    log(
        f"harness overhead per turn: median {overhead['median_s'] * 1000:.2f} ms, p90 {overhead['p90_s'] * 1000:.2f} "
        f"ms over {n} turns (in-process {in_process['median_s'] * 1000:.2f} / {in_process['p90_s'] * 1000:.2f} ms); "
        f"raw DockerSandbox.exec('true') {sb_exec * 1000:.1f} ms, docker CLI {cli_ms:.1f} ms"
    )
    log(f"overhead split: {split}")
    log(
        "overhead breakdown (median / mean ms per turn): "
        + ", ".join(f"{k} {v['median_ms']:.2f}/{v['mean_ms']:.2f}" for k, v in breakdown.items())
    )
    return out
