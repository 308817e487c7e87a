"""Sandbox benchmarks: the cost of a tool call and of a ready milestone sandbox.

    docker_exec       `DockerSandbox.exec` of small commands (`true`, `cat` of a small file, `ls`)
                      against raw `docker exec` via the docker CLI on the same container.
                      Target: ours <= 1.2x raw. A third arm, the bare docker-py calls (exec_create,
                      exec_start, exec_inspect) on the same API client, shows the floor of the SDK path.
    sandbox_startup   From the cached env image to a ready sandbox at a new commit: a fresh
                      `DockerSandbox` (through `Environment.opener`) and `sandbox.reset(other)` on a
                      live one. Target: <= 2 s. Measured on the example repository (tasklite) and on the
                      generated history of benchmarks/history.py (3,000 commits with --quick, else
                      30,000) in the same image, since the workspace is rebuilt from the repo's history.
    local_exec        `LocalSandbox.exec("true")` against `subprocess.run(["bash", "-c", "true"])`:
                      ratio and absolute overhead (no target).

The example repository is built by `harnessforge.examples.build_example_repo`, planned into a
temporary store and its env image built (cached when it exists), as tests/conftest.py does.
Without a Docker engine (or image) the Docker benchmarks are reported "unavailable" with the reason;
the local one still runs.
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
from pathlib import Path

import docker
import git
from common import Result, interleaved, stats, unavailable

from harnessforge.envs import engine
from harnessforge.envs.environment import Environment, build
from harnessforge.envs.local_sandbox import isolation_available
from harnessforge.envs.sandbox import Limits, SandboxSpec
from harnessforge.envs.workspace import SANDBOX_UID, WORKSPACE
from harnessforge.errors import HarnessForgeError
from harnessforge.examples import build_example_repo
from harnessforge.mining.planner import plan as plan_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store

GROUPS = ("docker_exec", "sandbox_startup", "local_exec")
EXEC_TARGET = 1.2  # ours / raw docker exec
STARTUP_TARGET_S = 2.0
LABELS = {"harnessforge.stage": "benchmark"}
PRIVATE_REPO = "harnessforge/benchmark"  # a private tag of the env image for the run
ORIGINAL_TAGS: dict[str, str] = {}  # private tag -> the repo's tag, for the summary
COMMANDS = {"true": "true", "cat": "cat README.md", "ls": "ls"}
CLI_BASELINE = "raw `docker exec -u 1000:1000 -w /workspace <container> bash -c CMD` (docker CLI), same container"


def sandbox_benchmarks(
    groups: set[str], iterations: int, startups: int, history_commits: int, log: Callable[[str], None] = print
) -> list[Result]:
    rules = load_rules()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="hf-bench-sandbox-") as tmp:
        store = Store(Path(tmp) / "store")
        repo = build_example_repo(Path(tmp) / "tasklite")
        key = plan_repo(store, str(repo), rules).plan.repo.key
        log(f"example repository planned: {key}")
        if "local_exec" in groups:
            results += _guarded(lambda: local_exec(store, key, rules, iterations, log), "local_exec", log)
        docker_groups = groups & {"docker_exec", "sandbox_startup"}
        if docker_groups:
            env, why = _docker_environment(store, key, rules, log)
            if env is None:
                log(f"Docker benchmarks unavailable: {why}")
                for group in sorted(docker_groups):
                    results += [unavailable(n, group, why, t, k) for n, t, k in _names(group, history_commits)]
            else:
                try:
                    if "docker_exec" in groups:
                        results += _guarded(lambda: docker_exec(env, iterations, log), "docker_exec", log)
                    if "sandbox_startup" in groups:
                        names = _names("sandbox_startup", history_commits)
                        results += _guarded(
                            lambda: sandbox_startup(env, startups, log), "sandbox_startup", log, names[:2]
                        )
                        run = lambda: history_startup(env, Path(tmp), history_commits, startups, log)  # noqa: E731
                        results += _guarded(run, "sandbox_startup", log, names[2:])
                finally:
                    _unpin(env)
    return results


def _names(group: str, history_commits: int = 0) -> list[tuple[str, float | None, str | None]]:
    """The results a group produces: (name, target, target kind)."""
    if group == "docker_exec":
        return [(f"docker_exec_{n}", EXEC_TARGET, "max_cost") for n in COMMANDS]
    if group == "sandbox_startup":
        return [
            (f"sandbox_{kind}_{what}", STARTUP_TARGET_S, "max_seconds")
            for what in ("example", f"history_{history_commits}_commits")
            for kind in ("fresh", "reset")
        ]
    return [("local_exec_true", None, None)]


def _guarded(run: Callable[[], list[Result]], group: str, log, names: list[tuple] | None = None) -> list[Result]:
    """A benchmark that breaks is reported as an error with its cause; the others still run."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        why = f"failed: {type(e).__name__}: {str(e)[:500]}"
        log(f"{group}: {why}")
        names = names or _names(group)
        return [unavailable(n, group, why, t, k, status="error") for n, t, k in names]


