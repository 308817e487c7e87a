"""`env build` + `validate` on the example repository, in Docker: real images, real test runs."""

import json

import pytest

from harnessforge.envs.environment import Environment
from harnessforge.envs.runners import run_tests
from harnessforge.rules import load_rules

FLAKY = "tests/test_cli.py::test_first_run_creates_history"


def test_env_build_makes_one_image_per_dependency_epoch_and_caches_it(env_store, docker_client):
    store, key, images = env_store
    assert len(images.images) == 1  # version bumps do not change the dependency epoch
    record = images.images[0]
    assert record.tag == f"harnessforge/{key}:{record.env_hash}"
    assert set(images.milestone_images) == {f"m0{i}" for i in range(1, 7)}
    assert docker_client.images.get(record.tag).id == record.image_id
    assert record.build_seconds > 0 and "pip install" in open(record.log_path).read()
    saved = json.loads((store.root / "images" / f"{key}.json").read_text())
    assert saved["images"][0]["env_hash"] == record.env_hash

    from harnessforge.envs.environment import build

    again = build(store, key, load_rules(), log=lambda *_: None)
    assert again.images[0].image_id == record.image_id and again.images[0].build_seconds == 0.0


def test_real_feature_milestones_are_valid_with_fail_to_pass(validated):
    store, key, results = validated
    for mid in ("m01", "m02", "m03", "m04", "m05"):
        validation = results[mid]
        assert validation.status == "valid", (mid, validation.reason, validation.detail)
        # FAIL_TO_PASS comes from the runner's ids of the milestone's changed test files
        milestone = store.load_milestone(key, mid)
        assert validation.fail_to_pass and set(validation.fail_to_pass) <= set(validation.candidates)
        assert all(t.split("::")[0] in milestone.test_files for t in validation.candidates)
        assert len(validation.base_runs) == len(validation.verify_runs) == 3
        assert all(r.suite_ran for r in validation.base_runs + validation.verify_runs)
    # parametrised ids are the runner's own, which the static trace (bare function names) never matched
    assert "tests/test_tags.py::test_tags_are_normalised[Home-home]" in results["m01"].fail_to_pass
    # the CLI does not exist at m05's base: its tests fail there (collection error), pass at verify
    assert "tests/test_cli.py::test_add_then_list" in results["m05"].fail_to_pass


def test_milestone_whose_tests_pass_at_base_does_not_reproduce(validated):
    _, _, results = validated
    validation = results["m06"]
    assert validation.status == "does_not_reproduce" and validation.fail_to_pass == []
    assert "tests/test_tag_index.py::test_big_store_tag_lookups" in validation.not_reproduced


def test_deliberately_flaky_test_is_classified_flaky_and_excluded(validated):
    store, key, results = validated
    validation = results["m05"]
    assert FLAKY in validation.flaky
    assert FLAKY not in validation.fail_to_pass and FLAKY not in validation.pass_to_pass
    statuses = [r.status(FLAKY) for r in validation.verify_runs]
    assert statuses[0] == "passed" and "failed" in statuses[1:]
    milestone = store.load_milestone(key, "m05")  # the Dev is told not to chase it
    assert milestone.ungraded == [FLAKY] and f"not graded: `{FLAKY}`." in milestone.task("visible")
    assert FLAKY not in milestone.task("hidden")


def test_validation_is_written_and_recorded_in_the_plan(validated):
    store, key, results = validated
    assert store.load_validation(key, "m03").fail_to_pass == results["m03"].fail_to_pass
    plan = store.load_plan(key)
    assert [milestone.status for milestone in plan.milestones] == ["valid"] * 5 + ["does_not_reproduce"]
    assert plan.milestone("m02").fail_to_pass == results["m02"].fail_to_pass
    assert store.load_milestone(key, "m02").pass_to_pass == results["m02"].pass_to_pass


def test_docker_and_local_backends_agree_on_a_milestone(validated, tmp_path):
    import shutil

    from harnessforge.envs.environment import validate
    from harnessforge.store import Store

    shared, key, results = validated
    store = Store(tmp_path / "store")  # a copy: the session's Docker verdicts stay as other tests expect them
    shutil.copytree(shared.root, store.root)
    rules = load_rules()
    rules = rules.model_copy(update={"environments": rules.environments.model_copy(update={"repeats": 1})})
    # `force`: the local verdict replaces the Docker one (without it the valid Docker verdict is kept: issue 32)
    (local,) = validate(store, key, rules, milestone="m03", backend="local", log=lambda *_: None, force=True)
    assert local.status == "valid" and local.image == "local:local"
    assert local.fail_to_pass == results["m03"].fail_to_pass


