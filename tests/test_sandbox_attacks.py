"""Attacks on the sandboxes and the grader. Each test asserts the attack fails.

Sandbox attacks run against the Docker backend and, where the local backend claims the same
protection, against it too. Grading attacks use the example repository's validated m03.
"""

import os
import subprocess
from pathlib import Path

import pytest

from harnessforge.envs.classification import run_problem
from harnessforge.envs.environment import LOCAL_ENV, grade_patch
from harnessforge.envs.local_sandbox import LocalSandbox
from harnessforge.envs.runners import run_tests
from harnessforge.envs.sandbox import Limits, SandboxSpec
from harnessforge.errors import EnvError
from harnessforge.rules import load_rules
from tests.helpers import git

PUBLIC_REGISTRY = ("151.101.0.223", 443)  # a pypi.org (Fastly) address: public, never a private range
SECRET = "sk-ant-hf-test-secret-0123456789"


@pytest.fixture(scope="module")
def open_sandbox(env_store):
    """commit -> sandbox, for the backend named by the test's `backend` parameter."""
    store, key, images = env_store
    repo = Path(store.git_cache(key))
    tag = images.images[0].tag

    def make(backend: str, commit: str, limits: Limits | None = None, labels: dict[str, str] | None = None):
        spec = SandboxSpec(
            repo, commit, limits=limits or Limits(memory="512m", pids=128, exec_timeout_s=60), labels=labels or {}
        )
        if backend == "docker":
            from harnessforge.envs.docker_sandbox import DockerSandbox

            spec.env = dict(images.images[0].recipe.env)
            return DockerSandbox(spec, tag)
        spec.env = dict(LOCAL_ENV["python"])
        return LocalSandbox(spec)

    return make


@pytest.fixture(scope="module")
def commits(example_repo):
    return {t: git(example_repo, "rev-parse", f"{t}^{{commit}}") for t in ("v0.2.0", "v0.3.0", "v0.5.0")}


BOTH = pytest.mark.parametrize("backend", ["docker", "local"])


@BOTH
def test_no_network_egress_and_no_dns(open_sandbox, commits, backend):
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        host, port = PUBLIC_REGISTRY
        tcp = sandbox.exec(
            f"python -c 'import socket; s = socket.socket(); s.settimeout(5); s.connect((\"{host}\", {port}))'"
        )
        assert tcp.exit_code != 0 and "unreachable" in tcp.stderr.lower()
        dns = sandbox.exec("python -c 'import socket; socket.getaddrinfo(\"pypi.org\", 443)'")
        assert dns.exit_code != 0 and "gaierror" in dns.stderr
        # loopback still works: test suites that start local servers are not broken
        lo = sandbox.exec("python -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()'")
        assert lo.exit_code == 0, lo.stderr


@BOTH
def test_package_registries_are_unreachable(open_sandbox, commits, backend):
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        pip = sandbox.exec(
            "env -u PIP_NO_INDEX python -m pip download --no-deps --retries 0 --timeout 5 -d /tmp/dl "
            "--index-url https://pypi.org/simple requests",
            timeout=120,
        )
        assert pip.exit_code != 0 and not sandbox.exec("ls /tmp/dl/*.whl 2>/dev/null").stdout
        npm = sandbox.exec(
            "command -v npm >/dev/null || exit 42; npm view left-pad version --fetch-retries=0", timeout=120
        )
        assert npm.exit_code != 0 and not npm.stdout.strip()