# ---- setup ----------------------------------------------------------------------------------------
def _docker_environment(store: Store, key: str, rules, log) -> tuple[Environment | None, str]:
    """The example repo's Docker `Environment` with its image built, or None and the reason."""
    try:
        engine.connect()
    except HarnessForgeError as e:
        return None, f"Docker unavailable, not measured: {e}"
    for attempt in range(3):
        try:
            start = time.perf_counter()
            images = build(store, key, rules, log=lambda *_: None)
            log(f"env image ready in {time.perf_counter() - start:.1f}s: {[i.tag for i in images.images]}")
        except HarnessForgeError as e:
            return None, f"not measured: the env image build failed: {e}"
        if not images.images or images.failures:
            return None, f"not measured: the env image build failed: {images.failures}"
        env = Environment(store, key, rules, backend="docker")
        # Start sandboxes from a private tag of the same image: a concurrent test session that removes
        # the repo's tag (tests/conftest.py does, to force a rebuild) then cannot pull it away mid-run.
        try:
            for record in env.images.images:
                private = f"{record.env_hash}-{os.getpid()}"
                env.client.images.get(record.image_id).tag(PRIVATE_REPO, private)
                ORIGINAL_TAGS[f"{PRIVATE_REPO}:{private}"] = record.tag
                record.tag = f"{PRIVATE_REPO}:{private}"
            return env, ""
        except docker.errors.NotFound:  # removed between the build and the pin: build it again
            _unpin(env)
            log(f"the env image was removed before it was pinned (attempt {attempt + 1}); building it again")
    return None, "not measured: the env image kept being removed by a concurrent session before it was pinned"


def shown(tag: str) -> str:
    return ORIGINAL_TAGS.get(tag, tag)


def _unpin(env: Environment) -> None:
    for record in env.images.images:
        if record.tag.startswith(f"{PRIVATE_REPO}:"):
            try:
                env.client.images.remove(record.tag, noprune=True)
            except docker.errors.APIError:
                pass


def _milestone_commits(store: Store, key: str) -> list[str]:
    """The plan's milestone boundaries, oldest first (each a commit a milestone sandbox opens at)."""
    plan = store.load_plan(key)
    return [plan.from_commit, *(m.verify_commit for m in plan.milestones)]


