"""What every local wire-protocol server of the tests shares: a `ThreadingHTTPServer` on a free
127.0.0.1 port in a background thread, a handler that keeps test output clean, and replies as
JSON (or plain text) with extra headers. The GitHub and LLM fakes add only their protocol."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        """A str body goes out as text/plain, anything else as JSON."""
        is_text = isinstance(body, str)
        data = body.encode() if is_text else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if is_text else "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class LocalServer:
    """Start with `with`; `url` is where clients go. Subclasses return their handler class from `_handler()`."""

    def __init__(self):
        self.stopping = threading.Event()  # wakes handlers that wait (slow replies) when the server stops
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll interval: `shutdown()` waits for one, and tests start many servers
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    def _handler(self) -> type[QuietHandler]:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
