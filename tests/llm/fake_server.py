"""A real HTTP server on 127.0.0.1 that speaks just enough OpenAI and Anthropic SSE.

Each test queues canned responses; the server answers requests with them in order and records
every request (path, headers, JSON body) so tests can assert the exact wire messages. Builders
below produce the canned responses: SSE streams in either dialect, JSON error bodies, slow
answers (for timeouts) and streams that carry an error part-way through.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Canned:
    """One HTTP response: status, headers, body parts written (and flushed) one by one."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    parts: tuple[bytes, ...] = ()
    delay: float = 0.0
    """Seconds to wait before answering (to provoke client timeouts)."""
    chunked: bool = False
    """Frame the body with ``Transfer-Encoding: chunked`` (HTTP/1.1), as real servers stream."""
    drop_after: int | None = None
    """Write only this many parts, then close the connection mid-body (a killed server)."""
    hold: threading.Event | None = None
    """Wait for this event (at most 300 s: a loaded machine may take long to get there) before
    writing part ``hold_before``."""
    hold_before: int = 0
    holds: tuple[tuple[int, threading.Event], ...] = ()
    """More holds like ``hold``: (part index, event) pairs, each event waited for (at most
    300 s) before that part is written (a server that pauses before its first chunk and again
    mid-reply)."""


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    """Names lowercased; a name sent twice keeps its last value (``header_lines`` has all)."""
    body: Any
    header_lines: tuple[tuple[str, str], ...] = ()
    """Every header line as sent, in order."""


class FakeServer:
    """Threaded HTTP server on an ephemeral loopback port; use as a context manager."""

    def __init__(self) -> None:
        self._queue: deque[Canned] = deque()
        self.fixed: dict[str, Canned] = {}
        """Answers by path (query string ignored) for any method, served every time; a GET to
        another path gets 404. Model calls (POSTs elsewhere) take the queue."""
        self.fixed_requests: list[Recorded] = []
        """GETs and fixed-path POSTs received (kept apart: ``requests`` stays the model calls)."""
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) from costing half a second.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *responses: Canned) -> FakeServer:
        """Append canned responses; each request consumes the next one."""
        with self._lock:
            self._queue.extend(responses)
        return self

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of every request received, in order."""
        return [r.body for r in self.requests]

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, recorded: Recorded) -> Canned:
        with self._lock:
            self.requests.append(recorded)
            if self._queue:
                return self._queue.popleft()
        return json_error(599, {"error": {"message": "fake server: no canned response left"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                lines = tuple(self.headers.items())
                recorded = Recorded("POST", self.path, headers, body, lines)
                fixed = server.fixed.get(self.path.partition("?")[0])
                if fixed is not None:
                    with server._lock:
                        server.fixed_requests.append(recorded)
                canned = fixed or server._next(recorded)
                if canned.delay:
                    time.sleep(canned.delay)
                # The client may give up first (timeout tests).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(canned)

            def do_GET(self) -> None:
                path = self.path.partition("?")[0]
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    lines = tuple(self.headers.items())
                    server.fixed_requests.append(Recorded("GET", self.path, headers, None, lines))
                    canned = server.fixed.get(path) or json_error(404, {"error": "not found"})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(canned)

            def _answer(self, canned: Canned) -> None:
                if canned.chunked:
                    self.protocol_version = "HTTP/1.1"
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                if canned.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                for index, part in enumerate(canned.parts):
                    if canned.drop_after is not None and index >= canned.drop_after:
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if canned.hold is not None and index == canned.hold_before:
                        canned.hold.wait(timeout=300)
                    for before, event in canned.holds:
                        if index == before:
                            event.wait(timeout=300)
                    framed = b"%x\r\n%s\r\n" % (len(part), part) if canned.chunked else part
                    self.wfile.write(framed)
                    self.wfile.flush()
                if canned.chunked:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# ---- response builders ----------------------------------------------------------------------


def json_error(status: int, body: Any) -> Canned:
    """An HTTP error with a JSON body."""
    data = json.dumps(body).encode()
    return Canned(
        status,
        {"Content-Type": "application/json", "Content-Length": str(len(data))},
        (data,),
    )


def json_ok(body: Any) -> Canned:
    """A 200 answer with a JSON body."""
    data = json.dumps(body).encode()
    return Canned(
        200, {"Content-Type": "application/json", "Content-Length": str(len(data))}, (data,)
    )


def sse(parts: list[bytes], *, delay: float = 0.0) -> Canned:
    return Canned(200, {"Content-Type": "text/event-stream"}, tuple(parts), delay)


# OpenAI chat completions


def oa_chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` payload."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake-model",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def oa_tool_call(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    """A tool-call delta entry as chat completions streams it."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    return call


def oa_usage(
    prompt: int,
    completion: int,
    *,
    cache_hit: int | None = None,
    cached_tokens: int | None = None,
    reasoning: int | None = None,
) -> dict[str, Any]:
    """A usage object; ``cache_hit`` is DeepSeek's field, ``cached_tokens`` OpenAI's."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cache_hit is not None:
        usage["prompt_cache_hit_tokens"] = cache_hit
        usage["prompt_cache_miss_tokens"] = prompt - cache_hit
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def openai_stream(*payloads: dict[str, Any] | str, done: bool = True, delay: float = 0.0) -> Canned:
    """An SSE stream of ``data: {...}`` events (a str payload is sent raw), then ``[DONE]``."""
    parts = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n".encode() for p in payloads]
    if done:
        parts.append(b"data: [DONE]\n\n")
    return sse(parts, delay=delay)


def openai_text(text: str, *, usage: dict[str, Any] | None = None) -> Canned:
    """A complete streamed text reply with finish ``stop``."""
    return openai_stream(
        oa_chunk(content=text),
        oa_chunk(finish="stop"),
        oa_chunk(no_choices=True, usage=usage or oa_usage(10, 2)),
    )


# Anthropic Messages


def anthropic_stream(*events: dict[str, Any]) -> Canned:
    """An SSE stream of ``event: TYPE`` / ``data: {...}`` pairs."""
    return sse([f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events])


def an_message_start(
    input_tokens: int = 10,
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": 1}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "fake-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }


def an_block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def an_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def an_block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def an_text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    """Start, one text delta per piece, stop."""
    return [
        an_block_start(index, {"type": "text", "text": ""}),
        *(an_delta(index, {"type": "text_delta", "text": p}) for p in pieces),
        an_block_stop(index),
    ]


def an_message_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def anthropic_text(text: str, **usage: Any) -> Canned:
    """A complete streamed text reply with stop reason ``end_turn``."""
    return anthropic_stream(an_message_start(**usage), *an_text_block(0, text), *an_message_end())
