"""Awaiting the loop's work so that the user can cancel it (``Agent.cancel``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from dsh.tools.base import ToolOutput

T = TypeVar("T")


class Cancelled(Exception):
    """The user cancelled the running turn."""


async def guarded(cancel: asyncio.Event, work: Awaitable[T]) -> T:
    """Await ``work`` unless ``cancel`` is set first (then cancel it and raise ``Cancelled``)."""
    task = asyncio.ensure_future(work)
    if cancel.is_set():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise Cancelled
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
    raise Cancelled


async def finished_or(task: asyncio.Task[ToolOutput], fallback: ToolOutput) -> ToolOutput:
    """The task's output if it finished before cancellation took effect, else ``fallback``."""
    await asyncio.gather(task, return_exceptions=True)
    if task.cancelled() or task.exception() is not None:
        return fallback
    return task.result()
