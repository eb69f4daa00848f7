"""Many bench runs: (scenario, arm, seed) jobs in a ``ProcessPoolExecutor`` (spawned workers,
at most two by default), with progress per run."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.bench.options import RunOptions
from dsh.bench.results import FailedRun, as_json
from dsh.bench.runner import load_scenario, run_scenario
from dsh.bench.stopping import RunStopped, StopSignals, prepare_worker, stop_workers

MAX_WORKERS = 2


@dataclass(frozen=True, slots=True)
class Job:
    scenario: str
    backend: str
    seed: int
    options: RunOptions
    show_seed: bool = False
    """Name the seed in the progress key (runs with several seeds)."""

    @property
    def key(self) -> str:
        name = Path(self.scenario).stem if "/" in self.scenario else self.scenario
        return f"{name}/{self.backend}" + (f"@{self.seed}" if self.show_seed else "")


def run_job(job: Job, queue: Any = None) -> dict[str, Any]:
    """Worker entry point: one run, never raising (a failure is a ``FailedRun``), as the JSON
    form of its record (what crosses the process boundary and lands in ``runs/*.json``)."""

    def progress(done: int, total: int, passes: int) -> None:
        if queue is not None:
            queue.put((job.key, done, total, passes))

    try:
        scenario = load_scenario(job.scenario, job.seed)
        return run_scenario(scenario, job.backend, options=job.options, progress=progress)
    except Exception as exc:  # one failed run must not sink the others
        return _failed(job, f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        if queue is not None:
            queue.put((job.key, -1, -1, -1))


def _failed(job: Job, error: str, trace: str | None = None) -> dict[str, Any]:
    record = FailedRun(
        scenario=job.scenario, backend=job.backend, seed=job.seed, error=error, traceback=trace
    )
    return as_json(record)


def run_jobs(
    jobs: Sequence[Job],
    *,
    workers: int = MAX_WORKERS,
    stream: Any = None,
    on_result: Callable[[Job, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every job, in spawned worker processes when ``workers`` > 1 (capped by the CPU
    count); results in job order. A worker that dies is reported as that job's error.
    ``on_result`` gets each job's result as soon as it finishes. SIGINT or SIGTERM stops the
    jobs, workers included, and raises :class:`RunStopped` (``dsh.bench.stopping``): what
    finished has been handed to ``on_result``."""
    from dsh.bench.progress import ProgressBoard

    board = ProgressBoard([j.key for j in jobs], stream=stream or sys.stderr)
    workers = max(1, min(workers, len(jobs), os.cpu_count() or 1))
    done = on_result or (lambda job, result: None)
    try:
        if workers == 1:
            return _run_here(jobs, board, done)
        return _run_in_workers(jobs, workers, board, done)
    finally:
        board.close()


def _run_here(
    jobs: Sequence[Job], board: Any, done: Callable[[Job, dict[str, Any]], None]
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with StopSignals(interrupt=True) as stop:
        try:
            for job in jobs:
                result = run_job(job, board.sink())
                done(job, result)
                results.append(result)
        except KeyboardInterrupt:
            raise RunStopped(stop.received or signal.SIGINT, len(results), len(jobs)) from None
    return results


def _run_in_workers(
    jobs: Sequence[Job], workers: int, board: Any, done: Callable[[Job, dict[str, Any]], None]
) -> list[dict[str, Any]]:
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # no fork of a threaded parent
    with StopSignals(interrupt=False) as stop, context.Manager() as manager:
        queue = manager.Queue()
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=prepare_worker
        )
        try:
            futures = [pool.submit(run_job, job, queue) for job in jobs]
            waiting = dict(enumerate(futures))
            while waiting and stop.received is None:
                board.drain(queue, timeout=0.2)
                for number in [n for n, f in waiting.items() if f.done()]:
                    done(jobs[number], _outcome(jobs[number], waiting.pop(number)))
            if stop.received is not None:
                raise RunStopped(stop.received, len(jobs) - len(waiting), len(jobs))
            board.drain(queue)
        except BaseException:
            stop_workers(pool)
            raise
        pool.shutdown()
        return [_outcome(job, future) for job, future in zip(jobs, futures, strict=True)]


def _outcome(job: Job, future: Future[dict[str, Any]]) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as exc:  # a worker process died (killed, out of memory)
        return _failed(job, f"worker failed: {type(exc).__name__}: {exc}")
