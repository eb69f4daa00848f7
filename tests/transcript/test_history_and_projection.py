"""History paging and the human projection (docs/architecture.md, "The human transcript")."""

from __future__ import annotations

import pytest

from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.errors import UsageError
from dsh.events import (
    AssistantChunk,
    AssistantMessage,
    CompactionStart,
    CompactionSummary,
    ReplaceOp,
    StreamChunk,
    ToolResult,
    event_type_of,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session
from dsh.transcript import (
    MarkerItem,
    MessageItem,
    ToolCallItem,
    ToolResultItem,
    TranscriptProjector,
    history,
    history_page,
    project,
    transcript_items,
)
from tests.agent.conftest import run
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    tool_result_message,
    user_message,
)


def test_the_notes_case_two_prompts_two_replies_a_summary_and_a_checkpoint():
    session = new_session(MemoryStore())
    u1 = session.append(user_message("first prompt")).seq
    a1 = session.append(AssistantMessage(turn=1, step=1, message=assistant_message("r1"))).seq
    u2 = session.append(user_message("second prompt")).seq
    session.append(AssistantMessage(turn=2, step=1, message=assistant_message("r2")))
    start = session.append(CompactionStart(compaction_id="c", pass_id="p", turn=None)).seq
    summary = session.append(
        CompactionSummary(
            compaction_id="c",
            pass_id="p",
            kind="state",
            summary="S",
            shadowed_range=(u1, a1),
            shadowed_seqs=(u1, a1),
            shadowed_token_count=1,
            provider="x",
            model="y",
        )
    ).seq
    session.append(
        checkpoint_message("payload", "c"),
        surface_op=ReplaceOp(start=u1, end=a1),
        source_event_seqs=[start, summary, u1, a1],
    )
    page = history_page(session.events, max_messages=2)
    assert [e.seq for e in page.events] == list(range(u2, len(session.events)))
    assert page.has_more
    assert [event_type_of(e) for e in page.events] == [
        "user/message",
        "assistant/message",
        "compaction/start",
        "compaction/summary",
        "user/message",
    ]
    older = history_page(session.events, before_seq=page.first_seq, max_messages=2)
    assert [e.seq for e in older.events] == [u1, a1] and not older.has_more


def test_chunks_stay_with_the_message_that_cites_them():
    session = new_session(MemoryStore())
    session.append(user_message("hi"))
    chunks = [
        session.append(AssistantChunk(turn=1, step=1, chunk=StreamChunk(type="text", delta=d))).seq
        for d in ("hel", "lo")
    ]
    reply = session.append(
        AssistantMessage(turn=1, step=1, message=assistant_message("hello")),
        source_event_seqs=chunks,
    ).seq
    page = history_page(session.events, max_messages=1)
    assert page.events[0].seq == chunks[0] and page.events[-1].seq == reply


def test_a_checkpoint_whose_range_is_outside_the_page_still_renders_its_marker():
    session = new_session(MemoryStore())
    for i in range(6):
        append_tool_turn(session, f"prompt {i}", calls=[("read_file", "{}", "x" * 400)])
    settings = CompactionSettings(backend="basic", retain_tokens=60)
    run(
        CompactionEngine(
            session, BasicBackend(ExtractiveSummarizer(), settings), settings
        ).compact_now(window=10_000)
    )
    page = history_page(session.events, max_messages=2)
    items = list(transcript_items(page.events))
    assert any(isinstance(i, MarkerItem) for i in items)


def test_max_messages_below_one_is_a_usage_error():
    with pytest.raises(UsageError):
        history_page([], max_messages=0)


def test_history_reads_a_stored_session(tmp_path):
    store = JsonlStore(tmp_path)
    session = Session(store.create(cwd="/w"))
    for i in range(3):
        append_tool_turn(session, f"p{i}")
    session.close()
    page = history(store, session.id, max_messages=2)
    assert page.has_more and len(page.events) < len(session.events)


def compacted_session(observer=None):
    session = new_session(MemoryStore())
    if observer is not None:
        session.subscribe(observer)
    for i in range(6):
        append_tool_turn(
            session,
            f"prompt {i}",
            calls=[("read_file", f'{{"path":"f{i}"}}', f"OUTPUT {i} " * 40)],
            final=f"reply {i}",
        )
    settings = CompactionSettings(backend="basic", retain_tokens=60)
    engine = CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), settings), settings)
    run(engine.compact_now(window=10_000))
    append_tool_turn(session, "after compaction", calls=[("bash", "{}", "late output")])
    return session


def test_live_projection_equals_replay_of_the_stored_log():
    projector = TranscriptProjector()
    live = []
    session = compacted_session(lambda event: live.extend(projector.feed(event)))
    replayed, details = project(session.events)
    assert live == replayed
    assert projector.details == details


def test_shadowed_tool_cards_stay_paired_and_no_payload_shows():
    session = compacted_session()
    items, details = project(session.events)
    calls = [i for i in items if isinstance(i, ToolCallItem)]
    results = [i for i in items if isinstance(i, ToolResultItem)]
    assert len(calls) == len(results) == 7
    assert {c.call_id for c in calls} == {r.call_id for r in results}
    assert "OUTPUT 0" in results[0].text
    markers = [i for i in items if isinstance(i, MarkerItem)]
    assert len(markers) == 1
    texts = [i.message.text() for i in items if isinstance(i, MessageItem)]
    assert "prompt 0" in texts and not any("<compacted-summary>" in t for t in texts)
    pass_details = details[markers[0].pass_id]
    assert pass_details.items > 0 and pass_details.tokens > 0 and pass_details.summaries


def test_transcript_tool_call_ids_come_from_append_origin_assistant_messages_only():
    from dsh.transcript import transcript_tool_call_ids

    session = compacted_session()
    ids = transcript_tool_call_ids(session.events)
    items, _ = project(session.events)
    assert ids == {i.call_id for i in items if isinstance(i, ToolCallItem)}
    assert len(ids) == 7


def test_a_result_carries_the_diff_its_meta_logged_and_nothing_else_of_the_meta():
    session = new_session(MemoryStore())
    lines = ["--- a/c.py", "+++ b/c.py", "@@ -1 +1 @@", "-a", "+b"]
    metas = [{"diff": lines}, {"diff": "not lines"}, {"diff": [1, 2]}, {"checkpoint": "c1"}, None]
    for i, meta in enumerate(metas):
        message = tool_result_message(f"call{i}", "edited")
        session.append(ToolResult(turn=1, step=1, message=message, meta=meta))
    items, _ = project(session.events)
    diffs = [item.diff for item in items if isinstance(item, ToolResultItem)]
    assert diffs == [tuple(lines), None, None, None, None]