# ---- (a) a tool call through DockerSandbox.exec vs the raw docker CLI -------------------------------
def docker_exec(env: Environment, iterations: int, log) -> list[Result]:
    group = "docker_exec"
    if shutil.which("docker") is None:
        why = "the docker CLI is not on PATH: no raw `docker exec` baseline"
        return [unavailable(n, group, why, t, k) for n, t, k in _names(group)]
    m = env.store.load_plan(env.key).milestones[-1]
    sb = env.opener(m, LABELS)(m.verify_commit)
    try:
        cid, api = sb.container.id, sb.api
        user = f"{SANDBOX_UID}:{SANDBOX_UID}"
        cli = ["docker", "exec", "-u", user, "-w", WORKSPACE, cid, "bash", "-c"]
        results = []
        for name, cmd in COMMANDS.items():
            ours_out = sb.exec(cmd)
            raw_out = subprocess.run([*cli, cmd], capture_output=True)
            if ours_out.exit_code != 0 or raw_out.returncode != 0 or ours_out.stdout.encode() != raw_out.stdout:
                raise RuntimeError(f"{cmd!r}: ours {ours_out} differs from raw {raw_out}")
            phases: dict[str, list[float]] = defaultdict(list)

            def sdk(cmd=cmd, phases=phases):
                t0 = time.perf_counter()
                ex = api.exec_create(cid, ["bash", "-c", cmd], user=user, workdir=WORKSPACE)
                t1 = time.perf_counter()
                api.exec_start(ex["Id"], demux=True)
                t2 = time.perf_counter()
                api.exec_inspect(ex["Id"])
                t3 = time.perf_counter()
                phases["exec_create_s"].append(t1 - t0)
                phases["exec_start_s"].append(t2 - t1)
                phases["exec_inspect_s"].append(t3 - t2)

            times = interleaved(
                {
                    "ours": lambda cmd=cmd: sb.exec(cmd),
                    "raw": lambda cmd=cmd: subprocess.run([*cli, cmd], capture_output=True),
                    "sdk": sdk,
                },
                iterations,
            )
            ours, raw, floor = (stats(times[k]) for k in ("ours", "raw", "sdk"))
            o, r, f = ours["median_s"], raw["median_s"], floor["median_s"]
            log(f"exec {cmd!r}: ours {o * 1000:.1f} ms, raw docker exec {r * 1000:.1f} ms, sdk floor {f * 1000:.1f} ms")
            results.append(
                Result(
                    f"docker_exec_{name}",
                    group,
                    CLI_BASELINE,
                    o,
                    r,
                    o / r,
                    "cost",
                    EXEC_TARGET,
                    "max_cost",
                    detail=f"`DockerSandbox.exec({cmd!r})` round trip (exec_create, exec_start, exec_inspect; "
                    f"timeout wrapper, sandbox env) vs the docker CLI on the same container, image {shown(sb.image)}; "
                    f"{iterations} interleaved iterations after 3 warm-up",
                    iterations=iterations,
                    extra={
                        "ours": ours,
                        "raw_cli": raw,
                        "sdk_floor": floor,
                        "overhead_vs_raw_ms": (o - r) * 1000,
                        "ours_over_sdk_floor": o / f,
                        "sdk_floor_phases_median_s": {k: statistics.median(v) for k, v in phases.items()},
                    },
                ).judge()
            )
        return results
    finally:
        sb.close()


# ---- (b) cached image -> ready sandbox at a new commit -----------------------------------------------
class Phases:
    """Wall time per phase of each sample, by wrapping the functions a sandbox start calls."""

    def __init__(self):
        self.current: dict[str, float] = defaultdict(float)
        self.samples: list[dict[str, float]] = []
        self._undo: list[tuple[object, str, object]] = []

    def wrap(self, owner: object, attr: str, label: Callable[..., str] | str) -> None:
        orig = getattr(owner, attr)

        @functools.wraps(orig)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return orig(*args, **kwargs)
            finally:
                name = label(*args, **kwargs) if callable(label) else label
                self.current[name] += time.perf_counter() - start

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, orig))

    def cut(self, keep: bool = True) -> None:
        if keep:
            self.samples.append(dict(self.current))
        self.current.clear()

    def medians(self) -> dict[str, float]:
        names = sorted({n for s in self.samples for n in s})
        return {n: statistics.median(s.get(n, 0.0) for s in self.samples) for n in names}

    def __enter__(self) -> "Phases":
        import docker.models.containers as containers

        import harnessforge.envs.docker_sandbox as ds
        import harnessforge.envs.workspace as ws

        self.wrap(containers.ContainerCollection, "run", "container_create_start")
        self.wrap(containers.Container, "put_archive", "put_archive")
        self.wrap(ds, "workspace_tar", "workspace_tar")
        self.wrap(
            ws,
            "_git",
            lambda cwd, *a, **kw: "workspace_tar.git_pack" if a[0] == "pack-objects" else "workspace_tar.git_other",
        )
        self.wrap(ds.DockerSandbox, "_run", "exec_in_container")
        return self

    def __exit__(self, *exc) -> None:
        for owner, attr, orig in reversed(self._undo):
            setattr(owner, attr, orig)


