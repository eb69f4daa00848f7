"""After a context overflow the riding summariser call stops at the compacted span's end.

The provider refused the whole conversation request; the overflow pass keeps the newest tool
exchange verbatim (that is what did not fit). A riding call that carried the whole request
plus its instruction was refused too, on a provider whose window is smaller than dsh thinks
(the usual reason for an overflow): the pass failed and so did the turn, at every later turn
too. It now carries the conversation up to the span's last message, still in the riding
layout.
"""

from __future__ import annotations

from dsh.compaction import CompactionEngine, RecallableBackend
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