def test_a_missing_image_is_an_env_error_not_a_crash(env_store, tmp_path):
    from harnessforge.envs.environment import validate
    from harnessforge.store import Store

    store, key, images = env_store
    broken = Store(tmp_path / "store")
    import shutil

    shutil.copytree(store.root, broken.root)
    data = images.model_copy(update={"milestone_images": {}, "failures": {"m01": "install_failed: boom"}})
    broken.save_images(data)
    (validation,) = validate(broken, key, load_rules(), milestone="m01", backend="docker", log=lambda *_: None)
    assert validation.status == "env_error" and validation.reason == "install_failed" and "boom" in validation.detail


def test_runs_report_per_test_statuses_from_the_structured_report(env_store):
    store, key, _ = env_store
    env = Environment(store, key, load_rules(), backend="docker")
    milestone = store.load_milestone(key, "m03")
    with env.opener(milestone)(milestone.verify_commit) as sandbox:
        sandbox.exec("echo 'PASSED tests/test_export.py::nonexistent' ")
        run = run_tests(sandbox, env.recipe(milestone), ["tests/test_export.py"], 300)
    assert run.suite_ran and run.exit_code == 0
    assert run.statuses and all(s == "passed" for s in run.statuses.values())
    assert all(t.startswith("tests/test_export.py::") for t in run.statuses)


def test_two_workers_give_the_same_verdicts_as_one(validated, tmp_path, monkeypatch):
    """Side by side for certain, whatever the machine's load: m01's and m02's first sandboxes each wait, once
    open, for the other's (a serial validation would never let the barrier pass)."""
    import shutil
    import threading

    from harnessforge.envs.environment import validate
    from harnessforge.store import Store

    store, key, one_worker = validated
    copy = Store(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    both_open = threading.Barrier(2, timeout=600)
    real_opener = Environment.opener

    def opener(self, milestone, labels=None, mounts=()):
        open_sandbox = real_opener(self, milestone, labels, mounts)

        def opened(commit):
            sandbox = open_sandbox(commit)
            if milestone.id in ("m01", "m02") and commit == milestone.base_commit:
                both_open.wait()
            return sandbox

        return opened

    monkeypatch.setattr(Environment, "opener", opener)
    validate(copy, key, load_rules(), backend="docker", log=lambda *_: None, workers=2)
    assert not both_open.broken and both_open.n_waiting == 0  # the milestones really ran side by side
    plan = copy.load_plan(key)
    assert [milestone.status for milestone in plan.milestones] == [
        one_worker[milestone.id].status for milestone in plan.milestones
    ]
    for mid, v1 in one_worker.items():
        v2 = copy.load_validation(key, mid)
        same = ("status", "fail_to_pass", "pass_to_pass", "flaky", "not_reproduced", "broken", "repeats", "image")
        assert {f: getattr(v2, f) for f in same} == {f: getattr(v1, f) for f in same}, mid
        for side in ("base_runs", "verify_runs"):  # every test's status in every run, the flaky one's included
            assert [r.statuses for r in getattr(v2, side)] == [r.statuses for r in getattr(v1, side)], (mid, side)
    assert plan.milestone("m03").fail_to_pass == one_worker["m03"].fail_to_pass


def test_workers_below_one_is_a_clear_error(planned, run_cli):
    store, result = planned
    proc = run_cli("validate", result.plan.repo.key, "--workers", "0", "--sandbox", "local", store=store.root)
    assert proc.returncode == 2 and "--workers" in proc.stderr
    from harnessforge.envs.environment import validate
    from harnessforge.errors import EnvError

    with pytest.raises(EnvError, match="workers must be at least 1, got 0"):
        validate(store, result.plan.repo.key, load_rules(), backend="local", workers=0)


def test_a_valid_verdict_of_the_other_sandbox_kind_is_kept_unless_forced(validated, run_cli, tmp_path):
    """Issue 32: `validate --sandbox local` replaced a good Docker verdict with whatever the local sandbox said."""
    import shutil

    from harnessforge.store import Store

    store, key, _ = validated
    copy = Store(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    before = copy.validation_file(key, "m02").read_bytes()
    kept = run_cli("validate", key, "--milestone", "m02", "--sandbox", "local", store=copy.root)
    assert kept.returncode == 0 and "m02: kept its valid verdict" in kept.stdout + kept.stderr, kept.stderr
    assert copy.validation_file(key, "m02").read_bytes() == before
    forced = run_cli("validate", key, "--milestone", "m02", "--sandbox", "local", "--force", store=copy.root)
    assert forced.returncode == 0, forced.stderr
    replaced = copy.load_validation(key, "m02")
    assert replaced.image == "local:local" and replaced.status == "valid"