@BOTH
def test_no_object_of_a_later_commit_exists_in_the_workspace(open_sandbox, commits, example_repo, backend):
    base = commits["v0.2.0"]
    later_only = set(git(example_repo, "rev-list", "--objects", f"{base}..v0.5.0").split()) - set(
        git(example_repo, "rev-list", "--objects", base).split()
    )
    later_commits = set(git(example_repo, "rev-list", f"{base}..v0.5.0").split())
    with open_sandbox(backend, base) as sandbox:
        log = sandbox.exec("git log --all --format=%H").stdout.split()
        assert base in log and not (set(log) & later_commits)
        objects = sandbox.exec("git cat-file --batch-all-objects --batch-check='%(objectname)'").stdout.split()
        assert objects and not (set(objects) & later_only)
        assert sandbox.exec("git tag; git remote; git stash list").stdout.strip() == ""
        assert sandbox.exec(f"git show {commits['v0.3.0']}").exit_code != 0
        # after a reset to a later commit, history up to that commit (and no further) is there
        sandbox.reset(commits["v0.3.0"])
        assert sandbox.exec(f"git cat-file -e {commits['v0.3.0']}").exit_code == 0
        assert sandbox.exec(f"git cat-file -e {commits['v0.5.0']}").exit_code != 0


@BOTH
def test_host_secrets_are_not_visible(open_sandbox, commits, backend, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        r = sandbox.exec("env; cat /proc/1/environ 2>/dev/null; cat /proc/*/environ 2>/dev/null; ls ~ /root 2>&1")
        assert SECRET not in r.stdout and "ANTHROPIC_API_KEY" not in r.stdout
        # the host's Docker socket would be a way out: it must not be reachable
        assert sandbox.exec("test -S /var/run/docker.sock || test -S /run/docker.sock").exit_code != 0


@BOTH
def test_writes_outside_the_workspace_fail(open_sandbox, commits, backend):
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        for target in ("/etc/hf-owned", "/usr/lib/hf-owned", f"{sandbox.plugin_dir}/hf_results.py"):
            assert sandbox.exec(f"echo pwned >> {target}").exit_code != 0, target
        assert "pwned" not in sandbox.exec(f"cat {sandbox.plugin_dir}/hf_results.py").stdout
        with pytest.raises(EnvError, match="leaves the workspace|outside the workspace"):
            sandbox.write_file("../../etc/hf-owned", "x")
        # a symlink planted in the workspace does not lead the sandbox's own file API outside
        assert sandbox.exec("ln -s /etc evil").exit_code == 0
        with pytest.raises(EnvError):
            sandbox.write_file("evil/hf-owned", "x")
        assert sandbox.exec("test -e /etc/hf-owned").exit_code != 0
        sandbox.write_file("notes/ok.txt", "inside\n")
        assert sandbox.read_file("notes/ok.txt") == b"inside\n"
    assert not Path("/etc/hf-owned").exists()


def test_fork_bomb_is_stopped_by_the_pids_limit(open_sandbox, commits):
    with open_sandbox("docker", commits["v0.2.0"], Limits(memory="512m", pids=64, exec_timeout_s=60)) as sandbox:
        r = sandbox.exec("bomb() { bomb | bomb & }; bomb; sleep 5", timeout=20)
        assert r.exit_code != 0 or "fork" in r.stderr or r.timed_out
        after = sandbox.exec("echo alive")  # the container survives and answers
        assert after.exit_code == 0 and after.stdout.strip() == "alive"
        assert int(sandbox.exec("ps -e --no-headers | wc -l").stdout) <= 64


def test_memory_hog_is_oom_killed_and_classified(open_sandbox, commits, env_store):
    store, key, images = env_store
    with open_sandbox("docker", commits["v0.2.0"], Limits(memory="256m", pids=128, exec_timeout_s=60)) as sandbox:
        sandbox.write_file("tests/test_hog.py", "def test_hog():\n    blob = bytearray(2 << 30)\n    assert blob\n")
        run = run_tests(sandbox, images.images[0].recipe, ["tests/test_hog.py"], 120)
        assert run.oom_killed and run_problem(run) == "oom"
        killed = sandbox.exec("kill -9 $$")  # exit 137 too, but not the OOM killer: not blamed on memory
        assert killed.exit_code == 137 and not killed.oom_killed and not killed.timed_out


@BOTH
def test_infinite_loop_times_out_and_is_classified(open_sandbox, commits, env_store, backend):
    store, key, images = env_store
    recipe = images.images[0].recipe
    if backend == "local":
        recipe = recipe.model_copy(update={"env": {}})
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        sandbox.write_file("tests/test_loop.py", "def test_forever():\n    while True:\n        pass\n")
        run = run_tests(sandbox, recipe, ["tests/test_loop.py"], 5)
        assert run.timed_out and run_problem(run) == "timeout"
        assert sandbox.exec("ps -eo args | grep '[p]ytest'", timeout=10).exit_code != 0  # nothing left running


def test_every_sandbox_starts_fresh(open_sandbox, commits):
    with open_sandbox("docker", commits["v0.2.0"]) as one:
        one.exec("echo leftover > /tmp/state; echo leftover > tasklite/state.txt")
    with open_sandbox("docker", commits["v0.2.0"]) as two:
        assert two.exec("cat /tmp/state tasklite/state.txt").exit_code != 0


# ---- grading attacks --------------------------------------------------------------------------
M03 = "m03"  # export to CSV: F2P tests in tests/test_export.py


def _grade(validated, patch: bytes):
    store, key, _ = validated
    return grade_patch(store, key, M03, patch, load_rules(), backend="docker")


@pytest.fixture
def candidate(validated, tmp_path, example_repo):
    """(checkout at m03's base, function returning its diff) for writing candidate solutions."""
    store, key, _ = validated
    m = store.load_milestone(key, M03)
    work = tmp_path / "cand"
    subprocess.run(["git", "clone", "-q", str(example_repo), str(work)], check=True)
    git(work, "checkout", "-q", m.base_commit)

    def diff() -> bytes:
        git(work, "add", "-A")
        return subprocess.run(
            ["git", "diff", "--cached", "--binary", m.base_commit], cwd=work, capture_output=True, check=True
        ).stdout

    return work, diff


def test_the_ground_truth_solution_is_resolved(validated):
    store, key, results = validated
    gt, _ = store.read_patches(key, M03)
    grade = _grade(validated, gt)
    assert grade.resolved, grade
    assert set(grade.fail_to_pass) == set(results[M03].fail_to_pass) and grade.excluded_files == []


def test_an_empty_candidate_is_not_resolved(validated):
    grade = _grade(validated, b"")
    assert not grade.resolved and all(s == "error" for s in grade.fail_to_pass.values())
    # the F2P file failing to import does not stop the other files: P2P results are still there
    assert grade.pass_to_pass and all(s == "passed" for s in grade.pass_to_pass.values())


def test_printing_fake_passed_lines_gets_no_credit(validated, candidate):
    work, diff = candidate
    fake = "".join(f'print("PASSED {t}")\n' for t in validated[2][M03].fail_to_pass)
    (work / "tasklite" / "__init__.py").write_text((work / "tasklite" / "__init__.py").read_text() + fake)
    grade = _grade(validated, diff())
    assert not grade.resolved
    assert all(s in ("failed", "error", "missing") for s in grade.fail_to_pass.values())


def test_editing_a_test_gets_no_credit(validated, candidate):
    work, diff = candidate
    (work / "tests" / "test_export.py").write_text("def test_csv_has_header_and_rows():\n    assert True\n")
    grade = _grade(validated, diff())
    assert not grade.resolved and grade.excluded_files == ["tests/test_export.py"]


def test_a_conftest_marking_every_test_passed_gets_no_credit(validated, candidate):
    work, diff = candidate
    hook = (
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
    )
    (work / "conftest.py").write_text(hook)
    (work / "tasklite" / "conftest.py").write_text(hook)
    grade = _grade(validated, diff())
    assert not grade.resolved and grade.excluded_files == ["conftest.py", "tasklite/conftest.py"]


def test_a_pytest_plugin_smuggled_in_through_pyproject_gets_no_credit(validated, candidate):
    work, diff = candidate
    (work / "tasklite" / "cheat.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    pyproject = (work / "pyproject.toml").read_text()
    (work / "pyproject.toml").write_text(
        pyproject.replace("[tool.pytest.ini_options]", '[tool.pytest.ini_options]\naddopts = "-p tasklite.cheat"')
    )
    grade = _grade(validated, diff())
    assert not grade.resolved and "pyproject.toml" in grade.excluded_files


def test_secret_env_of_the_grader_does_not_reach_the_candidate(validated, candidate, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    work, diff = candidate
    leak = "import os\nassert 'OPENAI_API_KEY' not in os.environ\n"
    (work / "tasklite" / "__init__.py").write_text(leak + (work / "tasklite" / "__init__.py").read_text())
    grade = _grade(validated, diff())
    # the import-time assert would break every test if the key were visible: P2P still passes
    assert all(s == "passed" for s in grade.pass_to_pass.values()) and grade.pass_to_pass, grade.run.log_tail[-3000:]
    assert os.environ["OPENAI_API_KEY"] == SECRET


def test_the_local_sandbox_runs_tests_from_a_checkout_under_a_hidden_directory(env_store, commits):
    """Issue 32: a checkout under a home or the temp directory is masked inside, and pytest died loading our
    `hf_results` entry point (`No module named 'harnessforge'`). Here the checkout is masked as a home would be:
    it stays hidden, but the package (only it) is bound back and the suite runs."""
    from harnessforge.envs.local_sandbox import MASKED, PACKAGE

    store, key, images = env_store
    checkout = str(PACKAGE.parent)
    spec = SandboxSpec(Path(store.git_cache(key)), commits["v0.3.0"], env=dict(LOCAL_ENV["python"]))
    with LocalSandbox(spec, masked=(*MASKED, checkout)) as sandbox:
        assert sandbox.exec(f"ls {checkout}/README.md {checkout}/tests").exit_code != 0  # the checkout is hidden
        run = run_tests(sandbox, images.images[0].recipe.model_copy(update={"env": {}}), [], 300)
        assert run.suite_ran and not run.collect_errors, run.log_tail
        assert list(run.statuses.values()).count("passed") >= 10


def test_the_local_sandbox_shows_nothing_of_the_store_the_clone_or_the_repository_added(example_repo):
    """Issue 32: a store outside home and temp (here /var/tmp) was readable from the sandbox: the plan, the ground
    truth and the bare clone with every future commit. Each is an empty directory inside; the workspace works."""
    import shutil
    import tempfile

    from harnessforge.envs.environment import Environment
    from harnessforge.mining.planner import plan
    from harnessforge.store import Store

    root = Path(tempfile.mkdtemp(prefix="hf-store-", dir="/var/tmp"))
    try:
        added = root / "tasklite"
        shutil.copytree(example_repo, added)
        store = Store(root / "store")
        planned = plan(store, str(added), load_rules()).plan
        environment = Environment(store, planned.repo.key, load_rules(), "local")
        first = planned.milestones[0]
        secrets = [
            f"{store.repo_dir(planned.repo.key)}/plan.json",
            f"{environment.repo.path}/HEAD",
            f"{added}/.git/HEAD",
        ]
        assert all(Path(path).exists() for path in secrets)
        with environment.opener(first)(first.base_commit) as sandbox:
            for path in secrets:
                assert sandbox.exec(f"cat {path}").exit_code != 0, path
            listed = sandbox.exec(f"ls -A {store.root} {added}; ls -A {environment.repo.path}")
            assert listed.stdout.split() == [f"{store.root}:", f"{added}:"], listed  # empty; the clone not there
            assert (
                sandbox.exec("git log --oneline | wc -l").stdout.strip()
                == sandbox.exec("git rev-list --all | wc -l").stdout.strip()
            )
            assert sandbox.exec("python -c 'import tasklite'").exit_code == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
