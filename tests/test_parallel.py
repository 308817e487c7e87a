"""Chains of several repos at once: side by side, each in order, one failure isolated."""

import os
import subprocess
from pathlib import Path

import pytest

from harnessforge.agents.oracle import OracleAgent
from harnessforge.gitio import resolve_repo
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.parallel import run_chains
from harnessforge.harness.recorder import Recorder
from harnessforge.rules import load_rules
from tests.helpers import cli_command


class ClosingOracle(OracleAgent):
    closed = 0

    def close(self) -> None:
        ClosingOracle.closed += 1


def test_chains_run_side_by_side_and_a_failing_one_is_isolated(validated):
    store, key, _ = validated
    rules = load_rules()

    def navigator(job: str) -> Navigator:
        repo = "no__such_repo" if job == "broken" else key
        return Navigator(store, repo, ClosingOracle(seed=1), rules, run_id=f"par-{job}", log=lambda *_: None)

    a, broken, b = run_chains(["a", "broken", "b"], navigator, workers=3, milestones=["m01"], log=lambda *_: None)
    assert not a.error and not b.error, (a.error, b.error)
    assert [s.status for s in a.summaries] == [s.status for s in b.summaries] == ["PASS"]
    assert broken.error and "no__such_repo" in broken.error and not broken.summaries
    assert ClosingOracle.closed == 2  # each chain's agent is closed when the chain ends
    spans = [[e.ts for e in Recorder.open(Path(r.run_dir) / "m01").events()] for r in (a, b)]
    assert spans[0][0] < spans[1][-1] and spans[1][0] < spans[0][-1]  # the two chains overlapped in time
    with pytest.raises(ValueError, match="workers must be at least 1"):
        run_chains(["a"], navigator, workers=0)


def test_the_run_command_takes_several_repos_and_reports_each(validated):
    store, key, _ = validated
    cmd = cli_command(store, f"run {key} no__such_repo --workers 2 --milestones m01 --run-id par-cli --sandbox docker")
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no__such_repo" in proc.stderr and "no repository is registered" in proc.stderr
    row = next(line for line in proc.stdout.splitlines() if " m01 " in line)
    assert key in row and "PASS" in row
    assert (store.root / "trajectories" / key / "par-cli" / "m01" / "summary.json").exists()


def test_concurrent_opens_of_one_repo_share_its_cache_safely(example_repo, tmp_path):
    """Parallel chains (and Dagster steps) of one repo fetch its clone cache at the same time."""
    from concurrent.futures import ThreadPoolExecutor

    from harnessforge.repos import open_repo
    from harnessforge.store import Store

    store = Store(tmp_path / "store")
    spec = resolve_repo(str(example_repo))
    with ThreadPoolExecutor(max_workers=6) as pool:
        repos = list(pool.map(lambda _: open_repo(store, spec), range(12)))
    assert len({r.head() for r in repos}) == 1
