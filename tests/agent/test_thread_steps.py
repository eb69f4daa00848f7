"""``dsh.agent.thread_steps``: a generator of blocking steps run on the calling thread, or each
step in a worker thread with the generator itself on the event loop; a cancel waits for the end."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from dsh.agent.thread_steps import Steps, run_here, run_in_threads


def _steps(where: list[str]) -> Steps[str]:
    """Two pieces of work and what the generator saw: their results, a failure raised back."""
    where.append(f"generator {threading.current_thread().name}")
    first: int = yield lambda: (where.append(f"work {threading.current_thread().name}"), 41)[1]
    try:
        yield lambda: 1 / 0
    except ZeroDivisionError:
        where.append(f"raised back {threading.current_thread().name}")
    return f"done {first + 1}"


def test_run_here_runs_every_piece_on_the_calling_thread():
    where: list[str] = []
    assert run_here(_steps(where)) == "done 42"
    main = threading.current_thread().name
    assert where == [f"generator {main}", f"work {main}", f"raised back {main}"]


def test_run_in_threads_runs_the_pieces_off_the_loop_and_the_generator_on_it():
    where: list[str] = []
    assert asyncio.run(run_in_threads(_steps(where))) == "done 42"
    main = threading.current_thread().name
    assert where[0] == f"generator {main}" and where[2] == f"raised back {main}"
    assert where[1].startswith("work ") and where[1] != f"work {main}"


def test_an_exception_the_generator_lets_through_goes_on():
    def failing() -> Steps[None]:
        yield lambda: int("x")

    with pytest.raises(ValueError):
        run_here(failing())
    with pytest.raises(ValueError):
        asyncio.run(run_in_threads(failing()))


def test_a_cancel_waits_for_the_generator_to_finish_then_is_raised():
    """The piece running when the cancel comes finishes, and so does every step after it (an
    undo's files and its log must agree), before the ``CancelledError`` goes on."""
    started, go = threading.Event(), threading.Event()
    done: list[str] = []

    def steps() -> Steps[str]:
        yield lambda: (started.set(), go.wait(timeout=30))
        done.append("first")
        yield lambda: done.append("second")
        done.append("answered")
        return "finished"

    async def scenario() -> Any:
        task = asyncio.ensure_future(run_in_threads(steps()))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)  # the cancel lands while the piece is still held
        assert not task.done()
        go.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return done

    assert asyncio.run(scenario()) == ["first", "second", "answered"]
