"""Stopping a bench run on SIGINT or SIGTERM, workers included.

Ctrl-C reaches the whole process group, but SIGTERM (``kill``, a CI timeout, a service manager)
reaches the parent alone: left to its default action it ended the parent and left the spawned
workers, reparented, running their jobs to the end. While jobs run, :class:`StopSignals`
records both signals instead. With worker processes, the parent notices at its next poll,
keeps every result that has finished, cancels the jobs not started, terminates the workers
and waits for them (:func:`stop_workers`); workers ignore SIGINT themselves, so a Ctrl-C is
decided once, by the parent. A run in the parent's own process (one worker) is interrupted at
once. Either way :class:`RunStopped` says how many runs finished; their files stay as written.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from types import FrameType, TracebackType
from typing import Any

from dsh.tools.process_guard import protect_process

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
WORKER_EXIT_SECONDS = 10.0
"""How long a terminated worker gets to exit before it is killed."""


class RunStopped(Exception):
    """The jobs were stopped by a signal; ``finished`` of ``planned`` runs had their results
    handed on (and, in a suite, their files written)."""

    def __init__(self, signum: int, finished: int, planned: int) -> None:
        self.signum = signum
        self.finished = finished
        self.planned = planned
        super().__init__(
            f"stopped by {signal.Signals(signum).name}: {finished} of {planned} runs finished"
        )


class StopSignals:
    """While open (in the main thread; elsewhere it changes nothing), SIGINT and SIGTERM are
    recorded in ``received``; with ``interrupt`` they also raise ``KeyboardInterrupt`` where
    the main thread is (a run in this very process must be cut short)."""

    def __init__(self, *, interrupt: bool) -> None:
        self.interrupt = interrupt
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                self._previous[number] = signal.signal(number, self._record)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _record(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self.interrupt:
            raise KeyboardInterrupt


def prepare_worker() -> None:
    """Worker initializer: a Ctrl-C at the terminal is the parent's to act on; and a worker,
    which runs the scenarios' shell commands, is kept from them as ``dsh`` itself is
    (``dsh.tools.process_guard``: its environment holds the provider keys too)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    protect_process()


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel the jobs not started, terminate every worker and wait until each has exited
    (killed if it has not within :data:`WORKER_EXIT_SECONDS`). What Python 3.14's
    ``terminate_workers`` does, with the wait; before 3.14 the pool's own process table is the
    only way to its workers."""
    table = pool._processes  # no public handle to the workers before Python 3.14
    workers = list(table.values()) if table is not None else []
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    for worker in workers:
        worker.join(WORKER_EXIT_SECONDS)
        if worker.is_alive():
            worker.kill()
            worker.join()
