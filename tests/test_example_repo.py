"""The example repository is realistic enough to plan from, and its releases really work."""

import subprocess
import sys

from harnessforge.examples import build_example_repo
from tests.helpers import git


def test_shape_of_history(example_repo):
    tags = git(example_repo, "tag").split()
    assert tags == ["v0.1.0", "v0.2.0", "v0.3.0", "v0.3.0rc1", "v0.4.0"]
    subjects = git(example_repo, "log", "--first-parent", "--format=%s").splitlines()
    assert sum(s.startswith("Merge pull request #") for s in subjects) == 7
    assert sum(s.endswith(")") and "(#" in s for s in subjects) == 6
    assert {"docs: describe tags in the README", "ci: cache pip downloads", "Release 0.3.0", "Tidy store tests"} <= set(
        subjects
    )
    changelog = git(example_repo, "show", "v0.4.0:CHANGELOG.md")
    assert "## [0.2.0]" in changelog and "(#4, part of #3)" in changelog


def test_build_is_deterministic(tmp_path, example_repo):
    again = build_example_repo(tmp_path / "again")
    assert git(again, "rev-parse", "v0.4.0^{commit}") == git(example_repo, "rev-parse", "v0.4.0^{commit}")


def test_every_release_passes_its_own_tests(example_repo, tmp_path):
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(example_repo), str(work)], check=True)
    for tag in ("v0.1.0", "v0.2.0", "v0.3.0", "v0.4.0"):
        git(work, "checkout", "-q", tag)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=work, capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{tag}: {proc.stdout[-2000:]}"


def test_cli_builds_it_and_refuses_to_overwrite(run_cli, tmp_path):
    dest = tmp_path / "tl"
    assert run_cli("example-repo", str(dest), check=True).stdout.strip() == str(dest)
    assert (dest / "tasklite" / "cli.py").exists()
    proc = run_cli("example-repo", str(dest))
    assert proc.returncode == 1 and "already exists and is not empty" in proc.stderr