def _startup_pair(
    name: str, open_at: Callable[[str], object], commits: list[str], startups: int, what: str, log
) -> list[Result]:
    """(b1) a fresh sandbox at each of `startups` commits, (b2) `reset` of one live sandbox to each."""
    group = "sandbox_startup"

    def check(sb, commit):
        head = sb.exec("git rev-parse HEAD").stdout.strip()
        if head != commit:
            raise RuntimeError(f"sandbox at {head[:10]}, expected {commit[:10]}")

    fresh, closes = [], []
    with Phases() as ph:
        for i in range(startups + 1):  # the first start is a warm-up (page cache, image layers)
            commit = commits[i % len(commits)]
            start = time.perf_counter()
            sb = open_at(commit)
            elapsed = time.perf_counter() - start
            ph.cut(keep=i > 0)
            try:
                check(sb, commit)
            finally:
                t = time.perf_counter()
                sb.close()
                closes.append(time.perf_counter() - t)
                ph.cut(keep=False)  # the check and close are not part of the start
            if i > 0:
                fresh.append(elapsed)
        fresh_phases = ph.medians()
    resets = []
    sb = open_at(commits[0])
    try:
        with Phases() as ph:
            for i in range(startups):
                commit = commits[(i + 1) % len(commits)]  # always another commit than the current one
                start = time.perf_counter()
                sb.reset(commit)
                resets.append(time.perf_counter() - start)
                ph.cut()
                check(sb, commit)
                ph.cut(keep=False)
            reset_phases = ph.medians()
    finally:
        sb.close()
    f, r = stats(fresh), stats(resets)
    log(f"{what}: fresh sandbox {f['median_s']:.3f}s {fresh_phases}; reset {r['median_s']:.3f}s {reset_phases}")
    common = f"{startups} samples over {len(set(commits))} distinct commits; {what}"
    return [
        Result(
            f"sandbox_fresh_{name}",
            group,
            "-",
            f["median_s"],
            None,
            None,
            target=STARTUP_TARGET_S,
            target_kind="max_seconds",
            iterations=startups,
            detail=f"(b1) cached env image -> ready `DockerSandbox` at a new commit (container start, workspace "
            f"with history to the commit, prepare steps); {common}",
            extra={"stats": f, "phases_median_s": fresh_phases, "close_median_s": statistics.median(closes)},
        ).judge(),
        Result(
            f"sandbox_reset_{name}",
            group,
            "-",
            r["median_s"],
            None,
            None,
            target=STARTUP_TARGET_S,
            target_kind="max_seconds",
            iterations=startups,
            detail=f"(b2) `sandbox.reset(other_commit)` on a live `DockerSandbox`; {common}",
            extra={"stats": r, "phases_median_s": reset_phases},
        ).judge(),
    ]


def sandbox_startup(env: Environment, startups: int, log) -> list[Result]:
    commits = _milestone_commits(env.store, env.key)
    m = env.store.load_plan(env.key).milestones[-1]
    what = f"example repository {env.key} ({len(commits)} milestone boundaries), image {shown(env.image_of(m))}"
    return _startup_pair("example", env.opener(m, LABELS), commits, startups, what, log)


