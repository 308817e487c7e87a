"""Local servers speaking the Anthropic Messages and OpenAI chat-completions wire protocols.

The real `anthropic` and `openai` SDKs (and the `claude` CLI) talk to these over HTTP, so tests
exercise the clients' own request building, parsing, retries and timeouts. A test queues the
answers it wants (`push`), the server hands them out in order and records every request
(`requests`), so the test can assert what the client actually sent. `AnthropicServer(cache=PromptCache())`
also answers `usage` as Anthropic's prompt caching would.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlparse

from tests.local_http import LocalServer, QuietHandler


@dataclass
class Reply:
    """One scripted answer: a JSON body (or raw text) with a status, extra headers and a delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # answer only after this long: beyond the client's timeout to test it
    reset: bool = False  # drop the connection with a TCP reset: instead of an answer, or after `cut` bytes
    cut: int | None = None  # send the status line, the headers and only this many bytes of the body, then...
    stall_s: float = 0.0  # ...hang this long (beyond the client's timeout) before closing, unless `reset`
    trickle_s: float = 0.0  # send the body 8 bytes at a time, this long apart: no read ever waits long
    stream_events: int | None = None  # a streamed answer: only its first N server-sent events, then close
    pause_before_stop_s: float = 0.0  # a streamed answer: wait this long before its stop reason (still writing)


@dataclass
class Request:
    """What a client sent: method, path (with query), lower-cased headers, the parsed JSON body, and
    when it arrived (`time.monotonic()`), to measure a client's backoff between retries."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)


class ScriptedServer(LocalServer):
    """A local server answering POSTs to `endpoint` from a queue of `Reply`s.

    Protocol subclasses say how an error body looks and may stream (`_stream`). With the queue
    empty the server answers 500 "no scripted reply", so a missing script fails loudly.
    `always` (a Reply) is answered to every request once the queue is empty: persistent outages.
    """

    endpoint = "/"

    def __init__(self):
        self.requests: list[Request] = []
        self.always: Reply | None = None
        # `main(body)` False: a client's side request (e.g. the claude CLI's background calls), answered
        # with `side_reply` without consuming the script, and kept apart in `side_requests`.
        self.main: Callable[[Any], bool] = lambda body: True
        self.side_reply: Reply | None = None
        self.side_requests: list[Request] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        super().__init__()

    # ---- scripting --------------------------------------------------------------------------
    def push(self, *replies: Reply | dict) -> None:
        """Queue answers; a plain dict is a 200 JSON body."""
        with self._lock:
            self._queue.extend(r if isinstance(r, Reply) else Reply(body=r) for r in replies)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "code": status}}

    def error(self, status: int, message: str = "error", retry_after: str | None = None, delay_s: float = 0.0) -> Reply:
        """An error reply. Without `retry_after`, `retry-after-ms: 1` keeps SDK backoff (0.5 s+) out of tests."""
        headers = {"retry-after": retry_after} if retry_after is not None else {"retry-after-ms": "1"}
        return Reply(status=status, body=self.error_body(status, message), headers=headers, delay_s=delay_s)

    def _next(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.always or Reply(500, self.error_body(500, "scripted server: no reply queued"))

    def answer(self, body: Any, reply: Reply) -> Reply:
        """The reply to send for a request body (protocols may fill in what depends on the request)."""
        return reply

    def _stream(self, handler: BaseHTTPRequestHandler, body: Any, upto: int | None = None, pause_s: float = 0) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not stream")

    # ---- HTTP -------------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(QuietHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request("POST", self.path, headers, body)
                if urlparse(self.path).path != fake.endpoint:
                    fake.requests.append(request)
                    return self._send(Reply(404, fake.error_body(404, f"no route {self.path}")))
                if fake.side_reply is not None and not fake.main(body):
                    fake.side_requests.append(request)
                    reply = fake.side_reply
                else:
                    fake.requests.append(request)
                    reply = fake.answer(body, fake._next())
                if reply.delay_s and fake.stopping.wait(reply.delay_s):
                    return
                try:
                    if reply.cut is not None:
                        self._cut(reply)
                    elif reply.trickle_s:
                        self._trickle(reply)
                    elif reply.reset:
                        self._reset()
                    elif reply.status == 200 and isinstance(body, dict) and body.get("stream"):
                        fake._stream(self, reply.body, reply.stream_events, reply.pause_before_stop_s)
                    else:
                        self._send(reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            def _send(self, reply: Reply) -> None:
                self.reply(reply.status, reply.body, reply.headers)

            def _head(self, reply: Reply) -> bytes:
                """Status line and headers (Content-Length: the whole body); returns the body to send."""
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                return data

            def _trickle(self, reply: Reply) -> None:
                """The whole answer, slowly: each read gets bytes well within any per-read timeout."""
                data = self._head(reply)
                for i in range(0, len(data), 8):
                    self.wfile.write(data[i : i + 8])
                    self.wfile.flush()
                    if fake.stopping.wait(reply.trickle_s):
                        return

            def _cut(self, reply: Reply) -> None:
                """The answer's head and the first `cut` bytes of its body (Content-Length says more), then
                a stall or a reset: a connection that dies mid-body."""
                data = self._head(reply)
                self.wfile.write(data[: reply.cut])
                self.wfile.flush()
                if reply.reset:
                    self._reset()
                else:
                    fake.stopping.wait(reply.stall_s)
                    self.close_connection = True

            def _reset(self) -> None:
                """RST instead of a FIN: SO_LINGER 0, then close."""
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

        return Handler


def _sse(
    handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]], pause_at: int = -1, pause_s: float = 0
) -> None:
    """Write server-sent events (waiting `pause_s` before event `pause_at`); HTTP/1.0, so closing the
    connection ends the stream."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for index, (event, data) in enumerate(events):
        if index == pause_at:
            time.sleep(pause_s)
        line = f"event: {event}\n" if event else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        handler.wfile.write(f"{line}data: {payload}\n\n".encode())
        handler.wfile.flush()


