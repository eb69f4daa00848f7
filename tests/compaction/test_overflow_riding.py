"""After a context overflow the riding summariser call stops at the compacted span's end, and a
riding state call refused as too long is asked again in the compact layout.

The provider refused the whole conversation request; the overflow pass keeps the newest tool
exchange verbatim (that is what did not fit). A riding call that carried the whole request
plus its instruction was refused too, on a provider whose window is smaller than dsh thinks
(the usual reason for an overflow): the pass failed and so did the turn, at every later turn
too. It now carries the conversation up to the span's last message, still in the riding
layout.
"""

from __future__ import annotations

import pytest

from dsh.compaction import CompactionEngine, CompactionError, RecallableBackend
from dsh.compaction.base import heuristic_total
from dsh.errors import ProviderError
from dsh.events import ToolResultBlock
from tests.agent.conftest import run
from tests.compaction.test_cache_riding import RouteSummarizer, with_header
from tests.compaction.test_recallable import SETTINGS, assert_layout, long_session
from tests.helpers import append_tool_turn

NEWEST = "a very long page of the newest tool result that did not fit\n" * 200


def _result_texts(request) -> list[str]:
    return [
        part.text
        for message in request.messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
        for part in block.content
    ]


class SmallWindowProvider(RouteSummarizer):
    """The conversation's route, whose real window refuses a call that carries the newest
    exchange's result (what the conversation request overflowed on)."""

    async def summarize(self, task):
        output = await super().summarize(task)
        if any("did not fit" in text for text in _result_texts(self.requests[-1])):
            raise ProviderError("CONTEXT_WINDOW_EXCEEDED", "maximum context length exceeded")
        return output


def test_an_overflow_pass_rides_only_up_to_its_span_and_lands():
    session = with_header(long_session(turns=12))
    append_tool_turn(session, "read the page", calls=[("read_file", '{"path":"p"}', NEWEST)])
    summarizer = SmallWindowProvider(("scripted", "scripted"))
    engine = CompactionEngine(session, RecallableBackend(summarizer, SETTINGS), SETTINGS)
    window = heuristic_total(session) + 2000  # dsh thinks it fits; the provider said no
    result = run(engine.compact_if_needed("overflow", turn=None, window=window))
    assert result is not None and result.checkpoints  # the pass landed
    assert summarizer.tasks and all(t.layout == "riding" for t in summarizer.tasks)
    for request in summarizer.requests:
        assert not any("did not fit" in text for text in _result_texts(request))
    assert_layout(session)


class RefusesRiding(RouteSummarizer):
    """The conversation's route, whose real window refuses every riding call (the tools and
    the conversation do not fit); a compact call fits. ``code`` is what it refuses with."""

    def __init__(self, code: str = "CONTEXT_WINDOW_EXCEEDED") -> None:
        super().__init__(("scripted", "scripted"))
        self.code = code

    async def summarize(self, task):
        output = await super().summarize(task)
        if task.layout == "riding":
            raise ProviderError(self.code, "refused")
        return output


def test_a_riding_state_call_refused_as_too_long_is_asked_in_the_compact_layout():
    session = with_header(long_session(turns=12))
    append_tool_turn(session, "read the page", calls=[("read_file", '{"path":"p"}', NEWEST)])
    summarizer = RefusesRiding()
    engine = CompactionEngine(session, RecallableBackend(summarizer, SETTINGS), SETTINGS)
    window = heuristic_total(session) + 2000
    result = run(engine.compact_if_needed("overflow", turn=None, window=window))
    assert result is not None and result.checkpoints[-1].kind == "state"
    state_calls = [t.layout for t in summarizer.tasks if t.kind == "state"]
    assert state_calls == ["riding", "compact"]
    assert_layout(session)


def test_a_riding_state_call_that_fails_otherwise_still_fails_the_pass():
    session = with_header(long_session(turns=12))
    summarizer = RefusesRiding("UNAVAILABLE")
    engine = CompactionEngine(session, RecallableBackend(summarizer, SETTINGS), SETTINGS)
    nodes = list(session.nodes)
    with pytest.raises(CompactionError, match="UNAVAILABLE"):
        run(engine.compact_now(window=100_000))
    assert session.nodes == nodes
    assert [t.layout for t in summarizer.tasks if t.kind == "state"] == ["riding"]
