"""The `Sandbox` contract, on both backends: files, patches, diffs, resets, timeouts."""

import uuid

import pytest

from harnessforge.envs import engine
from harnessforge.envs.environment import Environment
from harnessforge.envs.sandbox import Limits
from harnessforge.errors import EnvError
from harnessforge.rules import load_rules
from tests.test_sandbox_attacks import BOTH, commits, open_sandbox  # noqa: F401  (fixtures)


@BOTH
def test_files_patches_diff_and_reset(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        assert "tasklite/" in sandbox.list_dir(".") and "store.py" in sandbox.list_dir("tasklite")
        with pytest.raises(EnvError, match="cannot list no/such/dir"):  # issue 34: an empty "ok" listing before
            sandbox.list_dir("no/such/dir")
        sandbox.write_file("notes/todo.txt", "one\n")
        assert sandbox.read_file("notes/todo.txt") == b"one\n"
        sandbox.exec("sed -i 's/^# tasklite$/# tasklite (patched)/' README.md")
        patch = sandbox.diff()
        assert b"+# tasklite (patched)" in patch and b"+++ b/notes/todo.txt" in patch
        sandbox.clean()  # tracked files back to the commit, untracked ones gone
        assert sandbox.diff() == b"" and "notes/" not in sandbox.list_dir(".")
        sandbox.apply_patch(patch)
        assert sandbox.diff() == patch
        assert sandbox.exec("git status --porcelain").stdout.count("??") == 1  # our diff left the index alone
        sandbox.exec("git add -A && git commit -qm 'agent commit'")
        assert "+# tasklite (patched)" in sandbox.diff().decode()  # still measured against the base commit
        sandbox.reset(commits["v0.3.0"])
        assert sandbox.diff() == b"" and sandbox.exec("git rev-parse HEAD").stdout.strip() == commits["v0.3.0"]
        assert "tasklite/export.py" in sandbox.exec("git ls-files").stdout  # the CSV export shipped in v0.3.0
        sandbox.apply_patch(patch)  # the README line is the same at v0.3.0
        with pytest.raises(EnvError, match="patch does not apply") as err:
            sandbox.apply_patch(patch)  # twice: it cannot
        assert err.value.reason == "patch_failed"


@BOTH
def test_timeout_is_reported_and_the_sandbox_stays_usable(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"], Limits(exec_timeout_s=2)) as sandbox:
        r = sandbox.exec("echo before; sleep 30")
        assert r.timed_out and r.exit_code in (124, 137) and r.stdout == "before\n" and r.duration_s < 15
        assert sandbox.exec("echo after").stdout == "after\n"


def test_a_docker_commands_output_is_whole_however_it_arrives(open_sandbox, commits):  # noqa: F811
    """Output the engine may send with its upgrade response (an instant command), large output, and output after a
    silence longer than the engine client's read timeout (10 s) come back whole and on their own streams, through
    the reader that replaced docker-py's (which skipped what came with the response headers: once in a full suite,
    "41 is not a valid stream", a lost sandbox; a race this test cannot force)."""
    with open_sandbox("docker", commits["v0.2.0"]) as sandbox:
        for number in range(40):
            result = sandbox.exec(
                f"printf 'out{number}'; printf 'err{number}' >&2; head -c 70000 /dev/zero | tr '\\0' y"
            )
            assert result.stdout == f"out{number}" + "y" * 70000 and result.stderr == f"err{number}", number
        late = sandbox.exec("sleep 11; echo late")
        assert late.exit_code == 0 and late.stdout == "late\n" and not late.timed_out


def test_auto_backend_falls_back_to_local_without_an_engine(env_store, monkeypatch):
    store, key, _ = env_store
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    assert not engine.available()
    assert Environment(store, key, load_rules(), backend="auto").backend == "local"
    monkeypatch.delenv("DOCKER_HOST")
    assert Environment(store, key, load_rules(), backend="auto").backend == "docker"


def test_cleanup_removes_containers_left_behind(open_sandbox, commits, docker_client, run_cli):  # noqa: F811
    """Scoped to this test's run id: a cleanup of every HarnessForge container would also remove the image
    builds of tests running beside it on the same engine."""
    run_id = f"cleanup-{uuid.uuid4().hex[:8]}"
    sandbox = open_sandbox("docker", commits["v0.2.0"], labels={"harnessforge.run": run_id})  # never closed
    cid = sandbox.container.id
    proc = run_cli("env", "cleanup", "--run-id", run_id, check=True)
    assert "removed 1 container(s)" in proc.stdout
    assert cid not in {c.id for c in docker_client.containers.list(all=True)}


@BOTH
def test_changes_name_each_changed_file_with_its_content_hash(open_sandbox, commits, backend):  # noqa: F811
    """What the harness compares after every tool call: blob hashes at the commit and now, untracked files
    included, from an index kept between calls (the Dev removing it only makes the next call rebuild it)."""
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        assert sandbox.changes() == {}
        readme = sandbox.exec("git rev-parse HEAD:README.md").stdout.strip()
        sandbox.exec("echo more >> README.md && echo new > notes.txt && git rm -q tasklite/__init__.py")
        changes = sandbox.changes()
        assert set(changes) == {"README.md", "notes.txt", "tasklite/__init__.py"}
        assert changes["README.md"].before == readme and changes["README.md"].after != readme
        assert changes["notes.txt"].before == "0" * 40
        assert changes["notes.txt"].after == sandbox.exec("git hash-object notes.txt").stdout.strip()
        assert changes["tasklite/__init__.py"].after == "0" * 40
        sandbox.exec(f"rm -f {sandbox.scratch}/hf-index-*")
        sandbox.exec("git checkout -q -- README.md")
        assert set(sandbox.changes()) == {"notes.txt", "tasklite/__init__.py"}  # reverted: no longer a change
        assert sandbox.exec("git status --porcelain").stdout.count("??") == 1  # the Dev's index untouched
        sandbox.reset(commits["v0.3.0"])
        assert sandbox.changes() == {}


def test_the_local_sandbox_builds_its_root_entry_by_entry_without_the_engines_mounts(open_sandbox, commits):  # noqa: F811
    """A recursive bind of / took in the engine's container mounts, and one vanishing mid-start failed the
    sandbox (a sporadic no_tests_ran): / is bound entry by entry, the engine's state left out."""
    from harnessforge.envs.local_sandbox import LEFT_OUT, root_binds

    args = root_binds()
    bound = {args[i + 1] for i, arg in enumerate(args) if arg == "--ro-bind"}
    assert {"/usr", "/etc"} <= bound and "/" not in bound and "/var" not in bound  # /var is walked into
    assert not any(path == left or path.startswith(left + "/") for path in bound for left in LEFT_OUT)
    with open_sandbox("local", commits["v0.2.0"]) as sandbox:
        said = sandbox.exec("ls /var/lib/docker /var/lib/containerd 2>&1; ls /usr/bin/env /bin/sh /var/lib/dpkg")
        assert "No such file or directory" in said.stdout and "/usr/bin/env" in said.stdout and "/bin/sh" in said.stdout
        assert sandbox.exec("echo x > /var/lib/dpkg/hf-owned").exit_code != 0  # still read-only