# ---- Anthropic Messages API ------------------------------------------------------------------
class AnthropicServer(ScriptedServer):
    """`POST /v1/messages` (any query, e.g. the CLI's `?beta=true`). Point a client at `url`.

    A request with `"stream": true` gets the queued message replayed as the SSE event sequence
    (message_start, content_block_start/delta/stop per block, message_delta, message_stop), so the
    same script serves the SDK and the streaming `claude` CLI.
    """

    endpoint = "/v1/messages"

    def __init__(self, cache: PromptCache | None = None):
        self.cache = cache
        super().__init__()

    def answer(self, body: Any, reply: Reply) -> Reply:
        """With a `cache`, a message's `usage` is what Anthropic would bill for this request."""
        if self.cache is None or reply.status != 200 or not isinstance(body, dict) or not isinstance(reply.body, dict):
            return reply
        output = max(1, len(json.dumps(reply.body.get("content", []))) // 4)
        usage = self.cache.usage(body, output_tokens=output)
        return dataclasses.replace(reply, body={**reply.body, "usage": usage})

    def error_body(self, status: int, message: str) -> Any:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        return {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": message}}

    @staticmethod
    def message(
        *blocks: dict,
        stop_reason: str = "end_turn",
        model: str = "claude-sonnet-4-5",
        input_tokens: int = 10,
        output_tokens: int = 5,
        cache_read: int = 0,
        cache_write: int = 0,
    ) -> dict:
        """A Messages API response; `blocks` from `text`, `tool_use`, `thinking`."""
        return {
            "id": "msg_local",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": list(blocks),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        }

    @staticmethod
    def text(text: str) -> dict:
        return {"type": "text", "text": text}

    @staticmethod
    def tool_use(id: str, name: str, input: Any) -> dict:
        return {"type": "tool_use", "id": id, "name": name, "input": input}

    @staticmethod
    def thinking(text: str, signature: str = "sig-local") -> dict:
        return {"type": "thinking", "thinking": text, "signature": signature}

    def _stream(self, handler: BaseHTTPRequestHandler, msg: dict, upto: int | None = None, pause_s: float = 0) -> None:
        usage = msg["usage"]
        start = {**msg, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(msg["content"]):
            empty, deltas = _block_deltas(block)
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": empty}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        delta = {"stop_reason": msg["stop_reason"], "stop_sequence": None}
        events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
        events.append(("message_stop", {"type": "message_stop"}))
        _sse(handler, events[:upto], pause_at=len(events) - 2, pause_s=pause_s)  # -2: the message_delta


def _block_deltas(block: dict) -> tuple[dict, list[dict]]:
    """A content block as its empty start form plus the deltas that rebuild it."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
        return {"type": "thinking", "thinking": "", "signature": ""}, [
            *deltas,
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    if kind == "tool_use":
        raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
        empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        return empty, [{"type": "input_json_delta", "partial_json": raw}]
    return block, []


# ---- Anthropic prompt caching, emulated ------------------------------------------------------------
def tokens_of(block: Any) -> int:
    """Estimated tokens of one block: its JSON length / 4 (`cache_control` excluded)."""
    return max(1, len(json.dumps(_uncontrolled(block), sort_keys=True)) // 4)


def _uncontrolled(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def cache_blocks(body: dict) -> list[tuple[str, Any]]:
    """A Messages request as (kind, block) in the order Anthropic caches it: tools, system, messages."""
    system = body.get("system") or []
    system = [{"type": "text", "text": system}] if isinstance(system, str) else system
    blocks = [("tool", t) for t in body.get("tools") or []] + [("system", b) for b in system]
    for m in body.get("messages") or []:
        content = m.get("content")
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        blocks += [(m.get("role", "user"), b) for b in content]
    return blocks


class PromptCache:
    """Anthropic's prompt cache, so the usage a client reads back is what the API would bill.

    A `cache_control` breakpoint on a block writes the prefix that ends there (tools, system,
    messages, in that order). A later request reads the longest live prefix that ends at one of its
    breakpoints or at most `lookback` blocks before one; it is billed as `cache_read_input_tokens`,
    the tokens from there to the last breakpoint as `cache_creation_input_tokens`, the rest as
    `input_tokens`. Prefixes under `min_tokens` are not cached; entries live `ttl_s` after last use.
    The cache is per model, and every request's usage is kept in `log`.
    """

    def __init__(self, min_tokens: int = 1024, lookback: int = 20, ttl_s: float = 300.0):
        self.min_tokens, self.lookback, self.ttl_s = min_tokens, lookback, ttl_s
        self.entries: dict[str, float] = {}  # prefix digest -> expiry (time.monotonic)
        self.log: list[dict[str, int]] = []
        self._lock = threading.Lock()

    def usage(self, body: dict, output_tokens: int = 0) -> dict[str, int]:
        blocks = cache_blocks(body)
        digest = hashlib.sha256(str(body.get("model")).encode())
        digests, ends, total = [], [], 0  # per block: digest of the prefix ending with it, tokens up to it
        for kind, block in blocks:
            digest.update(json.dumps([kind, _uncontrolled(block)], sort_keys=True).encode())
            digests.append(digest.hexdigest())
            total += tokens_of(block)
            ends.append(total)
        breakpoints = [i for i, (_, b) in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        with self._lock:
            now = time.monotonic()
            hit = -1
            for bp in breakpoints:
                for i in range(bp, max(bp - self.lookback, 0) - 1, -1):
                    if self.entries.get(digests[i], 0.0) > now:
                        hit = max(hit, i)
                        break
            read = ends[hit] if hit >= 0 else 0
            if hit >= 0:
                self.entries[digests[hit]] = now + self.ttl_s
            written = [bp for bp in breakpoints if bp > hit and ends[bp] >= self.min_tokens]
            for bp in written:
                self.entries[digests[bp]] = now + self.ttl_s
            write = ends[written[-1]] - read if written else 0
            usage = {
                "input_tokens": total - read - write,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
                "output_tokens": output_tokens,
            }
            self.log.append(usage)
        return usage


# ---- OpenAI chat completions (and vLLM / SGLang, which speak it) -----------------------------
class OpenAIServer(ScriptedServer):
    """`POST /v1/chat/completions`. Point a client at `base_url` (`url` + `/v1`)."""

    endpoint = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": str(status)}}

    @staticmethod
    def completion(
        content: str | None = None,
        tool_calls: list[dict] | None = None,
        finish_reason: str | None = None,
        model: str = "local-model",
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        cached_tokens: int | None = None,
        **message_extra: Any,
    ) -> dict:
        """A chat completion; `message_extra` adds fields such as vLLM's `reasoning_content`."""
        message = {"role": "assistant", "content": content, **message_extra}
        if tool_calls:
            message["tool_calls"] = tool_calls
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        return {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": usage,
        }

    def _stream(
        self, handler: BaseHTTPRequestHandler, completion: dict, upto: int | None = None, pause_s: float = 0
    ) -> None:
        """A queued completion as Chat Completions chunks: the role and text, each tool call whole in
        one delta, the finish reason, the usage (asked for or not: some servers always send it), [DONE]."""
        choice = completion["choices"][0]
        message, base = choice["message"], {k: completion[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"

        def chunk(delta: dict, finish: str | None = None, **extra: Any) -> dict:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

        chunks = [chunk({"role": "assistant", "content": message.get("content") or ""})]
        for index, call in enumerate(message.get("tool_calls") or []):
            chunks.append(chunk({"tool_calls": [{"index": index, **call}]}))
        chunks.append(chunk({}, choice["finish_reason"]))
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
        _sse(handler, [(None, c) for c in chunks[:upto]] + [(None, "[DONE]")])

    @staticmethod
    def tool_call(id: str, name: str, arguments: str | dict) -> dict:
        """A tool call; `arguments` may be a raw (possibly malformed) string."""
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}
