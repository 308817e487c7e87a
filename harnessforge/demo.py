"""`harnessforge demo`: the whole factory on the bundled example repository, offline, in minutes.

Every stage runs on the real code path: the example repository (the generator the tests use) is
screened and planned, its environment is built (Docker when an engine answers, else the local
sandbox), milestones are validated, the offline `oracle` Dev walks the chain, and the trajectories
are distilled, exported and reported (with Docker, the task cards are verified first: only those
that rebuild and reproduce become Harbor tasks and SWE-bench instances). The oracle is tuned so the
run shows each behaviour: a clean pass (m01), a stuck stretch that a hint resolves (m02), and a
STUCK milestone that resets to its verify commit so the chain goes on (m03). Re-running reuses what
exists: the plan, the images, the validation, finished milestones (the Navigator resumes by run id),
and the analytics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .agents.oracle import OracleAgent
from .distill import distill
from .envs import engine
from .envs.backends import AUTO, Backend
from .envs.environment import build, validate
from .envs.images import bootstrap_base
from .errors import EnvError
from .examples import build_example_repo
from .export import export
from .export.verify import verify_tasks
from .harness.navigator import Navigator
from .mining.planner import plan
from .mining.screening import screen
from .models.run import MilestoneSummary
from .report.report import build_report
from .report.viewer import write_viewers
from .rules import Rules
from .store import Store

RUN_ID = "demo"
PROFILES = {"m01": "direct", "m02": "needs_hints", "m03": "stuck"}  # the rest: direct


@dataclass
class DemoResult:
    repo: str
    sandbox: str
    summaries: list[MilestoneSummary] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # distilled rows per output
    exported: dict[str, int] = field(default_factory=dict)  # exported rows per file
    paths: dict[str, Path] = field(default_factory=dict)  # what to open, by name


def pick_sandbox(choice: Backend, log: Callable[[str], None]) -> Backend:
    """`auto`: Docker when an engine answers, else the local sandbox (with the reason)."""
    if choice != AUTO:
        return choice
    try:
        engine.connect()
        return "docker"
    except EnvError as e:
        log(
            f"no Docker engine ({e}): using the local sandbox. To use Docker: apt-get install docker.io, "
            "start dockerd, re-run the demo"
        )
        return "local"


def run_demo(
    store: Store,
    rules: Rules,
    sandbox: Backend = AUTO,
    log: Callable[[str], None] = print,
    stage: Callable[[str], None] = lambda name: None,
) -> DemoResult:
    """Run every stage on the example repository; `stage(name)` is called as each one starts."""
    stage("example repository")
    source = store.example_dir("tasklite")
    if not (source / ".git").exists():
        build_example_repo(source)
    stage("screening")
    report = screen(store, str(source), rules)
    key = report.repo.key
    result = DemoResult(repo=key, sandbox=pick_sandbox(sandbox, log))
    if not report.passed:  # the example is small on purpose: real repositories are held to these
        log("screening: the example is below the thresholds for real repositories; the demo goes on")
    stage("planning")
    if not store.plan_file(key).exists():
        plan(store, str(source), rules)
    if result.sandbox == "docker":
        stage("environment images")
        client = engine.connect()
        bootstrap_base(client, "python", rules.environments, log=log)
        build(store, key, rules, log=log)
    stage("validation")
    if any(milestone.status in (None, "env_error") for milestone in store.load_plan(key).milestones):
        validate(store, key, rules, backend=result.sandbox, log=log)
    stage("agent runs")
    with OracleAgent(profiles=PROFILES) as dev:
        navigator = Navigator(store, key, dev, rules, run_id=RUN_ID, backend=result.sandbox, log=log)
        result.summaries = navigator.run()
    stage("distillation")
    result.counts = distill(store, rules, log=log).counts
    if result.sandbox == "docker":  # Harbor tasks and SWE-bench instances are the cards that reproduce
        stage("task verification")
        verify_tasks(store, rules, log=log)
    stage("export")
    datasets = store.datasets_dir()
    exported = export(store, ["all"], datasets, allow_synthetic=True, rules=rules)
    result.exported = dict(exported.rows)
    stage("report")
    report_file = store.report_file()
    write_viewers(store, report_file.parent)
    result.paths = {
        "report": build_report(store, report_file),
        "trajectories": store.run_dir(key, RUN_ID),
        "datasets": datasets,
        "dataset card": datasets / "README.md",
        "distilled": store.distilled_dir(),
        "plan": store.plan_file(key),
    }
    return result
