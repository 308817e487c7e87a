"""The HTTP transport both API backends give their SDK: what the SDKs' own retries do not bound.

- **One answer within `timeout` in total.** The SDKs' `timeout` is per socket read, so a server
  trickling one byte at a time never times out. Here the body is cut off once the deadline has
  passed, with the same `ReadTimeout` a silent server gets, so the SDK retries it like one.
- **A server's `retry-after` capped at `max_retry_after_s`.** The Anthropic SDK sleeps as long as it is
  told (a proxy saying an hour stalls the run for an hour, silently); the OpenAI SDK does not retry
  at all above two minutes. Capped, both wait at most that long and retry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2


class _Deadline(httpx2.SyncByteStream):
    """A response body that raises `ReadTimeout` once its request's deadline has passed."""

    def __init__(self, stream: httpx2.SyncByteStream, request: httpx2.Request, deadline: float, timeout: float):
        self._stream, self._request, self._deadline, self._timeout = stream, request, deadline, timeout

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout(f"no whole answer within {self._timeout:g} s", request=self._request)
            yield chunk

    def close(self) -> None:
        self._stream.close()


def cap_retry_after(headers: httpx2.Headers, max_s: float) -> None:
    """Lower `retry-after` (seconds) and `retry-after-ms` to `max_s`; an HTTP-date is left to the SDK."""
    for name, scale in (("retry-after", 1.0), ("retry-after-ms", 1000.0)):
        try:
            wait = float(headers.get(name, "")) / scale
        except ValueError:
            continue
        if wait > max_s:
            headers[name] = f"{max_s * scale:g}"


class BoundedTransport(httpx2.HTTPTransport):
    """`httpx2.HTTPTransport` with a total deadline per request and a capped `retry-after`."""

    def __init__(self, timeout: float, max_retry_after_s: float):
        super().__init__()
        self.timeout, self.max_retry_after_s = timeout, max_retry_after_s

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self.timeout
        response = super().handle_request(request)
        cap_retry_after(response.headers, self.max_retry_after_s)
        response.stream = _Deadline(response.stream, request, deadline, self.timeout)
        return response
