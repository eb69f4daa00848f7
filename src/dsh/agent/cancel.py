"""Awaiting the loop's work so that it can be cancelled (``Agent.cancel``), and why it was."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from dsh.tools.base import ToolOutput

T = TypeVar("T")

CANCELLED_BY_USER = "cancelled by the user"
"""Why a turn stopped that someone stopped (Esc, Ctrl-C, the web's Stop): ``turn/end``'s error."""


class Cancelled(Exception):
    """The running turn was cancelled; ``reason`` says why (``turn/end``'s error)."""

    def __init__(self, reason: str = CANCELLED_BY_USER) -> None:
        super().__init__(reason)
        self.reason = reason


class CancelRequest:
    """Whether the running turn was asked to stop, and why: the first request's reason."""

    def __init__(self) -> None:
        self._requested = asyncio.Event()
        self.reason = CANCELLED_BY_USER

    def request(self, reason: str = CANCELLED_BY_USER) -> None:
        """Ask the turn to stop; a later request does not change why it stopped."""
        if not self._requested.is_set():
            self.reason = reason
            self._requested.set()

    def is_set(self) -> bool:
        return self._requested.is_set()

    async def wait(self) -> None:
        await self._requested.wait()


async def guarded(cancel: CancelRequest, work: Awaitable[T]) -> T:
    """Await ``work`` unless ``cancel`` is requested first (then cancel it and raise
    ``Cancelled`` with the request's reason)."""
    task = asyncio.ensure_future(work)
    if cancel.is_set():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise Cancelled(cancel.reason)
    waiter = asyncio.create_task(cancel.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    waiter.result()  # surfaces a failure of the wait itself instead of faking a cancel
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise Cancelled(cancel.reason)


async def finished_or(
    task: asyncio.Task[ToolOutput], fallback: Callable[[], ToolOutput]
) -> ToolOutput:
    """The task's output if it finished before cancellation took effect, else ``fallback()``,
    made once the task is over (what a stopped tool printed is known only then)."""
    await asyncio.gather(task, return_exceptions=True)
    if task.cancelled() or task.exception() is not None:
        return fallback()
    return task.result()
