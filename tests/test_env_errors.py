"""Bad input and broken environments give clear errors and a reason, and lose nothing."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.envs import local_sandbox
from harnessforge.envs.environment import build, validate
from harnessforge.envs.sandbox import SandboxSpec
from harnessforge.errors import EnvError
from harnessforge.mining.screening import screen
from harnessforge.rules import load_rules
from harnessforge.store import Store


def test_env_build_without_a_docker_engine_says_how_to_start_one(run_cli, planned):
    store, result = planned
    proc = run_cli(
        "env", "build", result.plan.repo.key, store=store.root, env={"DOCKER_HOST": "unix:///nonexistent.sock"}
    )
    assert proc.returncode == 1
    assert "no Docker engine answered at unix:///nonexistent.sock" in proc.stderr and "dockerd" in proc.stderr


def test_validate_before_plan_and_unknown_milestone_are_clear_errors(run_cli, planned, example_repo, tmp_path):
    store, result = planned
    key = result.plan.repo.key
    proc = run_cli("validate", key, "--milestone", "m99", "--sandbox", "local", store=store.root)
    assert proc.returncode == 1 and "has no milestone 'm99'" in proc.stderr
    proc = run_cli("validate", str(example_repo), "--sandbox", "local", store=tmp_path / "empty")
    assert proc.returncode == 1 and "plan.json: missing" in proc.stderr


def test_local_sandbox_refuses_to_run_without_isolation(monkeypatch, example_repo):
    monkeypatch.setattr(local_sandbox.shutil, "which", lambda name: None)
    with pytest.raises(EnvError, match="no network isolation"):
        local_sandbox.LocalSandbox(SandboxSpec(example_repo, "HEAD"))


def test_a_failing_install_is_recorded_with_its_reason(env_store, tmp_path, example_repo):
    src, key, _ = env_store
    store = Store(tmp_path / "store")
    shutil.copytree(src.repo_dir(key), store.repo_dir(key))
    shutil.copytree(src.git_cache(key), store.git_cache(key))
    screen(store, key, load_rules(), collect=False)
    rules = load_rules()
    env = rules.environments.model_copy(update={"overrides": {key: {"install": ["echo resolving; exit 3"]}}})
    images = build(store, key, rules.model_copy(update={"environments": env}), log=lambda *_: None)
    assert images.images == [] and set(images.failures) == {f"m0{i}" for i in range(1, 7)}
    assert images.failures["m01"].startswith("install_failed:") and "exit 3" in images.failures["m01"]
    criterion = store.load_screening(key).criterion("environment_builds")
    assert criterion.passed is False and "install_failed" in criterion.reason
    (v,) = validate(store, key, load_rules(), milestone="m02", backend="docker", log=lambda *_: None)
    assert v.status == "env_error" and v.reason == "install_failed"
    assert store.load_plan(key).milestone("m02").status == "env_error"
    # the working images come back with the default recipe, and screening now says so
    build(store, key, load_rules(), log=lambda *_: None)
    assert store.load_screening(key).criterion("environment_builds").passed is True
    screen(store, key, load_rules(), collect=False)  # re-screening keeps the environments' verdict
    assert store.load_screening(key).criterion("environment_builds").passed is True


def test_ci_fails_the_session_when_any_test_was_skipped(tmp_path):
    """HARNESSFORGE_REQUIRE_DOCKER=1 (set by .ci/run): a skipped test fails the run."""
    (tmp_path / "test_some.py").write_text("import pytest\n\ndef test_skip():\n    pytest.skip('no engine')\n")
    root = Path(__file__).parent.parent
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider", str(tmp_path)]
    env = {**os.environ, "HARNESSFORGE_REQUIRE_DOCKER": "1"}
    strict = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    assert strict.returncode == 1 and "1 test(s) skipped" in strict.stdout
    env["HARNESSFORGE_REQUIRE_DOCKER"] = "0"
    assert subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env).returncode == 0


def test_an_environment_failure_says_its_real_cause_on_the_console():
    """Issue 32: "env_error (no_tests_ran)" on the console while the cause sat only in validation.json's detail."""
    from harnessforge.envs.environment import _verdict_line
    from harnessforge.models.env import Validation

    detail = (
        "pytest exited 1\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'harnessforge'\n\n"
    )
    failed = Validation(milestone_id="m02", status="env_error", reason="no_tests_ran", detail=detail, repeats=0)
    assert _verdict_line(failed).endswith("flaky; ModuleNotFoundError: No module named 'harnessforge'")
    valid = Validation(milestone_id="m02", status="valid", detail="anything", repeats=1)
    assert _verdict_line(valid).endswith("0 flaky")


def test_a_test_runner_that_starts_for_no_milestone_stops_validation_with_its_cause(planned, tmp_path):
    """Issue 32: with pytest unable to start in the local sandbox every milestone became `env_error`, the stage
    said ✓ and the demo went on to 0 rows. A runner that starts for no milestone stops the stage, saying why."""
    from tests.helpers import one_run_per_side, validated_copy

    store, key = validated_copy(planned, tmp_path, [])
    rules = one_run_per_side()
    broken = {key: {"test_cmd": "python -c 'import no_such_runner' {tests}"}}
    rules = rules.model_copy(update={"environments": rules.environments.model_copy(update={"overrides": broken})})
    said = []
    with pytest.raises(
        EnvError, match=r"could not start for m01, m02, .* \(local sandbox\): .*No module named 'no_such_runner'"
    ):
        validate(store, key, rules, backend="local", log=said.append)
    assert len(said) == len(store.load_plan(key).milestones)  # each verdict was said, and saved
    assert all(milestone.status == "env_error" for milestone in store.load_plan(key).milestones)
    # issue 44: after milestones validated, a failure of one more names it and not "any milestone"
    plan = store.load_plan(key)
    store.update_milestone(key, plan.milestones[0].model_copy(update={"status": "valid"}))
    with pytest.raises(EnvError, match=r"could not start for m02 \(local sandbox\) \(m01 validated before\)"):
        validate(store, key, rules, milestone="m02", backend="local", log=said.append)
