"""stream_with_retry: backoff before the first event only, against the real adapter and server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from dsh.errors import ProviderError
from dsh.llm.errors import ErrorCode, retry_after_seconds
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.retry import backoff_delay, stream_with_retry
from dsh.llm.types import Finish, StreamEvent, TextDelta
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    json_error,
    oa_chunk,
    openai_stream,
    openai_text,
)
from tests.llm.provider_helpers import collect, collect_until_error, make_request

UNAVAILABLE = json_error(503, {"error": {"message": "Server is busy", "type": "server_error"}})


class Recorder:
    """Stands in for both ``on_retry`` and ``sleep``; records what it was given."""

    def __init__(self) -> None:
        self.retries: list[tuple[int, str, float]] = []
        self.sleeps: list[float] = []

    def on_retry(self, attempt: int, error: ProviderError, delay: float) -> None:
        self.retries.append((attempt, error.code, delay))

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def retrying(server: FakeServer, rec: Recorder, **kwargs: Any) -> AsyncIterator[StreamEvent]:
    provider = OpenAICompatProvider("deepseek", "m", server.url, "sk-test")
    return stream_with_retry(
        provider,
        make_request(),
        history=(),
        on_retry=rec.on_retry,
        sleep=rec.sleep,
        rng=lambda: 0.5,
        **kwargs,
    )


def test_unavailable_then_success_yields_the_success_after_one_retry(server: FakeServer):
    server.queue(UNAVAILABLE, openai_text("hello"))
    rec = Recorder()

    events = collect(retrying(server, rec))

    assert events[0] == TextDelta("hello")
    assert events[-1] == Finish("stop")
    assert rec.retries == [(1, ErrorCode.UNAVAILABLE, 0.25)]
    assert rec.sleeps == [0.25]
    assert len(server.requests) == 2


def test_auth_error_is_not_retried(server: FakeServer):
    server.queue(json_error(401, {"error": {"message": "bad key"}}), openai_text("never"))
    rec = Recorder()

    _, error = collect_until_error(retrying(server, rec))

    assert error.code == ErrorCode.AUTH
    assert rec.retries == []
    assert len(server.requests) == 1


def test_error_after_the_first_event_is_not_retried(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(content="partial"),
            {"error": {"message": "Server overloaded", "type": "server_error"}},
            done=False,
        ),
        openai_text("never"),
    )
    rec = Recorder()

    events, error = collect_until_error(retrying(server, rec))

    assert events == [TextDelta("partial")]
    assert (error.code, error.retryable) == (ErrorCode.UNAVAILABLE, True)
    assert rec.retries == []
    assert len(server.requests) == 1


def test_attempts_are_capped(server: FakeServer):
    server.queue(*[UNAVAILABLE] * 5)
    rec = Recorder()

    _, error = collect_until_error(retrying(server, rec, max_attempts=3))

    assert error.code == ErrorCode.UNAVAILABLE
    assert [attempt for attempt, _, _ in rec.retries] == [1, 2]
    assert len(server.requests) == 3


def test_delays_grow_exponentially_with_full_jitter_up_to_the_cap(server: FakeServer):
    server.queue(*[UNAVAILABLE] * 6)
    rec = Recorder()

    collect_until_error(
        stream_with_retry(
            OpenAICompatProvider("deepseek", "m", server.url, "sk-test"),
            make_request(),
            history=(),
            max_attempts=6,
            base_delay=1.0,
            max_delay=5.0,
            sleep=rec.sleep,
            rng=lambda: 1.0,
        )
    )

    assert rec.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0]


@pytest.mark.parametrize("draw", [0.0, 0.3, 0.999])
def test_backoff_delay_is_a_uniform_draw_below_the_exponential_bound(draw: float):
    delay = backoff_delay(3, base_delay=0.5, max_delay=8.0, rng=lambda: draw)

    assert delay == pytest.approx(draw * 2.0)


# ---- idle timeout and call deadline ---------------------------------------------------------


class _Silent:
    """A provider that says nothing until released (a long prefill), then answers."""

    name = "silent"

    def __init__(self, silent_calls: int, *, after_first: bool = False) -> None:
        import asyncio

        self.calls = 0
        self.silent_calls = silent_calls
        self.after_first = after_first
        self._never = asyncio.Event()

    async def stream(self, request: Any, *, history: Any) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.after_first:
            yield TextDelta("partial")
        if self.calls <= self.silent_calls:
            await self._never.wait()
        yield TextDelta("hello")
        yield Finish("stop")


def _bounded(provider: Any, rec: Recorder, **kwargs: Any) -> AsyncIterator[StreamEvent]:
    return stream_with_retry(
        provider, make_request(), history=(), on_retry=rec.on_retry, sleep=rec.sleep, **kwargs
    )


def test_a_silent_stream_times_out_retryably_and_is_retried_before_its_first_event():
    rec = Recorder()
    provider = _Silent(silent_calls=1)
    events = collect(_bounded(provider, rec, idle_timeout=0.05))
    assert events == [TextDelta("hello"), Finish("stop")]
    assert [code for _, code, _ in rec.retries] == [ErrorCode.TIMEOUT]
    assert provider.calls == 2


def test_silence_after_the_first_event_is_a_timeout_that_is_not_retried():
    rec = Recorder()
    events, error = collect_until_error(
        _bounded(_Silent(silent_calls=9, after_first=True), rec, idle_timeout=0.05)
    )
    assert events == [TextDelta("partial")]
    assert error.code == ErrorCode.TIMEOUT and error.retryable
    assert "stream_idle_timeout" in error.detail
    assert rec.retries == []


def test_the_call_deadline_is_final_and_not_retried():
    rec = Recorder()
    provider = _Silent(silent_calls=9)
    with pytest.raises(ProviderError) as caught:
        collect(_bounded(provider, rec, idle_timeout=60.0, deadline=0.05))
    assert caught.value.code == ErrorCode.TIMEOUT and not caught.value.retryable
    assert "call_timeout" in caught.value.detail
    assert provider.calls == 1 and rec.retries == []


def _rate_limited(retry_after: str) -> Canned:
    limited = json_error(429, {"error": {"message": "Rate limit reached", "type": "requests"}})
    return Canned(limited.status, {**limited.headers, "Retry-After": retry_after}, limited.parts)


def test_a_rate_limit_waits_at_least_the_servers_retry_after(server: FakeServer):
    server.queue(_rate_limited("7"), openai_text("hello"))
    rec = Recorder()

    events = collect(retrying(server, rec))

    assert events[-1] == Finish("stop")
    assert rec.retries == [(1, ErrorCode.RATE_LIMITED, 7.0)]
    assert rec.sleeps == [7.0]


def test_a_retry_after_longer_than_the_call_deadline_fails_at_once(server: FakeServer):
    server.queue(_rate_limited("3600"), openai_text("never asked"))
    rec = Recorder()

    _, error = collect_until_error(retrying(server, rec, deadline=600.0))

    assert error.code == ErrorCode.RATE_LIMITED and error.retry_after == 3600.0
    assert rec.retries == [] and len(server.requests) == 1


def test_retry_after_is_read_in_seconds_milliseconds_and_as_an_http_date():
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "12"}, now=now) == 12.0
    assert retry_after_seconds({"retry-after-ms": "1500", "Retry-After": "2"}, now=now) == 1.5
    date = "Tue, 01 Dec 2026 12:00:30 GMT"
    assert retry_after_seconds({"Retry-After": date}, now=now) == 30.0
    assert retry_after_seconds({"Retry-After": "Tue, 01 Dec 2026 11:00:00 GMT"}, now=now) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}, now=now) is None
    assert retry_after_seconds({"Retry-After": "-5"}, now=now) is None
    assert retry_after_seconds({}, now=now) is None


def test_the_anthropic_adapter_reads_retry_after_too(server: FakeServer):
    from dsh.llm.anthropic import AnthropicProvider

    server.queue(_rate_limited("4"))

    _, error = collect_until_error(
        AnthropicProvider("anthropic", "m", server.url, "k").stream(make_request(), history=())
    )

    assert (error.code, error.retry_after) == (ErrorCode.RATE_LIMITED, 4.0)
