"""Overflow recovery (docs/compaction.md, "Failure handling"): one long tool result pushes the
request over the window and the provider answers context-overflow; both backends compact inside
the open step, keep the newest tool call and its result verbatim (pruned when that result alone
is too big), and the retry answers."""

from __future__ import annotations

import itertools

import pytest

from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    ToolResultEvent,
    is_append_surface_event,
)
from tests.agent.conftest import Harness, run
from tests.helpers import append_tool_turn

OVERFLOW = {"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "prompt is too long"}}


def _engine(harness: Harness, backend_name: str) -> CompactionEngine:
    settings = CompactionSettings(
        backend=backend_name,  # type: ignore[arg-type]
        retain_tokens=300,
        chunk_tokens=400,
        stub_tokens=100,
        state_max_tokens=300,
    )
    backend_type = RecallableBackend if backend_name == "recallable" else BasicBackend
    ids = itertools.count(1)
    return CompactionEngine(
        harness.session,
        backend_type(ExtractiveSummarizer(), settings),
        settings,
        new_id=lambda: f"p{next(ids)}",
    )


def _peer_scenario(harness: Harness, backend_name: str, *, result_lines: int, window: int):
    for i in range(6):
        append_tool_turn(
            harness.session,
            f"step {i}: look at part {i}",
            calls=[("read_file", "{}", f"part {i} line\n" * 40)],
            final=f"part {i} is fine",
        )
    (harness.workspace / "big.log").write_text(
        "".join(f"log line {n}: value_{n} = {n * 7}\n" for n in range(result_lines))
    )
    logged = sum(
        isinstance(e, AssistantMessageEvent) or type(e).__name__ == "RequestErrorEvent"
        for e in harness.session.events
    )
    script = [{"text": "(earlier)"}] * logged + [
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "big.log"}}]},
        OVERFLOW,
        {"text": "RECOVERED"},
    ]
    agent = harness.agent(script, context_window=window)
    engine = _engine(harness, backend_name)
    agent.overflow_handler = compaction_hooks(engine)[1]
    result = run(agent.run_turn("read big.log and tell me what it says"))
    return result, engine


def _newest_exchange(harness: Harness):
    session = harness.session
    call = max(
        seq
        for seq in session.nodes
        if isinstance(session.events[seq], AssistantMessageEvent)
        and session.events[seq].data.message.tool_calls()
    )
    results = [
        session.events[s]
        for s in session.nodes[session.nodes.index(call) + 1 :]
        if isinstance(session.events[s], ToolResultEvent)
    ]
    return session.events[call], results


def _text(event: ToolResultEvent) -> str:
    return "".join(part.text for part in event.data.message.content[0].content)


@pytest.mark.parametrize("backend_name", ["recallable", "basic"])
def test_one_long_tool_result_overflows_and_the_retry_answers_with_it_verbatim(
    harness: Harness, backend_name: str
):
    result, _ = _peer_scenario(harness, backend_name, result_lines=150, window=1_000_000)
    assert result.reason == "completed" and result.text == "RECOVERED"
    ends = [e for e in harness.session.events if isinstance(e, CompactionEndEvent)]
    assert ends and all(e.data.error is None for e in ends)
    call, results = _newest_exchange(harness)
    assert is_append_surface_event(call)  # the newest tool call is the original, on the surface
    assert results and all(is_append_surface_event(r) for r in results)
    assert "log line 149" in _text(results[0])


@pytest.mark.parametrize("backend_name", ["recallable", "basic"])
def test_a_newest_result_too_big_to_keep_is_pruned_and_the_retry_answers(
    harness: Harness, backend_name: str
):
    result, _ = _peer_scenario(harness, backend_name, result_lines=400, window=12_000)
    assert result.reason == "completed" and result.text == "RECOVERED"
    call, results = _newest_exchange(harness)
    assert is_append_surface_event(call)  # the call stays verbatim
    pruned = _text(results[0])
    assert not is_append_surface_event(results[0]) and "pruned" in pruned
    assert "log line 0:" in pruned
    assert "log line 399" in pruned  # head and tail kept


@pytest.mark.parametrize("backend_name", ["recallable", "basic"])
def test_a_reply_whose_calls_alone_overflow_is_compacted_and_the_session_goes_on(
    harness: Harness, backend_name: str
):
    """A model answered with 300 ``read_file`` calls (the audit's: a 38 KB reply in an 8k
    window). Kept verbatim as the newest exchange, every later request stayed over the window
    and the session was stuck; now the overflow pass compacts it with the rest."""
    for i in range(3):
        append_tool_turn(
            harness.session, f"step {i}", calls=[("read_file", "{}", f"part {i}\n" * 20)]
        )
    (harness.workspace / "f.txt").write_text("one line\n")
    logged = sum(
        isinstance(e, AssistantMessageEvent) or type(e).__name__ == "RequestErrorEvent"
        for e in harness.session.events
    )
    calls = [
        {"name": "read_file", "arguments": {"path": "f.txt", "note": f"read number {n:03d}"}}
        for n in range(300)
    ]
    script = [{"text": "(earlier)"}] * logged + [
        {"toolCalls": calls},
        OVERFLOW,
        {"text": "RECOVERED"},
    ]
    window = 8_192
    agent = harness.agent(script, context_window=window)
    engine = _engine(harness, backend_name)
    agent.overflow_handler = compaction_hooks(engine)[1]
    result = run(agent.run_turn("read f.txt many times"))
    assert result.reason == "completed" and result.text == "RECOVERED"
    session = harness.session
    replies = [session.events[seq] for seq in session.nodes]
    assert not any(
        isinstance(e, AssistantMessageEvent) and len(e.data.message.tool_calls()) == 300
        for e in replies
    )  # the 300-call reply is behind a checkpoint (its originals in the log)
    assert engine.next_request_tokens() < window  # the next request fits again
