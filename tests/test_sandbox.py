"""The `Sandbox` contract, on both backends: files, patches, diffs, resets, timeouts."""

import pytest

from harnessforge.envs import engine
from harnessforge.envs.environment import Environment
from harnessforge.envs.sandbox import Limits
from harnessforge.errors import EnvError
from harnessforge.rules import load_rules
from tests.test_sandbox_attacks import BOTH, commits, open_sandbox  # noqa: F401  (fixtures)


@BOTH
def test_files_patches_diff_and_reset(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"]) as sb:
        assert "tasklite/" in sb.list_dir(".") and "store.py" in sb.list_dir("tasklite")
        sb.write_file("notes/todo.txt", "one\n")
        assert sb.read_file("notes/todo.txt") == b"one\n"
        sb.exec("sed -i 's/^# tasklite$/# tasklite (patched)/' README.md")
        patch = sb.diff()
        assert b"+# tasklite (patched)" in patch and b"+++ b/notes/todo.txt" in patch
        sb.clean()  # tracked files back to the commit, untracked ones gone
        assert sb.diff() == b"" and "notes/" not in sb.list_dir(".")
        sb.apply_patch(patch)
        assert sb.diff() == patch
        assert sb.exec("git status --porcelain").stdout.count("??") == 1  # our diff left the index alone
        sb.exec("git add -A && git commit -qm 'agent commit'")
        assert "+# tasklite (patched)" in sb.diff().decode()  # still measured against the base commit
        sb.reset(commits["v0.3.0"])
        assert sb.diff() == b"" and sb.exec("git rev-parse HEAD").stdout.strip() == commits["v0.3.0"]
        assert "tasklite/export.py" in sb.exec("git ls-files").stdout  # the CSV export shipped in v0.3.0
        sb.apply_patch(patch)  # the README line is the same at v0.3.0
        with pytest.raises(EnvError, match="patch does not apply") as err:
            sb.apply_patch(patch)  # twice: it cannot
        assert err.value.reason == "patch_failed"


@BOTH
def test_timeout_is_reported_and_the_sandbox_stays_usable(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"], Limits(exec_timeout_s=2)) as sb:
        r = sb.exec("echo before; sleep 30")
        assert r.timed_out and r.exit_code in (124, 137) and r.stdout == "before\n" and r.duration_s < 15
        assert sb.exec("echo after").stdout == "after\n"


def test_auto_backend_falls_back_to_local_without_an_engine(env_store, monkeypatch):
    store, key, _ = env_store
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    assert not engine.available()
    assert Environment(store, key, load_rules(), backend="auto").backend == "local"
    monkeypatch.delenv("DOCKER_HOST")
    assert Environment(store, key, load_rules(), backend="auto").backend == "docker"


def test_cleanup_removes_containers_left_behind(open_sandbox, commits, docker_client, run_cli):  # noqa: F811
    sb = open_sandbox("docker", commits["v0.2.0"])  # never closed, as after a crash
    cid = sb.container.id
    proc = run_cli("env", "cleanup", check=True)
    assert "removed" in proc.stdout
    assert cid not in {c.id for c in docker_client.containers.list(all=True)}
