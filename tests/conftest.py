"""Shared fixtures: real git repositories built by the example script, a temp store, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.examples import build_example_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.postgres import postgres_database, postgres_instance_dir, postgres_server  # noqa: F401 (fixtures)

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def example_repo(tmp_path_factory) -> Path:
    """The tasklite example repository (built once per session; tests must not modify it)."""
    return build_example_repo(tmp_path_factory.mktemp("examples") / "tasklite")


@pytest.fixture(scope="session")
def planned(example_repo, tmp_path_factory):
    """A store holding the example repository's plan from v0.1.0 to v0.5.0 (read-only)."""
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

    def run(
        *args: str,
        store: Path | None = None,
        env: dict | None = None,
        check: bool = False,
        timeout: int = 300,
        cwd: Path | None = None,
    ):
        cmd = [str(BIN / "harnessforge"), "--store", str(store or tmp_path / "store"), *args]
        full_env = {**os.environ, "COLUMNS": "200", "GITHUB_TOKEN": "", **(env or {})}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd)
        if check and proc.returncode != 0:
            raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


# ---- Docker ---------------------------------------------------------------------------------------
# CI sets HARNESSFORGE_REQUIRE_DOCKER=1: a Docker test then fails instead of skipping, and any
# skipped test fails the session (no skipped test counts as passing).
REQUIRE_DOCKER = os.environ.get("HARNESSFORGE_REQUIRE_DOCKER") == "1"


@pytest.fixture(scope="session")
def docker_client():
    from harnessforge.envs import engine
    from harnessforge.errors import EnvError

    try:
        return engine.connect()
    except EnvError as e:
        if REQUIRE_DOCKER:
            pytest.fail(f"HARNESSFORGE_REQUIRE_DOCKER=1 but {e}")
        pytest.skip(str(e))


_skipped: list[str] = []


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if REQUIRE_DOCKER and _skipped and exitstatus == 0:
        session.exitstatus = 1
        print(f"\nHARNESSFORGE_REQUIRE_DOCKER=1: {len(_skipped)} test(s) skipped: {', '.join(_skipped[:10])}")


@pytest.fixture(scope="session")
def harbor_venv() -> Path:
    """The Harbor virtualenv (.venv-harbor, made by scripts/install.sh); required like Docker in CI."""
    from tests.harbor_tools import HARBOR_VENV

    if not (HARBOR_VENV / "bin" / "harbor").exists():
        why = f"{HARBOR_VENV} has no harbor: run scripts/install.sh (Harbor needs Python >= 3.12)"
        if REQUIRE_DOCKER:
            pytest.fail(f"HARNESSFORGE_REQUIRE_DOCKER=1 but {why}")
        pytest.skip(why)
    return HARBOR_VENV


@pytest.fixture(scope="session")
def base_image(docker_client):
    """The python base image (bootstrapped with debootstrap if absent: CI does it up front)."""
    from harnessforge.envs.images import bootstrap_base

    return bootstrap_base(docker_client, "python", load_rules().environments, log=lambda *_: None)


@pytest.fixture(scope="session")
def env_store(example_repo, base_image, docker_client, tmp_path_factory):
    """A store with the example repository planned and its environment image built: really built once per
    session (under pytest-xdist, by the first worker to get here; the others find it cached and are handed
    that first build's record)."""
    from filelock import FileLock

    from harnessforge.envs.environment import build
    from harnessforge.envs.recipes import env_hash, recipe_at
    from harnessforge.gitio import GitRepo
    from harnessforge.mining.planner import plan
    from harnessforge.models.env import RepoImages

    store = Store(tmp_path_factory.mktemp("env") / "store")
    result = plan(store, str(example_repo), load_rules())
    session = _shared_dir(tmp_path_factory)
    with FileLock(session / "env_store.lock"):
        first = session / "env_store.json"
        if not first.exists():
            # Remove a cached image from an earlier session, so the build below really runs (not while other
            # test sessions share the engine: HARNESSFORGE_KEEP_TEST_IMAGES=1 keeps theirs).
            recipe = recipe_at(
                GitRepo(example_repo), result.plan.to_commit, result.plan.repo.key, load_rules().environments
            )
            tag = f"harnessforge/{result.plan.repo.key}:{env_hash(recipe, docker_client.images.get(base_image).id)}"
            if docker_client.images.list(name=tag) and not os.environ.get("HARNESSFORGE_KEEP_TEST_IMAGES"):
                docker_client.images.remove(tag, force=True)
        images = build(store, result.plan.repo.key, load_rules(), log=lambda *_: None)
        assert images.images and not images.failures, images.failures
        if first.exists():
            images = RepoImages.model_validate_json(first.read_text())
        else:
            first.write_text(images.model_dump_json())
    return store, result.plan.repo.key, images


def _shared_dir(tmp_path_factory) -> Path:
    """The directory every pytest-xdist worker of this session sees (the session's own without xdist)."""
    session = tmp_path_factory.getbasetemp()
    return session.parent if os.environ.get("PYTEST_XDIST_WORKER") else session


@pytest.fixture(scope="session")
def validated(env_store, tmp_path_factory):
    """The example repository validated in Docker: (store, key, {milestone id: Validation}). Really validated
    once per session (under pytest-xdist, by the first worker to get here); the others are handed that run's
    verdicts and validated milestones, so each worker's store holds what `validate` writes."""
    from filelock import FileLock

    from harnessforge.envs.environment import validate
    from harnessforge.models.env import Validation
    from harnessforge.models.plan import MilestonePlan

    store, key, _ = env_store
    shared = _shared_dir(tmp_path_factory)
    with FileLock(shared / "validated.lock"):
        first = shared / "validated.json"
        if not first.exists():
            results = validate(store, key, load_rules(), backend="docker", log=lambda *_: None)
            validations = [v.model_dump(mode="json") for v in results]
            plan = store.load_plan(key).model_dump(mode="json")
            first.write_text(json.dumps({"validations": validations, "plan": plan}))
        else:
            record = json.loads(first.read_text())
            results = [Validation.model_validate(v) for v in record["validations"]]
            for validation in results:
                store.save_validation(key, validation)
            for milestone in MilestonePlan.model_validate(record["plan"]).milestones:
                store.update_milestone(key, milestone)
    return store, key, {v.milestone_id: v for v in results}
