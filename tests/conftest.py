"""Shared fixtures: real git repositories built by the example script, a temp store, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.examples import build_example_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def example_repo(tmp_path_factory) -> Path:
    """The tasklite example repository (built once per session; tests must not modify it)."""
    return build_example_repo(tmp_path_factory.mktemp("examples") / "tasklite")


@pytest.fixture(scope="session")
def planned(example_repo, tmp_path_factory):
    """A store holding the example repository's plan from v0.1.0 to v0.4.0 (read-only)."""
    from harnessforge.mining.planner import plan

    store = Store(tmp_path_factory.mktemp("planned") / "store")
    result = plan(store, str(example_repo), load_rules())
    return store, result


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture
def rules():
    return load_rules()


@pytest.fixture
def run_cli(tmp_path):
    """Run the installed `harnessforge` command; returns the CompletedProcess."""

    def run(*args: str, store: Path | None = None, env: dict | None = None, check: bool = False):
        cmd = [str(BIN / "harnessforge"), "--store", str(store or tmp_path / "store"), *args]
        full_env = {**os.environ, "COLUMNS": "200", "GITHUB_TOKEN": "", **(env or {})}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
