"""Blocking work kept off an event loop, while what only the loop may touch stays on it.

An open ``Session`` is not thread-safe: a face touches it only from its event loop (the
terminal UI's and the web's appends, reads and the pages' subscribers all run there). A command
that both changes the log and does blocking file I/O (``/undo``: reads and hashes the turn's
files, writes them back with fsyncs) is therefore written as a generator of ``Steps``: it does
its log work itself and yields each piece of file work as a callable that touches no session;
what the callable returns is sent back in at the ``yield``, what it raises is raised there.

- ``run_here`` runs every piece on the calling thread (``dsh undo``; the web's ``/undo``
  handler, which stays on its loop: a few small files).
- ``run_in_threads`` awaits each piece in a worker thread, so the loop draws and takes keys
  meanwhile, and runs the generator itself on the loop. It cannot be stopped half way: a cancel
  that arrives while a piece runs waits for the generator to finish (the files and the log
  agree again), then ``CancelledError`` is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")

Steps = Generator[Callable[[], Any], Any, T]
"""A generator yielding blocking work (touching no session) and returning ``T``."""


def run_here(steps: Steps[T]) -> T:
    """Run ``steps`` to its end, each piece of work on this thread."""
    try:
        work = next(steps)
        while True:
            try:
                value = work()
            except BaseException as exc:
                work = steps.throw(exc)
            else:
                work = steps.send(value)
    except StopIteration as end:
        return end.value  # type: ignore[no-any-return]


async def run_in_threads(steps: Steps[T]) -> T:
    """Run ``steps`` to its end on this event loop, each piece of work in a worker thread (see
    the module's docstring: a cancel waits for the end, then is raised)."""
    cancelled = False
    try:
        work = next(steps)
        while True:
            running = asyncio.ensure_future(asyncio.to_thread(_outcome, work))
            while not running.done():
                try:
                    await asyncio.shield(running)
                except asyncio.CancelledError:
                    cancelled = True  # the piece goes on in its thread: see it through
            ok, value = running.result()
            work = steps.send(value) if ok else steps.throw(value)
    except StopIteration as end:
        result: T = end.value
    if cancelled:
        raise asyncio.CancelledError
    return result


def _outcome(work: Callable[[], Any]) -> tuple[bool, Any]:
    """What ``work`` returned (True, value) or raised (False, the exception)."""
    try:
        return True, work()
    except BaseException as exc:
        return False, exc