def history_startup(env: Environment, tmp: Path, commits_n: int, startups: int, log) -> list[Result]:
    """The same on the long generated history of history.py, in the example repo's image.

    The image only brings the toolchain; the workspace (the whole history up to the commit) is what
    grows with the repository, so this shows how start-up scales.
    """
    from history import generate

    from harnessforge.envs.docker_sandbox import DockerSandbox
    from harnessforge.gitio import ensure_clone, resolve_repo

    start = time.perf_counter()
    src = generate(tmp / "history", commits_n)
    bare = tmp / "history.git"
    ensure_clone(resolve_repo(str(src)), bare)  # the store's clone cache, reachability bitmap included
    log(f"generated history of {commits_n} commits in {time.perf_counter() - start:.1f}s")
    tips = git.Git(bare).execute(["git", "rev-list", "--first-parent", f"--max-count={startups + 1}", "HEAD"]).split()
    m = env.store.load_plan(env.key).milestones[-1]
    recipe, image = env.recipe(m), env.image_of(m)
    limits = Limits.from_rules(env.rules.environments)

    def open_at(commit: str) -> DockerSandbox:
        spec = SandboxSpec(bare, commit, env=dict(recipe.env), prepare=recipe.prepare, limits=limits, labels=LABELS)
        return DockerSandbox(spec, image, env.client)

    n_objects = git.Git(bare).execute(["git", "rev-list", "--objects", "--count", "HEAD"])
    what = f"generated history ({commits_n} commits, {n_objects} objects at the tip), image {shown(image)}"
    return _startup_pair(f"history_{commits_n}_commits", open_at, tips, startups, what, log)


# ---- (c) the local sandbox's exec overhead -----------------------------------------------------------
def local_exec(store: Store, key: str, rules, iterations: int, log) -> list[Result]:
    name, group = "local_exec_true", "local_exec"
    baseline = '`subprocess.run(["bash", "-c", "true"], capture_output=True)` in the workspace'
    isolation = isolation_available()
    if isolation is None:
        return [unavailable(name, group, "neither bubblewrap nor unshare is installed: no LocalSandbox here")]
    env = Environment(store, key, rules, backend="local")
    m = store.load_plan(key).milestones[-1]
    sb = env.opener(m, LABELS)(m.verify_commit)
    try:
        arms = {
            "ours": lambda: sb.exec("true"),
            "subprocess": lambda: subprocess.run(["bash", "-c", "true"], capture_output=True, cwd=sb.workdir),
        }
        try:  # the isolation command alone, without our Python around it (a private helper: optional)
            argv = sb._argv("true", sb.env)
            penv = {"PATH": "/usr/bin:/bin"} if sb.isolation == "bwrap" else sb.env
            arms["isolation_argv"] = lambda: subprocess.run(argv, capture_output=True, cwd=sb.workdir, env=penv)
        except Exception:  # noqa: BLE001
            pass
        if sb.exec("true").exit_code != 0:
            raise RuntimeError(f"LocalSandbox.exec('true') failed: {sb.exec('true')}")
        times = interleaved(arms, iterations)
    finally:
        sb.close()
    s = {k: stats(v) for k, v in times.items()}
    o, b = s["ours"]["median_s"], s["subprocess"]["median_s"]
    log(f"local exec 'true' ({sb.isolation}): ours {o * 1000:.1f} ms, subprocess {b * 1000:.1f} ms")
    extra = {"isolation": sb.isolation, "overhead_ms": (o - b) * 1000, **{k: v for k, v in s.items()}}
    if "isolation_argv" in s:
        extra["isolation_argv_overhead_ms"] = (s["isolation_argv"]["median_s"] - b) * 1000
        extra["python_wrapper_overhead_ms"] = (o - s["isolation_argv"]["median_s"]) * 1000
    return [
        Result(
            name,
            group,
            baseline,
            o,
            b,
            o / b,
            "cost",
            detail=f"`LocalSandbox.exec('true')` with isolation `{sb.isolation}` (network, pid, ipc, uts namespaces, "
            f"read-only host, tmpfs mounts) vs plain bash; {iterations} interleaved iterations after 3 warm-up; "
            "no target",
            iterations=iterations,
            extra=extra,
        ).judge()
    ]
