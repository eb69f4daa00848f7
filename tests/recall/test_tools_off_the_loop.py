"""The recall tools work in a worker thread: a session's first ``history_search`` builds every
span's word index (a second and more on a long log) and a rollup's ``history_read`` walks its
chain, and neither may freeze the TUI or every page and session of ``dsh web`` meanwhile. The two
tools share one span cache, which a search or read holds (``SpanCache.lock``) for its whole run.

Each test holds the work in its thread until another coroutine on the loop lets it go: run on
the loop itself, the work would wait for a coroutine that cannot run, give up after its safety
timeout, and the test would fail.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from dsh.recall import HistoryReadTool, HistorySearchTool, search_history
from dsh.recall import tools as tools_module
from dsh.recall.render import SpanCache
from dsh.tools.base import ToolOutput
from tests.helpers import append_chat_turn
from tests.recall.builders import NEEDLE, ctx, two_passes

SAFETY = 30.0
"""Seconds a held worker waits before giving up (only a failing run waits that long)."""


class Gate:
    """Holds ``work`` until the loop releases it; notes whether each hold was released, and
    whether the span cache was held meanwhile."""

    def __init__(self, cache: SpanCache) -> None:
        self.cache = cache
        self.entered = threading.Event()
        self.released = threading.Event()
        self.held: list[bool] = []
        self.locked: list[bool] = []
        self.threads: set[int] = set()

    def hold(self, work: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.threads.add(threading.get_ident())
            self.locked.append(self.cache.lock.locked())
            self.entered.set()
            self.held.append(self.released.wait(timeout=SAFETY))
            return work(*args, **kwargs)

        return held

    async def entered_the_work(self) -> None:
        await asyncio.to_thread(self.entered.wait, SAFETY)


@pytest.mark.parametrize(
    ("tool_name", "work", "args"),
    [
        ("search", "search_history", {"query": NEEDLE}),
        ("read", "read_checkpoint", {"checkpoint": "c0"}),
    ],
)
def test_a_recall_tool_works_while_the_loop_keeps_running(monkeypatch, tool_name, work, args):
    passes = two_passes()
    session = passes.session
    if tool_name == "read":
        args = {"checkpoint": passes.index2.id}
    cache = SpanCache()
    tool = HistorySearchTool(cache=cache) if tool_name == "search" else HistoryReadTool(cache=cache)
    expected: ToolOutput = asyncio.run(tool.run(args, ctx(session)))
    gate = Gate(cache)
    monkeypatch.setattr(tools_module, work, gate.hold(getattr(tools_module, work)))

    async def both() -> ToolOutput:
        job = asyncio.ensure_future(tool.run(args, ctx(session)))
        await gate.entered_the_work()
        gate.released.set()
        return await job

    output = asyncio.run(both())
    assert gate.held == [True]
    assert gate.locked == [True]  # the shared cache is the worker's for its whole run
    assert threading.get_ident() not in gate.threads
    assert (output.text, output.meta) == (expected.text, expected.meta)


def test_two_searches_at_once_and_events_appended_meanwhile_answer_as_one_at_a_time(monkeypatch):
    passes = two_passes()
    session = passes.session
    queries = [{"query": NEEDLE}, {"query": "users migration schema"}]
    alone = [search_history(session.events, q["query"]) for q in queries]
    cache = SpanCache()
    read, search = HistoryReadTool(cache=cache), HistorySearchTool(cache=cache)
    gate = Gate(cache)
    monkeypatch.setattr(tools_module, "search_history", gate.hold(search_history))

    async def at_once() -> list[ToolOutput]:
        jobs = [asyncio.ensure_future(search.run(q, ctx(session))) for q in queries]
        page = asyncio.ensure_future(read.run({"checkpoint": passes.state2.id}, ctx(session)))
        await gate.entered_the_work()
        append_chat_turn(session, "meanwhile", "the loop appends a turn")  # not compacted
        gate.released.set()
        return [*await asyncio.gather(*jobs), await page]

    *found, page = asyncio.run(at_once())
    assert all(gate.held) and len(gate.held) == 2 and all(gate.locked)
    assert [(f.text, f.meta) for f in found] == [(a.text, a.meta) for a in alone]
    assert found[1].meta.get("byWords", 0) >= 1  # the word index was built in a worker
    assert not page.is_error and passes.state2.id in page.text
    assert not cache.lock.locked()
