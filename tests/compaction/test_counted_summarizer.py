"""``make_summarizer(on_call=…)``: a face hears of each finished summary call (``dsh run``'s
pass line counts them)."""

from __future__ import annotations

import asyncio

import pytest

from dsh.compaction import make_summarizer
from dsh.compaction.summarizer import CountedSummarizer, SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from tests.helpers import user_message


def _task() -> SummaryTask:
    return SummaryTask(kind="summary", messages=(user_message("fix the parser"),), max_tokens=50)


def test_each_finished_call_is_counted():
    calls: list[int] = []
    summarizer = make_summarizer(
        CompactionSettings(summarizer="extractive"), None, None, on_call=lambda: calls.append(1)
    )
    for _ in range(3):
        asyncio.run(summarizer.summarize(_task()))
    assert len(calls) == 3


def test_a_failed_call_is_counted_too_and_its_error_passes_through():
    class Failing:
        name, model = "x", "y"

        async def summarize(self, task: SummaryTask) -> SummaryOutput:
            raise RuntimeError("boom")

    calls: list[int] = []
    counted = CountedSummarizer(Failing(), lambda: calls.append(1))
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(counted.summarize(_task()))
    assert calls == [1] and (counted.name, counted.model) == ("x", "y")
