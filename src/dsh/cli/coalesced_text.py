"""Streamed text written in fewer, larger pieces (``dsh run --json-stream``'s ``text_delta``).

A model streams its answer in many small deltas, often a token each. ``CoalescedText`` passes
them on in order and without losing any, but at most one piece per ``interval`` seconds: a delta
after a quiet spell goes out at once; the deltas that follow it within ``interval`` wait, joined,
until the interval is over (a timer writes them then, so a model that goes quiet mid-answer does
not hold its last words back) or until ``flush`` is called, which the stream does before it
writes anything else, so text and the other lines keep their order.

A piece never ends between the two halves of a UTF-16 surrogate pair (a provider may stream
the halves of an emoji apart): the high half waits for the next piece, so each piece is text a
log can hold as it is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

INTERVAL = 0.05
"""Seconds between two pieces at most: up to 20 a second, two per 100 ms."""


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Schedule = Callable[[float, Callable[[], None]], Cancellable]
"""Calls the function after the delay (seconds); what it returns cancels that."""


def on_running_loop(delay: float, callback: Callable[[], None]) -> Cancellable:
    """``Schedule`` on the running event loop (the stream's deltas arrive on it)."""
    return asyncio.get_running_loop().call_later(delay, callback)


class CoalescedText:
    """Takes text deltas (``add``) and gives them to ``write`` in pieces (module docstring)."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = on_running_loop,
    ) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._schedule = schedule
        self._pending: list[str] = []
        self._timer: Cancellable | None = None
        self._last: float | None = None
        """When the last piece was written (None: none yet)."""

    def add(self, delta: str) -> None:
        """One delta: written now after a quiet spell, else with the next piece."""
        if not delta:
            return
        self._pending.append(delta)
        if self._timer is not None:
            return
        wait = 0.0 if self._last is None else self._last + self._interval - self._clock()
        if wait <= 0:
            self._write_pending(whole=False)
        else:
            self._timer = self._schedule(wait, self._on_timer)

    def flush(self) -> None:
        """Write whatever waits, now (the text it belongs to is over, or another line follows)."""
        self._write_pending(whole=True)

    def _on_timer(self) -> None:
        self._timer = None
        self._write_pending(whole=False)

    def _write_pending(self, *, whole: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._pending)
        self._pending.clear()
        if not whole and text and "\ud800" <= text[-1] <= "\udbff":  # half a pair: wait
            self._pending.append(text[-1])
            text = text[:-1]
        if text:
            self._last = self._clock()
            self._write(text)
