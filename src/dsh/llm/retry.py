"""Retrying a model call that failed before it produced anything, and bounding its time.

A call is retried only while nothing has been yielded: once a stream event has reached the
caller, a retry would duplicate what it already consumed, so a mid-stream failure is re-raised.
Two clocks bound a call: ``idle_timeout`` (no stream event for that long, the first included,
is a retryable ``TIMEOUT``) and ``deadline`` (the whole call, retries and back-off included,
past which it fails with a ``TIMEOUT`` that is not retried). A server's ``Retry-After`` is
waited out (at least); one longer than what is left of the deadline fails the call at once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from dsh.errors import ProviderError
from dsh.events import Event
from dsh.llm.errors import ErrorCode
from dsh.llm.types import ModelRequest, Provider, StreamEvent

OnRetry = Callable[[int, ProviderError, float], None]
"""Called as ``on_retry(attempt, error, delay_seconds)`` before sleeping; ``attempt`` is the
number of the attempt that failed (1 for the first)."""


def backoff_delay(
    attempt: int, *, base_delay: float, max_delay: float, rng: Callable[[], float]
) -> float:
    """Full-jitter exponential backoff: uniform in [0, min(max_delay, base_delay * 2**(n-1))]."""
    return rng() * min(max_delay, base_delay * 2.0 ** (attempt - 1))


async def stream_with_retry(
    provider: Provider,
    request: ModelRequest,
    *,
    history: Sequence[Event],
    max_attempts: int = 4,
    base_delay: float = 0.5,
    max_delay: float = 8.0,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rng: Callable[[], float] = random.random,
    idle_timeout: float | None = None,
    deadline: float | None = None,
) -> AsyncIterator[StreamEvent]:
    """Stream ``request`` from ``provider``, retrying retryable errors raised before the first
    event, at most ``max_attempts`` calls in all. Other errors propagate at once. ``idle_timeout``
    and ``deadline`` are in seconds (None: unbounded)."""
    loop = asyncio.get_running_loop()
    ends_at = None if deadline is None else loop.time() + deadline
    attempt = 1
    while True:
        started = False
        try:
            stream = provider.stream(request, history=history)
            try:
                while True:
                    event = await _next_event(stream, idle_timeout, ends_at, deadline)
                    if event is None:
                        return
                    started = True
                    yield event
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
        except ProviderError as error:
            if started or not error.retryable or attempt >= max_attempts:
                raise
            delay = backoff_delay(attempt, base_delay=base_delay, max_delay=max_delay, rng=rng)
            wait = error.retry_after
            if wait is not None:
                if ends_at is not None and wait > ends_at - loop.time():
                    raise  # the server's wait outlasts the call's deadline: fail now, not then
                delay = max(delay, wait)
            if ends_at is not None:
                delay = min(delay, max(ends_at - loop.time(), 0.0))
            if on_retry is not None:
                on_retry(attempt, error, delay)
            await sleep(delay)
            attempt += 1


async def _next_event(
    stream: AsyncIterator[StreamEvent],
    idle_timeout: float | None,
    ends_at: float | None,
    deadline: float | None,
) -> StreamEvent | None:
    """The next stream event (None at the end), within the idle timeout and the deadline."""
    loop = asyncio.get_running_loop()
    left = None if ends_at is None else ends_at - loop.time()
    by_deadline = left is not None and (idle_timeout is None or left <= idle_timeout)
    try:
        async with asyncio.timeout(left if by_deadline else idle_timeout):
            return await anext(stream)
    except StopAsyncIteration:
        return None
    except TimeoutError:
        if by_deadline:
            raise ProviderError(
                ErrorCode.TIMEOUT,
                f"the model call took longer than {deadline:g} s (provider.call_timeout)",
                retryable=False,
            ) from None
        raise ProviderError(
            ErrorCode.TIMEOUT,
            f"no data from the model for {idle_timeout:g} s (provider.stream_idle_timeout)",
            retryable=True,
        ) from None
