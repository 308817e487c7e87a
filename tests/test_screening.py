import json

import pytest

from harnessforge.errors import ConfigError
from harnessforge.mining.candidates import read_candidates
from harnessforge.mining.screening import screen
from harnessforge.rules import load_rules

CRITERIA = [
    "ci_config",
    "primary_language",
    "test_count",
    "recent_commits",
    "core_loc",
    "release_tags",
    "lockfile",
    "environment_builds",
]


def test_every_criterion_is_reported_with_value_threshold_and_reason(example_repo, store, rules):
    report = screen(store, str(example_repo), rules)
    assert [c.name for c in report.criteria] == CRITERIA
    named = {c.name: c for c in report.criteria}
    assert named["ci_config"].measured == [".github/workflows/ci.yml"] and named["ci_config"].passed
    assert named["primary_language"].measured == "python" and named["primary_language"].passed
    assert named["test_count"].measured == 86 and named["test_count"].method == "pytest --collect-only"
    assert named["release_tags"].measured == 5 and named["release_tags"].passed  # v0.3.0rc1 is not a release
    assert named["recent_commits"].measured == 44 and named["recent_commits"].passed is False
    assert named["core_loc"].passed is False and "lines of python" in named["core_loc"].reason
    assert named["lockfile"].measured == [] and named["lockfile"].passed is False
    assert named["environment_builds"].passed is None and named["environment_builds"].measured == "unknown"
    assert all(c.threshold and c.reason for c in report.criteria)
    assert report.passed is False and report.newest_release == "v0.5.0"
    saved = json.loads((store.repo_dir(report.repo.key) / "screening.json").read_text())
    assert saved["criteria"][2]["measured"] == 86


def test_thresholds_come_from_rules(example_repo, store, tmp_path):
    f = tmp_path / "lenient.yaml"
    f.write_text("screening:\n  min_loc: 500\n  min_recent_commits: 10\n  min_tests: 100\n")
    report = screen(store, str(example_repo), load_rules(f))
    named = {c.name: c for c in report.criteria}
    assert named["core_loc"].passed and named["recent_commits"].passed
    assert named["test_count"].passed is False and named["test_count"].threshold == ">= 100"
    assert report.provenance.rules_hash == load_rules(f).hash


def test_static_count_when_collection_is_off(example_repo, store, rules):
    report = screen(store, str(example_repo), rules, collect=False)
    count = report.criterion("test_count")
    assert count.method.startswith("static count")
    assert 40 <= count.measured < 86  # declarations, not parametrized cases


def test_candidates_file_screens_each_and_reports_failures(run_cli, example_repo, tmp_path):
    f = tmp_path / "candidates.yaml"
    f.write_text(f"candidates:\n  - {example_repo}\n  - file:///nonexistent/repo.git\n")
    proc = run_cli("screen", "--candidates", str(f), "--no-collect")
    assert proc.returncode == 0, proc.stderr
    assert "harnessforge-examples__tasklite" in proc.stdout and "fail" in proc.stdout
    assert "error" in proc.stdout and "cannot clone" in proc.stdout
    assert (tmp_path / "store" / "repos" / "harnessforge-examples__tasklite" / "screening.json").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("candidates: django/django\n", "candidates: Input should be a valid list"),
        ("repos: [a/b]\n", "candidates: Field required"),
        ("candidates: [\n", "not valid YAML"),
    ],
)
def test_invalid_candidates_file(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_candidates(f)


def test_default_candidate_list_has_the_thirty_design_repos():
    from harnessforge.mining.candidates import DEFAULT_CANDIDATES

    names = read_candidates(DEFAULT_CANDIDATES)
    assert len(names) == 30 and len(set(names)) == 30
    assert {"django/django", "microsoft/TypeScript", "gin-gonic/gin", "tokio-rs/tokio"} <= set(names)


def test_screen_without_targets_is_a_clear_error(run_cli):
    proc = run_cli("screen")
    assert proc.returncode == 1 and "nothing to screen" in proc.stderr


def _suite_repo(tmp_path, conftest: str):
    """A one-commit repository with two tests and the given conftest.py."""
    from harnessforge.gitio import GitRepo
    from tests.helpers import git

    work = tmp_path / "suite"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_one.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    (work / "conftest.py").write_text(conftest)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "suite")
    return GitRepo(work), git(work, "rev-parse", "HEAD")


def test_collection_runs_in_the_sandbox_not_on_the_host(tmp_path, monkeypatch):
    from harnessforge.mining.screening import collect_at

    monkeypatch.setenv("HF_HOST_ONLY", "a token the checkout must not see")
    outside = tmp_path / "outside.txt"
    conftest = (
        "import os, pathlib\n"
        "assert 'HF_HOST_ONLY' not in os.environ, 'the host environment leaked in'\n"
        "assert os.environ.get('CI') == '1'\n"
        f"try:\n    pathlib.Path({str(outside)!r}).write_text('escaped')\nexcept OSError:\n    pass\n"
    )
    repo, head = _suite_repo(tmp_path, conftest)
    assert collect_at(repo, head, "python", 60) == (2, "pytest --collect-only")
    assert not outside.exists()  # nothing outside the workspace reaches the host


def test_collection_that_hangs_or_fails_says_why(tmp_path):
    from harnessforge.mining.screening import collect_at

    repo, head = _suite_repo(tmp_path, "import time\ntime.sleep(30)\n")
    count, why = collect_at(repo, head, "python", 2)
    assert count is None and why.endswith("collection timed out after 2s")
    repo, head = _suite_repo(tmp_path / "broken", "raise RuntimeError('boom')\n")
    count, why = collect_at(repo, head, "python", 60)
    assert count is None and why.startswith("pytest collection failed (")
    assert collect_at(repo, head, "cobol", 60) == (None, "no collector available for cobol here")
