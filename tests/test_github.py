"""GitHub enrichment through the real PyGithub client against a local wire-protocol server."""

import urllib.parse
from datetime import datetime

import pytest

from harnessforge.errors import GitHubError
from harnessforge.github import GitHubClient
from harnessforge.mining.planner import plan
from harnessforge.mining.screening import screen
from tests.github_server import FakeGitHub

REPO = "harnessforge-examples/tasklite"


@pytest.fixture
def fake_github():
    with FakeGitHub() as gh:
        gh.add_repo(REPO, stars=4242, created_at="2021-05-01T00:00:00Z")
        gh.add_issue(
            REPO,
            3,
            "Tasks should support tags",
            "I want to group my tasks.\r\n\r\nFor example home vs work.",  # the web form's CRLF line ends
            labels=["enhancement"],
        )
        gh.add_issue(REPO, 5, "Persist tasks between runs", "Everything is lost when the program exits.")
        gh.add_pull(
            REPO,
            4,
            "Add tags to tasks",
            "Adds a tags set to Task.\n\nPart of #3",
            comments=["Should tags be case-insensitive?", "Yes, normalise them."],
            labels=["feature"],
        )
        gh.add_pull(REPO, 9, "Save and load task stores as JSON", "Closes #5")
        yield gh


def client(gh: FakeGitHub, tmp_path, **kw) -> GitHubClient:
    return GitHubClient("test-token", base_url=gh.url, cache_dir=tmp_path / "gh-cache", retries=0, throttle=None, **kw)


def test_plan_is_enriched_from_github(fake_github, example_repo, store, rules, tmp_path):
    result = plan(
        store, str(example_repo), rules, to_ref="v0.2.0", github_factory=lambda spec: client(fake_github, tmp_path)
    )
    [m01] = result.plan.milestones
    levels = result.hints["m01"].levels
    # the issues' titles name the features in the task itself: L0 says nothing new, and is empty with why
    assert "### Tasks should support tags" in m01.description and "### Persist tasks between runs" in m01.description
    assert levels[0].empty and "the issues' titles say nothing the description does not" in levels[0].empty_reason
    assert "I want to group my tasks." in levels[1].content and "issue:#3" in levels[1].sources
    assert "Adds a tags set to Task." in levels[2].content
    assert "> Should tags be case-insensitive?" in levels[2].content and "Labels: feature" in levels[2].content
    assert m01.title == "Tasks should support tags; Persist tasks between runs"
    assert "I want to group my tasks." in m01.description
    # the issue's first paragraph is why (its body read with LF line ends: the whole body was one paragraph)
    assert "home vs work" not in m01.description and "my tasks.\n\nFor example" in levels[1].content
    assert result.plan.warnings == [w for w in result.plan.warnings if "GitHub" not in w]


def test_answers_are_cached_so_replanning_sends_no_requests(fake_github, example_repo, store, rules, tmp_path):
    factory = lambda spec: client(fake_github, tmp_path)  # noqa: E731
    plan(store, str(example_repo), rules, to_ref="v0.2.0", github_factory=factory)
    sent = len(fake_github.requests)
    assert sent > 0
    assert any(r.endswith("/pulls/8") for r in fake_github.requests)  # a PR GitHub does not have (404)
    plan(store, str(example_repo), rules, to_ref="v0.2.0", github_factory=factory)
    assert len(fake_github.requests) == sent


def test_outage_degrades_to_git_only_with_a_warning(fake_github, example_repo, store, rules, tmp_path):
    fake_github.fail_with = 503
    result = plan(
        store, str(example_repo), rules, to_ref="v0.2.0", github_factory=lambda spec: client(fake_github, tmp_path)
    )
    [warning] = [w for w in result.plan.warnings if "GitHub" in w]
    assert "HTTP 503" in warning and "fall back to git history" in warning
    assert "Tasks can carry tags" in result.plan.milestones[0].description  # the changelog still describes it
    # and git still names the work: its PR titles the description does not say (never bare numbers)
    assert result.hints["m01"].levels[0].content.splitlines() == [
        "- Filter tasks by tag",
        "- Save and load task stores as JSON",
    ]
    assert len(fake_github.requests) == 1  # gave up after the first failure instead of hammering


def test_unreachable_api_is_a_clear_error(tmp_path):
    gh = GitHubClient("t", base_url="http://127.0.0.1:9", retries=0, throttle=None, timeout=2)
    with pytest.raises(GitHubError, match="unreachable during GET pull #1"):
        gh.pull(REPO, 1)


def test_screening_records_stars_and_creation_date(fake_github, example_repo, store, rules, tmp_path):
    report = screen(
        store, str(example_repo), rules, github_factory=lambda spec: client(fake_github, tmp_path), collect=False
    )
    assert report.github.stars == 4242 and report.github.created_at.year == 2021


def test_search_candidates(fake_github, tmp_path):
    fake_github.routes["/search/repositories"] = {
        "total_count": 2,
        "incomplete_results": False,
        "items": [
            {"id": 1, "full_name": "a/one", "url": f"{fake_github.url}/repos/a/one"},
            {"id": 2, "full_name": "b/two", "url": f"{fake_github.url}/repos/b/two"},
        ],
    }
    found = client(fake_github, tmp_path).search_candidates("python", 1000, None, limit=5)
    assert found == ["a/one", "b/two"]
    assert "language%3Apython" in fake_github.requests[-1] or "language:python" in fake_github.requests[-1]
    fresh = client(fake_github, tmp_path).search_candidates(
        "python", 100, None, limit=5, created_after=datetime(2026, 1, 2), max_stars=2000, sort="updated"
    )
    assert fresh == ["a/one", "b/two"]
    asked = urllib.parse.unquote_plus(fake_github.requests[-1])
    assert "stars:100..2000" in asked and "created:>=2026-01-02" in asked and "sort=updated" in asked


def test_cli_uses_token_and_api_url_from_environment(fake_github, run_cli, example_repo):
    proc = run_cli(
        "plan",
        str(example_repo),
        "--to",
        "v0.2.0",
        env={"GITHUB_TOKEN": "t", "GITHUB_API_URL": fake_github.url},
        check=True,
    )
    assert "Tasks should support tags" in proc.stdout
    assert any(r.endswith("/issues/3") for r in fake_github.requests)
