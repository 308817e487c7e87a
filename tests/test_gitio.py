import shutil
import subprocess

import pytest

from harnessforge.errors import RepoError
from harnessforge.gitio import GitRepo, resolve_repo
from harnessforge.repos import open_repo, spec_for
from tests.helpers import git


def test_resolve_worktree_uses_github_origin_for_the_key(example_repo):
    spec = resolve_repo(str(example_repo))
    assert (spec.kind, spec.key, spec.github) == (
        "worktree",
        "harnessforge-examples__tasklite",
        "harnessforge-examples/tasklite",
    )
    assert spec.url == str(example_repo)


def test_resolve_bare_dir_without_remote(example_repo, tmp_path):
    bare = tmp_path / "mylib.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_repo), str(bare)], check=True)
    git(bare, "remote", "remove", "origin")
    spec = resolve_repo(str(bare))
    assert (spec.kind, spec.key, spec.github) == ("bare", "local__mylib", None)


@pytest.mark.parametrize(
    "arg, key, github",
    [
        ("https://github.com/psf/requests.git", "psf__requests", "psf/requests"),
        ("git@github.com:pallets/flask.git", "pallets__flask", "pallets/flask"),
        ("https://gitlab.example.org/group/sub/proj.git", "sub__proj", None),
        ("file:///srv/git/tool.git", "git__tool", None),
    ],
)
def test_resolve_urls(arg, key, github):
    spec = resolve_repo(arg)
    assert (spec.kind, spec.url, spec.key, spec.github) == ("url", arg, key, github)


def test_resolve_owner_name_to_github():
    spec = resolve_repo("django/django")
    assert (spec.kind, spec.url, spec.key) == ("github", "https://github.com/django/django.git", "django__django")


@pytest.mark.parametrize("arg", ["not a repo!", "/definitely/not/here", "a/b/c"])
def test_unresolvable_arguments_are_clear_errors(arg):
    with pytest.raises(RepoError, match="not a local git repository, a git URL"):
        resolve_repo(arg)


def test_plain_directory_is_rejected(tmp_path):
    with pytest.raises(RepoError, match="not a git repository"):
        resolve_repo(str(tmp_path))


def test_clone_is_cached_and_fetched_not_recloned(example_repo, tmp_path, store):
    src = tmp_path / "src"
    shutil.copytree(example_repo, src)
    spec = resolve_repo(str(src))
    repo = open_repo(store, spec)
    marker = repo.path / "hf-marker"
    marker.write_text("still the same clone")
    old_head = repo.head()
    git(src, "commit", "-q", "--allow-empty", "-m", "New work upstream")
    git(src, "tag", "v9.9.9")
    repo = open_repo(store, spec)
    assert marker.exists(), "the cache was re-cloned instead of fetched"
    assert repo.head() != old_head and repo.head() == git(src, "rev-parse", "HEAD")
    assert "v9.9.9" in [t.name for t in repo.tags()]
    assert (store.repo_dir(spec.key) / "repo.json").exists()


def test_minimal_git_directory_is_cloned_first(example_repo, tmp_path, store):
    """GitPython cannot open a git dir without `config`; cloning it into the cache first works."""
    bare = tmp_path / "minimal.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_repo), str(bare)], check=True)
    (bare / "config").unlink()
    for extra in ("description", "hooks", "info"):
        shutil.rmtree(bare / extra, ignore_errors=True) if (bare / extra).is_dir() else (bare / extra).unlink(
            missing_ok=True
        )
    repo = open_repo(store, resolve_repo(str(bare)))
    assert len(repo.tags()) == 6


def test_bad_url_is_a_clear_error_and_registers_nothing(store):
    spec = resolve_repo("file:///nonexistent/path/repo.git")
    with pytest.raises(
        RepoError, match="cannot clone file:///nonexistent/path/repo.git: .*does not appear to be a git repository"
    ):
        open_repo(store, spec)
    assert not store.repo_dir(spec.key).exists()
    assert list((store.root / "cache" / "git").iterdir()) == []


def test_bad_url_via_cli(run_cli):
    proc = run_cli("plan", "file:///nonexistent/path/repo.git")
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: cannot clone file:///nonexistent/path/repo.git")
    assert "Traceback" not in proc.stderr


def test_shallow_clone_is_a_clear_error(example_repo, tmp_path, store, run_cli):
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "3", f"file://{example_repo}", str(shallow)], check=True)
    with pytest.raises(RepoError, match="is a shallow clone.*git fetch --unshallow"):
        open_repo(store, resolve_repo(str(shallow)))
    assert not store.git_cache(resolve_repo(str(shallow)).key).exists()
    proc = run_cli("plan", str(shallow))
    assert proc.returncode == 1 and "shallow clone" in proc.stderr


def test_unregistered_key_is_a_clear_error(store):
    with pytest.raises(RepoError, match="no repository is registered under key 'local__nothing'"):
        spec_for(store, "local__nothing")


def test_first_parent_log_reads_numstat_renames_and_binaries(tmp_path):
    from datetime import datetime, timezone

    from harnessforge.examples.builder import RepoBuilder

    b = RepoBuilder(tmp_path / "r", datetime(2026, 1, 1, tzinfo=timezone.utc))
    first = b.commit("one", {"a.txt": "1\n2\n3\n", "img.bin": b"\0\1\2"})
    b.git("mv", "a.txt", "b.txt")
    b.commit("two", {"b.txt": "1\n2\n3\n4\n", "img.bin": b"\0\1\2\3"})
    repo = GitRepo(b.path / ".git")
    [c] = repo.first_parent_log(first, "HEAD")
    changes = {f.path: f for f in c.files}
    assert changes["b.txt"].old_path == "a.txt" and changes["b.txt"].added == 1
    assert changes["img.bin"].binary


def test_a_squash_merged_bodys_crlf_line_ends_read_as_lf(tmp_path):
    """cobra's squash merges keep the PR form's CRLF: paragraphs split on blank lines only with LF line ends (else a
    body's first paragraph is the whole body, trailers and all)."""
    from datetime import datetime, timezone

    from harnessforge.examples.builder import RepoBuilder

    b = RepoBuilder(tmp_path / "r", datetime(2026, 1, 1, tzinfo=timezone.utc))
    first = b.commit("one", {"a.txt": "1\n"})
    body = "Follow-up.\r\n\r\nThis lets a program reset its templates.\r\n\r\nSigned-off-by: A <a@example.org>"
    b.write({"a.txt": "2\n"})
    b.git("add", "-A")
    b.git("commit", "-q", "--cleanup=verbatim", "-m", f"Allow to reset the templates (#12)\n\n{body}")
    repo = GitRepo(b.path / ".git")
    [commit] = repo.first_parent_log(first, "HEAD")
    assert commit.body == body.replace("\r\n", "\n")
    assert repo.graph(first, "HEAD")[commit.sha][2] == commit.body
