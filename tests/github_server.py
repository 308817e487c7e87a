"""A local server speaking GitHub's REST wire protocol, so the real PyGithub client runs in tests."""

from __future__ import annotations

from urllib.parse import urlparse

from tests.local_http import LocalServer, QuietHandler


class FakeGitHub(LocalServer):
    """Serves recorded JSON by path; `fail_with` makes every request answer that HTTP status."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        self.requests: list[str] = []
        self.fail_with: int | None = None
        super().__init__()

    def _handler(self):
        fake = self

        class Handler(QuietHandler):
            def do_GET(self):
                path = urlparse(self.path).path
                fake.requests.append(self.path)
                if fake.fail_with:
                    return self.reply(fake.fail_with, {"message": "Service Unavailable"})
                if path not in fake.routes:
                    return self.reply(404, {"message": "Not Found"})
                return self.reply(200, fake.routes[path])

        return Handler

    # ---- recorded objects, shaped like GitHub's answers ----------------------------------------
    def add_repo(self, full_name: str, stars: int, created_at: str) -> None:
        self.routes[f"/repos/{full_name}"] = {
            "id": 1,
            "name": full_name.split("/")[1],
            "full_name": full_name,
            "url": f"{self.url}/repos/{full_name}",
            "stargazers_count": stars,
            "created_at": created_at,
            "pushed_at": "2026-03-24T10:00:00Z",
            "default_branch": "main",
            "archived": False,
        }

    def add_issue(self, full_name: str, number: int, title: str, body: str, labels=()) -> None:
        self.routes[f"/repos/{full_name}/issues/{number}"] = {
            "id": number,
            "number": number,
            "title": title,
            "body": body,
            "state": "closed",
            "url": f"{self.url}/repos/{full_name}/issues/{number}",
            "labels": [{"name": n} for n in labels],
        }

    def add_release(self, full_name: str, tag: str, body: str, draft: bool = False, prerelease: bool = False) -> None:
        """A release, listed newest first like GitHub's `GET /repos/{owner}/{repo}/releases`."""
        listing = self.routes.setdefault(f"/repos/{full_name}/releases", [])
        number = len(listing) + 1
        listing.insert(
            0,
            {
                "id": number,
                "tag_name": tag,
                "name": tag,
                "body": body,
                "draft": draft,
                "prerelease": prerelease,
                "url": f"{self.url}/repos/{full_name}/releases/{number}",
            },
        )

    def add_pull(self, full_name: str, number: int, title: str, body: str, comments=(), labels=()) -> None:
        base = f"/repos/{full_name}/pulls/{number}"
        self.routes[base] = {
            "id": number,
            "number": number,
            "title": title,
            "body": body,
            "state": "closed",
            "merged": True,
            "url": f"{self.url}{base}",
            "labels": [{"name": n} for n in labels],
        }
        self.routes[f"{base}/comments"] = [
            {"id": i, "body": c, "url": f"{self.url}{base}/comments/{i}"} for i, c in enumerate(comments, 1)
        ]
        # GitHub answers /issues/N for a PR too, marked with pull_request
        self.routes[f"/repos/{full_name}/issues/{number}"] = {
            "id": number,
            "number": number,
            "title": title,
            "body": body,
            "labels": [],
            "url": f"{self.url}/repos/{full_name}/issues/{number}",
            "pull_request": {"url": f"{self.url}{base}"},
        }
