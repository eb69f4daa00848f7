"""Retrying a model call that failed before it produced anything.

A call is retried only while nothing has been yielded: once a stream event has reached the
caller, a retry would duplicate what it already consumed, so a mid-stream failure is re-raised.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from dsh.errors import ProviderError
from dsh.events import Event
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
) -> AsyncIterator[StreamEvent]:
    """Stream ``request`` from ``provider``, retrying retryable errors raised before the first
    event, at most ``max_attempts`` calls in all. Other errors propagate at once."""
    attempt = 1
    while True:
        started = False
        try:
            async for event in provider.stream(request, history=history):
                started = True
                yield event
            return
        except ProviderError as error:
            if started or not error.retryable or attempt >= max_attempts:
                raise
            delay = backoff_delay(attempt, base_delay=base_delay, max_delay=max_delay, rng=rng)
            if on_retry is not None:
                on_retry(attempt, error, delay)
            await sleep(delay)
            attempt += 1
