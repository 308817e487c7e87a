"""GitHub enrichment through PyGithub: repo metadata, issue bodies, PR descriptions, reviews,
release notes.

Optional everywhere: without `GITHUB_TOKEN` every stage works from git alone. Answers are cached
under the store, so re-planning costs no requests. `GITHUB_API_URL` points the client elsewhere
(GitHub Enterprise, or the local wire-protocol server the tests run).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import requests
from github import Auth, Github, GithubException, GithubRetry

from .atomic import atomic_write
from .errors import GitHubError
from .models import GitHubMeta


def _text(body: str | None) -> str:
    """A body as the web form wrote it, CRLF line ends and all, with LF ones: its paragraphs split on blank lines."""
    return (body or "").replace("\r\n", "\n")


@dataclass
class IssueText:
    """What the forge says of an issue: the hint ladder's L0 and L1 material."""

    number: int
    title: str
    body: str = ""
    labels: list[str] = field(default_factory=list)


@dataclass
class PullText(IssueText):
    """A pull request says what an issue says, plus its review comments (L2 material)."""

    review_comments: list[str] = field(default_factory=list)


DEFAULT_API = "https://api.github.com"


class GitHubClient:
    def __init__(
        self,
        token: str,
        base_url: str | None = None,
        cache_dir: Path | None = None,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: int = 20,
        throttle: float | None = 0.25,
    ):
        self.base_url = (base_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
        self.cache_dir = cache_dir
        self._gh = Github(
            base_url=self.base_url,
            auth=Auth.Token(token),
            timeout=timeout,
            retry=GithubRetry(total=retries, backoff_factor=backoff) if retries else None,
            seconds_between_requests=throttle,
            seconds_between_writes=throttle,
            lazy=True,
        )

    @classmethod
    def from_env(cls, cache_dir: Path | None = None, **kwargs: Any) -> "GitHubClient | None":
        token = os.environ.get("GITHUB_TOKEN")
        return cls(token, cache_dir=cache_dir, **kwargs) if token else None

    # ---- plumbing ------------------------------------------------------------------------------
    def _call(self, what: str, request: Callable[[], Any]) -> Any:
        try:
            return request()
        except GithubException as e:
            if e.status == 404:
                return None
            message = e.data.get("message") if isinstance(e.data, dict) else e.data
            raise GitHubError(f"GitHub API at {self.base_url}: {what} failed: HTTP {e.status} {message}") from None
        except (requests.RequestException, OSError) as e:
            reason = type(e).__name__ if not str(e) else str(e).splitlines()[0][:200]
            raise GitHubError(f"GitHub API at {self.base_url} unreachable during {what}: {reason}") from None

    def _cached(self, key: str, what: str, fetch: Callable[[], dict | None]) -> dict | None:
        path = self.cache_dir / f"{key}.json" if self.cache_dir else None
        if path and path.exists():
            try:
                cached = json.loads(path.read_text())
                return None if cached.get("missing") else cached
            except (ValueError, AttributeError):
                path.unlink()  # a corrupt cache entry is refetched, not trusted
        data = self._call(what, fetch)
        if path:  # a 404 is cached too ({"missing": true}), so re-planning sends no requests at all
            atomic_write(path, json.dumps(data or {"missing": True}, indent=1, default=str).encode())
        return data

    # ---- reads ---------------------------------------------------------------------------------
    def repo_meta(self, full_name: str) -> GitHubMeta | None:
        def fetch() -> dict | None:
            repository = self._gh.get_repo(full_name)
            return {
                "full_name": repository.full_name,
                "stars": repository.stargazers_count,
                "created_at": repository.created_at,
                "pushed_at": repository.pushed_at,
                "default_branch": repository.default_branch,
                "archived": repository.archived,
            }

        data = self._call(f"GET /repos/{full_name}", fetch)
        return GitHubMeta.model_validate(data) if data else None

    def release_tags(self, full_name: str, limit: int = 100) -> list[str]:
        """Tag names of the repo's published releases, newest first (drafts and pre-releases left out).
        Never cached: this is what a release sensor polls."""

        def fetch() -> list[str]:
            releases = self._gh.get_repo(full_name).get_releases()
            return [release.tag_name for release in releases[:limit] if not (release.draft or release.prerelease)]

        return self._call(f"GET /repos/{full_name}/releases", fetch) or []

    def releases(self, full_name: str, limit: int = 300) -> list[tuple[str, str]]:
        """(tag, body) of the repo's published releases, newest first (drafts left out): release
        notes for projects that keep no changelog file. Cached like the other answers."""

        def fetch() -> dict:
            found = self._gh.get_repo(full_name).get_releases()
            return {
                "releases": [
                    {"tag": release.tag_name, "body": release.body or ""}
                    for release in found[:limit]
                    if not release.draft
                ]
            }

        data = self._cached("releases", f"GET /repos/{full_name}/releases", fetch)
        return [(release["tag"], _text(release["body"])) for release in (data or {}).get("releases", [])]

    def issue(self, full_name: str, number: int) -> IssueText | None:
        def fetch() -> dict:
            found = self._gh.get_repo(full_name).get_issue(number)
            return {
                "number": number,
                "title": found.title,
                "body": found.body or "",
                "labels": [label.name for label in found.labels],
                "is_pull": found.pull_request is not None,
            }

        data = self._cached(f"issues/{number}", f"GET issue #{number}", fetch)
        if not data or data.get("is_pull"):
            return None
        return IssueText(data["number"], data["title"], _text(data["body"]), data["labels"])

    def pull(self, full_name: str, number: int) -> PullText | None:
        def fetch() -> dict:
            found = self._gh.get_repo(full_name).get_pull(number)
            data = {
                "number": number,
                "title": found.title,
                "body": found.body or "",
                "labels": [label.name for label in found.labels],
            }
            data["review_comments"] = [comment.body for comment in found.get_review_comments() if comment.body]
            return data

        data = self._cached(f"pulls/{number}", f"GET pull #{number}", fetch)
        if not data:
            return None
        comments = [_text(comment) for comment in data["review_comments"]]
        return PullText(data["number"], data["title"], _text(data["body"]), data["labels"], comments)

    def search_candidates(
        self,
        language: str,
        min_stars: int,
        pushed_after: datetime | None,
        limit: int,
        created_after: datetime | None = None,
        max_stars: int | None = None,
        sort: str = "stars",
    ) -> list[str]:
        """`owner/name` of active repositories in `language`, by stars or last push."""
        stars = f"{min_stars}..{max_stars}" if max_stars is not None else f">={min_stars}"
        query = f"language:{language} stars:{stars} archived:false"
        if pushed_after:
            query += f" pushed:>={pushed_after:%Y-%m-%d}"
        if created_after:
            query += f" created:>={created_after:%Y-%m-%d}"

        def fetch() -> list[str]:
            found = self._gh.search_repositories(query, sort=sort, order="desc")
            out = []
            for repo in found:
                out.append(repo.full_name)
                if len(out) >= limit:
                    break
            return out

        return self._call(f"search {query!r}", fetch) or []
