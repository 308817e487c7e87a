"""A local server speaking GitHub's REST wire protocol, so the real PyGithub client runs in tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


class FakeGitHub:
    """Serves recorded JSON by path; `fail_with` makes every request answer that HTTP status."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        self.requests: list[str] = []
        self.fail_with: int | None = None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeGitHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                path = urlparse(self.path).path
                fake.requests.append(self.path)
                if fake.fail_with:
                    return self._send(fake.fail_with, {"message": "Service Unavailable"})
                if path not in fake.routes:
                    return self._send(404, {"message": "Not Found"})
                return self._send(200, fake.routes[path])

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
