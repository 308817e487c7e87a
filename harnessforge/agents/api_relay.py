"""The model API for a scaffold that runs inside the sandbox, whose network is off: a host-side relay
on a Unix socket that the sandbox has mounted, and nothing else.

The scaffold (the claude CLI, `ANTHROPIC_UNIX_SOCKET`) sends its Messages API requests to the socket
with a placeholder key. The relay forwards only `POST /v1/messages` (and its token count) to the one
upstream it was given, with the real key, which never enters the sandbox; any other method or path is
refused (403) and counted. It streams the answer back as it comes, and keeps the first request's tool
schemas (the scaffold's own tools, for the run's metadata and the exported rows) and the latest turn's messages
(after the CLI compacted its conversation: the view it left).
"""

from __future__ import annotations

import json
import os
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx2

ALLOWED = ("/v1/messages", "/v1/messages/count_tokens")
DROPPED_HEADERS = {"host", "x-api-key", "authorization", "content-length", "connection", "accept-encoding"}
ANTHROPIC_API = "https://api.anthropic.com"


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


class ApiRelay:
    """`with ApiRelay(socket_path, upstream, api_key) as relay:` serves until closed."""

    def __init__(self, socket_path: Path, upstream: str | None, api_key: str, auth_token: str | None = None):
        self.socket_path, self.upstream = Path(socket_path), (upstream or ANTHROPIC_API).rstrip("/")
        self.api_key, self.auth_token = api_key, auth_token
        self.refused: list[str] = []  # "METHOD path" of every request that was not let through
        self.forwarded = 0
        self.tools: list[dict] | None = None  # the first request's tool schemas (Anthropic's shape)
        self.messages: list[dict] = []  # the latest request's messages that offered tools: what a turn read
        self.client = httpx2.Client(timeout=httpx2.Timeout(600.0, connect=30.0))
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet: the Recorder keeps what matters
                pass

            def do_POST(self) -> None:
                relay._forward(self)

            def do_GET(self) -> None:
                relay._refuse(self)

            do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

        self.socket_path.unlink(missing_ok=True)
        self.server = _Server(str(self.socket_path), Handler)
        os.chmod(self.socket_path, 0o777)  # the sandbox user must be able to connect
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _refuse(self, handler: BaseHTTPRequestHandler) -> None:
        self.refused.append(f"{handler.command} {handler.path}")
        _error(handler, 403, "permission_error", "refused by the HarnessForge relay")

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?", 1)[0]
        body = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        if path not in ALLOWED:
            self._refuse(handler)
            return
        if path == "/v1/messages":
            try:
                request = json.loads(body)
            except ValueError:
                request = {}
            if isinstance(request, dict) and request.get("tools"):  # a turn's (side calls offer none)
                self.tools = self.tools or request["tools"]
                self.messages = request.get("messages") or []
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in DROPPED_HEADERS}
        headers |= {"authorization": f"Bearer {self.auth_token}"} if self.auth_token else {"x-api-key": self.api_key}
        self.forwarded += 1
        try:
            with self.client.stream("POST", self.upstream + handler.path, content=body, headers=headers) as reply:
                handler.send_response(reply.status_code)
                for name, value in reply.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        handler.send_header(name, value)
                handler.send_header("transfer-encoding", "chunked")
                handler.end_headers()
                for chunk in reply.iter_raw():
                    handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
        except httpx2.HTTPError as e:
            _error(handler, 502, "api_error", f"relay: upstream {e.__class__.__name__}: {e}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> "ApiRelay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _error(handler: BaseHTTPRequestHandler, status: int, kind: str, message: str) -> None:
    """An error in the Messages API's own shape, so the CLI reports it as the API's."""
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
