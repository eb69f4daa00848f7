"""A pass with the extractive summariser keeps the event loop free (the TUI's keys, every page and
session ``dsh web`` serves): its ranking (an O(log) anchor index build on a first pass without a
stored index) and its text writing run in worker threads, awaited in order, so the checkpoints
are the same bytes as before (``test_ranking_beside_the_call``, the kill-resume and property
tests hold them).

Each test holds the CPU work in its thread until another coroutine on the loop lets it go: run
on the loop itself, the work would wait for a coroutine that cannot run, give up after its
safety timeout, and the test would fail.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from dsh.compaction import ExtractiveSummarizer
from dsh.compaction import extractive as extractive_module
from dsh.compaction.base import RegionPlan
from dsh.compaction.recallable import ranking as ranking_module
from dsh.events import CompactionPlanEvent
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session

SAFETY = 30.0
"""Seconds a held worker waits before giving up (only a failing run waits that long)."""


class Gate:
    """Holds ``work`` until the loop releases it; notes whether each hold was released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.held: list[bool] = []
        self.threads: set[int] = set()

    def hold(self, work: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.threads.add(threading.get_ident())
            self.entered.set()
            self.held.append(self.released.wait(timeout=SAFETY))
            return work(*args, **kwargs)

        return held

    async def release_from_the_loop(self) -> None:
        """A coroutine beside the pass: it runs only if the loop does while the work is held."""
        await asyncio.to_thread(self.entered.wait, SAFETY)
        self.released.set()


def _pass_with(gate: Gate) -> tuple[Session, list[tuple[str, str]]]:
    session = long_session(turns=30)
    engine = engine_for(session, ExtractiveSummarizer())

    async def both() -> None:
        await asyncio.gather(engine.compact_now(window=10**6), gate.release_from_the_loop())

    run(both())
    assert_layout(session)
    (plan,) = [e for e in session.events if isinstance(e, CompactionPlanEvent)]
    return session, [(region.kind, region.summary) for region in plan.data.regions]


def _plain_pass() -> list[tuple[str, str]]:
    session = long_session(turns=30)
    run(engine_for(session, ExtractiveSummarizer()).compact_now(window=10**6))
    (plan,) = [e for e in session.events if isinstance(e, CompactionPlanEvent)]
    return [(region.kind, region.summary) for region in plan.data.regions]


@pytest.mark.parametrize("held", ["ranking", "text"])
def test_the_extractive_pass_work_runs_while_the_loop_keeps_running(monkeypatch, held):
    gate = Gate()
    if held == "text":
        write = extractive_module.write_extractive
        monkeypatch.setattr(extractive_module, "write_extractive", gate.hold(write))
    else:
        complete = ranking_module.Ranking.complete
        monkeypatch.setattr(ranking_module.Ranking, "complete", gate.hold(complete))
    _, texts = _pass_with(gate)
    assert gate.held and all(gate.held)
    assert threading.get_ident() not in gate.threads
    monkeypatch.undo()
    assert texts == _plain_pass()


def test_a_plan_with_nothing_to_rank_is_completed_as_planned():
    regions = (RegionPlan(kind="index", shadowed_seqs=(1, 2), task=None, code_text="rolled up"),)

    async def started() -> tuple[RegionPlan, ...]:
        completed, settle = ranking_module.start_ranking(regions, None)
        await settle()
        return await completed()

    assert run(started()) == regions
