"""A recallable pass ranks its literals beside the summariser call (issue 12: a pass costs about
one call).

The anchor index update, each stub's rarest anchors and the span's replaced values go into no
call, only into the texts written from the answer, so with a model summariser they run in a
worker thread while the call is out; a summariser that reads the rarity counts (the extractive
one) gets them before its call. Either way the checkpoints are the same bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from dsh.compaction import ExtractiveSummarizer
from dsh.compaction.recallable import ranking as ranking_module
from dsh.compaction.recallable.spans import SessionAnchors
from dsh.compaction.summarizer import CountedSummarizer, SummaryOutput, SummaryTask
from dsh.events import CompactionPlanEvent
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.helpers import user_message


class ModelLike:
    """Answers from the request alone, like a model: the extractive text ranked against the
    slice only (it never reads the session's rarity counts)."""

    name = model = "model-like"

    def __init__(self, *, reads_rarity: bool, route: tuple[str, str] | None = None) -> None:
        self.reads_rarity = reads_rarity
        if route is not None:  # a different model from the conversation's: a call per region
            self.route = route
        self.called = threading.Event()

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        self.called.set()
        await asyncio.sleep(0)
        return await ExtractiveSummarizer().summarize(dataclasses.replace(task, rarity=None))


def _plan_texts(summarizer) -> list[tuple[str, str]]:
    session = long_session(turns=30)
    run(engine_for(session, summarizer).compact_now(window=10**6))
    assert_layout(session)
    plans = [e for e in session.events if isinstance(e, CompactionPlanEvent)]
    assert len(plans) == 1
    return [(region.kind, region.summary) for region in plans[0].data.regions]


@pytest.mark.parametrize("route", [None, ("other", "summariser")], ids=["one-call", "per-region"])
def test_checkpoints_ranked_beside_the_call_equal_those_ranked_before_it(route):
    beside = _plan_texts(ModelLike(reads_rarity=False, route=route))
    before = _plan_texts(ModelLike(reads_rarity=True, route=route))
    assert beside == before
    stubs = [text for kind, text in beside if kind == "index"]
    assert len(stubs) >= 3 and all("Keywords — " in text for text in stubs)


def test_the_ranking_runs_while_the_model_call_is_out(monkeypatch):
    """The ranking waits (in its thread) for the call to start: run before the call, as it
    was, it would give up waiting and the test would fail."""
    summarizer = ModelLike(reads_rarity=False)
    saw_the_call: list[bool] = []
    complete = ranking_module.Ranking.complete

    def waiting_complete(self, regions):
        saw_the_call.append(summarizer.called.wait(timeout=20))
        return complete(self, regions)

    monkeypatch.setattr(ranking_module.Ranking, "complete", waiting_complete)
    _plan_texts(summarizer)
    assert saw_the_call == [True]


def test_a_summariser_that_reads_rarity_gets_the_ranking_before_its_call(monkeypatch):
    order: list[str] = []
    complete = ranking_module.Ranking.complete

    def noted_complete(self, regions):
        order.append("ranking")
        return complete(self, regions)

    class Extractive(ExtractiveSummarizer):
        async def summarize(self, task):
            order.append("call")
            return await super().summarize(task)

    monkeypatch.setattr(ranking_module.Ranking, "complete", noted_complete)
    _plan_texts(Extractive())
    assert order[0] == "ranking" and "call" in order


def test_a_failed_call_still_waits_for_its_ranking_thread(monkeypatch):
    finished = threading.Event()
    complete = ranking_module.Ranking.complete

    def slow_complete(self, regions):
        result = complete(self, regions)
        finished.set()
        return result

    class Failing(ModelLike):
        async def summarize(self, task):
            raise RuntimeError("server gone")

    monkeypatch.setattr(ranking_module.Ranking, "complete", slow_complete)
    session = long_session(turns=30)
    with pytest.raises(Exception, match="server gone"):
        run(engine_for(session, Failing(reads_rarity=False)).compact_now(window=10**6))
    assert finished.is_set()  # the pass returned only after its worker thread did


def test_rarity_counts_cover_only_the_events_logged_when_the_pass_was_planned():
    session = long_session(turns=3)
    planned = len(session.events)
    session.append(user_message("ZEBRA-7700 again"))  # appended while the call is out
    anchors = SessionAnchors()
    counted = anchors.update(session, planned).count("ZEBRA-7700")
    fresh = SessionAnchors().update(session).count("ZEBRA-7700")
    assert (counted, fresh) == (1, 2)


def test_a_counted_summariser_is_planned_as_the_one_it_wraps():
    class Route:
        name, model = "deepseek", "deepseek-chat"
        route = ("deepseek", "deepseek-chat")
        max_output_tokens = 8192
        reads_rarity = False

        async def summarize(self, task):
            raise AssertionError("not called")

    counted = CountedSummarizer(Route(), lambda: None)
    assert counted.route == ("deepseek", "deepseek-chat")
    assert counted.max_output_tokens == 8192
    assert counted.reads_rarity is False
    assert not hasattr(CountedSummarizer(ExtractiveSummarizer(), lambda: None), "route")


def test_a_cancelled_pass_returns_at_once_and_the_next_one_waits_for_its_worker(monkeypatch):
    """Esc during a pass must not wait out the worker (seconds on a long resumed log); the
    worker's index update still finishes before another pass reads the index."""
    release = threading.Event()
    entered = threading.Event()
    complete = ranking_module.Ranking.complete

    def held_complete(self, regions):
        entered.set()
        release.wait(timeout=20)
        return complete(self, regions)

    class Hangs(ModelLike):
        async def summarize(self, task):
            self.called.set()
            await asyncio.Event().wait()  # a model call that never answers

    monkeypatch.setattr(ranking_module.Ranking, "complete", held_complete)
    session = long_session(turns=30)
    summarizer = Hangs(reads_rarity=False)
    engine = engine_for(session, summarizer)

    async def cancel_mid_pass() -> bool:
        task = asyncio.ensure_future(engine.compact_now(window=10**6))
        while not (summarizer.called.is_set() and entered.is_set()):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=10)
        return release.is_set()  # still held: the cancel did not wait for the worker

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(cancel_mid_pass()) is False
    finally:
        release.set()
        loop.close()
    monkeypatch.setattr(ranking_module.Ranking, "complete", complete)
    assert _plan_texts(ModelLike(reads_rarity=False))  # a later pass runs as usual
