"""A summariser call extends the last conversation request byte for byte even when the
crossing that triggers the pass pruned a result that request carried in full: the call carries
it as sent (not after an overflow, and not when the request as sent leaves no room)."""

from __future__ import annotations

import msgspec
import pytest

from dsh.compaction import BasicBackend, CompactionEngine, RecallableBackend
from dsh.compaction.base import heuristic_total
from dsh.compaction.pruner import prune_result, unsent_prunes
from dsh.compaction.recallable.riding import riding_input
from dsh.events import AssistantMessage, CompactionPruneEvent, ToolResult, ToolResultBlock
from tests.agent.conftest import run
from tests.compaction.test_cache_riding import RouteSummarizer, with_header
from tests.compaction.test_recallable import SETTINGS, assert_layout, long_session
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    tool_call_block,
    tool_result_message,
)

BIG = "line of a long build log that the model already read\n" * 40
"""A result above the pruning threshold of ``_pruning`` (2,000 characters)."""


def _crossing_session():
    """A session whose next-to-last turn read ``BIG``, and the messages its last request sent."""
    session = with_header(long_session(turns=40))
    append_tool_turn(session, "build it", calls=[("bash", '{"cmd":"make"}', BIG)])
    append_tool_turn(session, "and now?", final="still going")
    return session, tuple(session.derive_messages())


def _pruning(**changes):
    """Settings that prune ``BIG`` to about 300 characters and pass at 60% of the window."""
    defaults = {
        "threshold_ratio": 0.6,
        "low_watermark_ratio": 0.5,
        "prune_threshold_chars": 2000,
        "prune_head_chars": 200,
        "prune_tail_chars": 100,
    }
    return msgspec.structs.replace(SETTINGS, **{**defaults, **changes})


def test_a_result_pruned_at_the_crossing_rides_as_it_was_sent():
    """The pressure pass prunes a long tool result that the last request carried in full: the
    riding call carries it in full too (a byte prefix of that request, so the cache serves it
    past the result), while the surface after the pass holds the pruned text."""
    session, sent = _crossing_session()
    assert any(BIG in _result_text(m) for m in sent)
    settings = _pruning()
    summarizer = RouteSummarizer(("scripted", "scripted"))
    engine = CompactionEngine(session, RecallableBackend(summarizer, settings), settings)
    window = heuristic_total(session) + 4000  # still over the threshold once pruned
    run(engine.compact_if_needed("pressure", turn=None, window=window))
    assert any(isinstance(e, CompactionPruneEvent) for e in session.events)  # pruned, then passed
    assert summarizer.requests and all(t.layout == "riding" for t in summarizer.tasks)
    for request in summarizer.requests:
        carried = request.messages[:-1]  # the instruction is last
        assert carried == sent[: len(carried)] and any(BIG in _result_text(m) for m in carried)
    assert not any(BIG in _result_text(m) for m in session.derive_messages())
    assert_layout(session)


def _result_text(message) -> str:
    return "".join(
        part.text
        for block in message.content
        if isinstance(block, ToolResultBlock)
        for part in block.content
    )


def test_when_the_result_as_sent_leaves_no_room_the_call_rides_with_it_pruned():
    """The window holds the request with the result pruned, plus the answer, but not the
    request as sent: the call still rides, with the pruned copy (missing the cache from it
    on), rather than leaving the conversation for the compact layout."""
    session, result = _pruned_result_session()
    pruned = prune_result(session, result, head=200, tail=100)
    span = tuple(session.nodes)
    huge = 1_000_000
    sent_needs = huge - _room(riding_input(session, span, window=huge, wanted=0))
    pruned_needs = huge - _room(riding_input(session, span, window=huge, wanted=0, as_sent=False))
    assert sent_needs > pruned_needs
    wanted = 500
    tight = riding_input(session, span, window=pruned_needs + wanted, wanted=wanted)
    assert tight.room == wanted and not any(_big(m) for m in tight.conversation)
    roomy = riding_input(session, span, window=sent_needs + wanted, wanted=wanted)
    assert roomy.room == wanted and any(_big(m) for m in roomy.conversation)
    assert pruned in session.nodes


def _room(ride) -> int:
    assert ride.room is not None
    return ride.room


def _big(message) -> bool:
    """The build log as it was sent (the pruned copy is a few hundred characters)."""
    return len(_result_text(message)) > 1000


def test_a_basic_summary_of_a_result_pruned_at_the_crossing_reads_it_as_it_was_sent():
    """Basic's summary call is the conversation's shadowed prefix: a result pruned at the
    crossing goes as it was sent, so the call still extends the last request."""
    session, sent = _crossing_session()
    settings = _pruning(backend="basic", retain_tokens=60)  # the result in the summarised span
    summarizer = RouteSummarizer(("scripted", "scripted"))
    engine = CompactionEngine(session, BasicBackend(summarizer, settings), settings)
    run(engine.compact_if_needed("pressure", turn=None, window=heuristic_total(session) + 4000))
    assert any(isinstance(e, CompactionPruneEvent) for e in session.events)
    (request,) = summarizer.requests
    carried = request.messages[:-1]
    assert carried == sent[: len(carried)] and any(BIG in _result_text(m) for m in carried)


@pytest.mark.parametrize("backend", ["recallable", "basic"])
def test_after_an_overflow_the_summariser_reads_the_pruned_result(backend: str):
    """The request that overflowed was refused: nothing of it is cached, and its results as
    sent are what did not fit, so the pass's call carries the pruned copy."""
    session, _ = _crossing_session()
    settings = _pruning(
        backend=backend, retain_tokens=60, threshold_ratio=0.8, low_watermark_ratio=0.4
    )
    summarizer = RouteSummarizer(("scripted", "scripted"))
    chosen = (RecallableBackend if backend == "recallable" else BasicBackend)(summarizer, settings)
    engine = CompactionEngine(session, chosen, settings)
    run(engine.compact_if_needed("overflow", turn=None, window=heuristic_total(session) + 4000))
    assert any(isinstance(e, CompactionPruneEvent) for e in session.events)
    carried = [m for r in summarizer.requests for m in r.messages]
    assert summarizer.requests and not any(BIG in _result_text(m) for m in carried)
    assert any("pruned from this tool result" in _result_text(m) for m in carried)


def _pruned_result_session() -> tuple:
    session = with_header(long_session(turns=4))
    turn = append_tool_turn(session, "build it", calls=[("bash", '{"cmd":"make"}', BIG)])
    (result,) = turn.results
    return session, result


def test_unsent_prunes_are_results_the_last_request_carried_in_full_pruned_since():
    session, result = _pruned_result_session()
    pruned = prune_result(session, result, head=200, tail=100)
    assert unsent_prunes(session) == {pruned: result}
    # the model answered a request that carried the pruned copy (an empty reply counts too)
    session.append(AssistantMessage(turn=99, step=1, message=assistant_message()))
    assert unsent_prunes(session) == {}


def test_a_result_newer_than_the_last_reply_was_never_sent_and_stays_pruned():
    session, _ = _pruned_result_session()
    call = tool_call_block("call-late", "bash", '{"cmd":"ls"}')
    session.append(AssistantMessage(turn=99, step=1, message=assistant_message(tool_calls=[call])))
    late = session.append(
        ToolResult(turn=99, step=1, message=tool_result_message("call-late", "x" * 5000))
    ).seq
    prune_result(session, late, head=200, tail=100)
    assert unsent_prunes(session) == {}
