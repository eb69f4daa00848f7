"""``history_read``: header, budgeted pages, a working cursor and typed errors
(docs/compaction.md, "The two recall tools")."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from dsh.events import AssistantMessage
from dsh.recall import (
    CHECKPOINT_NOT_FOUND,
    INVALID_ARGUMENT,
    INVALID_OFFSET,
    NON_AGENT_CALLER,
    ORPHANED_COMPACTION,
    PRIOR_STATE_LABEL,
    HistoryReadTool,
    HistorySearchTool,
    list_checkpoints,
    read_checkpoint,
    render_span,
    resolve_checkpoint,
)
from dsh.recall.checkpoints import conversation_span
from dsh.store import MemoryStore
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.registry import ToolRegistry
from tests.helpers import append_chat_turn, append_tool_turn, assistant_message, new_session
from tests.recall.builders import NEEDLE, bracket, run_tool, two_passes

CURSOR = re.compile(
    r"\[Continuation cursor: offset=(\d+) — call history_read with this offset for more\]$"
)
END = "(end of checkpoint span)"


def long_span():
    """One state checkpoint over six turns; one tool result is longer than a small budget."""
    session = new_session(MemoryStore())
    surface: list[int] = []
    for i in range(6):
        if i % 2:
            turn = append_chat_turn(session, f"question {i}", f"answer {i} " + "x" * (10 * i))
        else:
            output = ("long output " * 30) if i == 2 else f"output {i}"
            turn = append_tool_turn(
                session, f"task {i}", calls=[("read_file", f'{{"path":"f{i}"}}', output)]
            )
        surface.extend(turn.surface)
    checkpoint = bracket(session, surface, "six turns", compaction_id="k1")
    append_chat_turn(session, "after", "compaction")
    return session, checkpoint


def read_page(session, checkpoint: str, offset: int | None = None, budget: int = 8000):
    args: dict[str, object] = {"checkpoint": checkpoint}
    if offset is not None:
        args["offset"] = offset
    return run_tool(HistoryReadTool(read_budget_chars=budget), args, session)


def page_messages(text: str) -> list[str]:
    """The messages of a page: everything between the header and the cursor/end line."""
    parts = text.split("\n\n")
    return parts[1:-1]


def test_the_header_names_the_checkpoint_its_span_and_the_total_message_count():
    session, checkpoint = long_span()
    output = read_page(session, checkpoint.id)
    assert not output.is_error
    events = session.events
    total = len(render_span(events, resolve_checkpoint(events, checkpoint.id)))
    first, last = resolve_checkpoint(events, checkpoint.id).shadowed_range
    header = output.text.split("\n", 1)[0]
    assert header == (
        f"Checkpoint {checkpoint.id} (state) shadows conversation span #{first}–#{last}: "
        f"{total} message(s); showing #msg 0–{total - 1}."
    )
    assert output.text.endswith("\n\n" + END)
    assert output.meta == {"checkpoint": checkpoint.id, "offset": 0, "next": total, "total": total}


def test_small_budget_pages_cover_every_message_exactly_once_in_order():
    session, checkpoint = long_span()
    events = session.events
    expected = list(render_span(events, resolve_checkpoint(events, checkpoint.id)))
    assert any(len(m) + 2 > 120 for m in expected)  # a page may hold a single oversized message
    seen: list[str] = []
    offset, pages = 0, 0
    while True:
        output = read_page(session, checkpoint.id, offset, budget=120)
        assert not output.is_error
        pages += 1
        messages = page_messages(output.text)
        assert messages, "every page shows at least one message"
        assert len(messages) == 1 or sum(len(m) + 2 for m in messages) <= 120
        assert f"showing #msg {offset}–{offset + len(messages) - 1}." in output.text
        seen.extend(messages)
        last_line = output.text.rsplit("\n\n", 1)[1]
        cursor = CURSOR.fullmatch(last_line)
        if cursor is None:
            assert last_line == END
            break
        assert int(cursor.group(1)) == offset + len(messages)
        offset = int(cursor.group(1))
    assert seen == expected
    assert pages > 3


def test_the_first_page_packs_messages_until_the_budget_would_be_exceeded():
    session, checkpoint = long_span()
    events = session.events
    expected = render_span(events, resolve_checkpoint(events, checkpoint.id))
    budget = len(expected[0]) + 2 + len(expected[1]) + 2
    text = read_checkpoint(events, checkpoint.id, budget_chars=budget).text
    assert page_messages(text) == list(expected[:2])
    assert text.endswith(
        "[Continuation cursor: offset=2 — call history_read with this offset for more]"
    )
    text = read_checkpoint(events, checkpoint.id, budget_chars=budget - 1).text
    assert page_messages(text) == list(expected[:1])


def test_a_superseded_state_checkpoint_can_still_be_read():
    passes = two_passes()
    output = read_page(passes.session, passes.state1.id)
    assert not output.is_error
    assert f"Tool result: migration failed: {NEEDLE} on users" in output.text


def test_reading_the_newer_checkpoint_shows_the_prior_state_checkpoint_with_its_footer():
    passes = two_passes()
    output = read_page(passes.session, passes.index2.id)
    first = page_messages(output.text)[0]
    assert first.startswith(PRIOR_STATE_LABEL + "\n")
    assert first.endswith(
        f"[checkpoint {passes.state1.id}: shadows conversation span "
        f"#{passes.turn2_surface[0]}–#{passes.turn2_surface[-1]}; "
        "originals retrievable via history_read]"
    )


def test_a_span_with_no_messages_says_so_and_ends():
    session = new_session(MemoryStore())
    append_chat_turn(session)
    empty = session.append(AssistantMessage(turn=1, step=2, message=assistant_message())).seq
    checkpoint = bracket(session, [empty], "nothing", compaction_id="k1")
    text = read_page(session, checkpoint.id).text
    assert text.startswith(f"Checkpoint {checkpoint.id} (state)")
    assert "0 message(s); nothing to show." in text and text.endswith(END)


def test_a_state_whose_footer_range_is_its_own_span_says_nothing_of_other_checkpoints():
    """Only a state whose footer names a wider range than its own span (it folds a whole pass)
    says where the rest is; one that folds just its own messages (a one-chunk pass, the ladder's
    one-summary fallback) does not send the reader elsewhere."""
    session = new_session(MemoryStore())
    append_chat_turn(session)
    append_chat_turn(session)
    shadowed = list(session.nodes)
    span = (shadowed[0], shadowed[-1])
    own = bracket(session, shadowed, "all of it", compaction_id="k1", input_range=span)
    header = read_page(session, own.id).text.split("\n\n")[0]
    assert header.endswith("showing #msg 0–3.") and "folds" not in header


def test_a_span_needs_a_node():
    with pytest.raises(ValueError, match="at least one surface node"):
        conversation_span([], [])


@pytest.mark.parametrize("offset", [-1, -100])
def test_a_negative_offset_is_an_invalid_offset(offset):
    session, checkpoint = long_span()
    output = read_page(session, checkpoint.id, offset)
    assert output.is_error and output.code == INVALID_OFFSET
    assert output.text.startswith("INVALID_OFFSET: offset must be a non-negative integer")


@pytest.mark.parametrize("offset", ["2", 1.5, True, [1]])
def test_an_offset_that_is_not_an_integer_is_an_invalid_offset(offset):
    session, checkpoint = long_span()
    output = run_tool(HistoryReadTool(), {"checkpoint": checkpoint.id, "offset": offset}, session)
    assert output.is_error and output.code == INVALID_OFFSET


def test_an_offset_past_the_last_message_is_an_invalid_offset_naming_the_range():
    session, checkpoint = long_span()
    events = session.events
    total = len(render_span(events, resolve_checkpoint(events, checkpoint.id)))
    output = read_page(session, checkpoint.id, total)
    assert output.is_error and output.code == INVALID_OFFSET
    assert f"has {total} message(s) (offsets 0–{total - 1})" in output.text
    assert not read_page(session, checkpoint.id, total - 1).is_error


def test_a_null_offset_means_the_first_page():
    session, checkpoint = long_span()
    tool = HistoryReadTool()
    with_null = run_tool(tool, {"checkpoint": checkpoint.id, "offset": None}, session)
    assert with_null.text == read_page(session, checkpoint.id).text


@pytest.mark.parametrize("caller", ["cli", "human"])
def test_a_non_agent_caller_is_refused(caller):
    session, checkpoint = long_span()
    output = run_tool(HistoryReadTool(), {"checkpoint": checkpoint.id}, session, caller=caller)
    assert output.is_error and output.code == NON_AGENT_CALLER
    assert f"caller: {caller}" in output.text


@pytest.mark.parametrize(
    ("checkpoint", "code"),
    [("nope", INVALID_ARGUMENT), (None, INVALID_ARGUMENT), ("c1", CHECKPOINT_NOT_FOUND)],
)
def test_typed_errors_come_back_as_error_outputs_with_their_code(checkpoint, code):
    session, _ = long_span()
    output = run_tool(HistoryReadTool(), {"checkpoint": checkpoint}, session)
    assert output.is_error and output.code == code
    assert output.text.startswith(f"{code}: ")


def test_an_orphaned_start_and_an_unfinished_bracket_are_refused():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    unfinished = bracket(session, turn.surface, "s", compaction_id="k", with_end=False)
    for target in (unfinished.id, f"c{unfinished.start}"):
        output = read_page(session, target)
        assert output.is_error and output.code == ORPHANED_COMPACTION


def test_a_failed_bracket_is_refused():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    failed = bracket(session, turn.surface, "s", compaction_id="k", end_error="provider down")
    output = read_page(session, failed.id)
    assert output.is_error and output.code == ORPHANED_COMPACTION
    assert "provider down" in output.text


def test_the_budget_must_be_positive():
    with pytest.raises(ValueError, match="read_budget_chars"):
        HistoryReadTool(read_budget_chars=0)


def test_through_the_registry_schema_errors_and_recall_errors_keep_their_codes():
    session, checkpoint = long_span()
    registry = ToolRegistry([HistoryReadTool()])
    ctx = ToolContext(
        workspace=Path("/tmp"), session_id=session.id, call_id="c", history=session.events
    )

    def call(arguments: str):
        return asyncio.run(
            registry.execute("c", "history_read", arguments, ctx, ApprovalPolicy("read-only"))
        )

    assert call(f'{{"checkpoint":"{checkpoint.id}"}}').is_error is False
    assert call(f'{{"checkpoint":"{checkpoint.id}","offset":-1}}').code == INVALID_OFFSET
    assert call('{"checkpoint":"c5x"}').code == INVALID_ARGUMENT
    assert call('{"offset":1}').code == INVALID_ARGUMENT  # schema: checkpoint is required
    assert call(f'{{"checkpoint":"{checkpoint.id}","offset":null}}').is_error is False
    (listed,) = list_checkpoints(session.events)
    assert listed.id == checkpoint.id


def test_an_offset_into_a_checkpoint_with_no_messages_says_there_are_none(monkeypatch):
    import dsh.recall.tools as recall_tools

    session, checkpoint = long_span()
    monkeypatch.setattr(recall_tools, "_span", lambda events, target, cache: [])
    output = read_page(session, checkpoint.id, 1)
    assert output.is_error and output.code == INVALID_OFFSET
    assert "which has no messages (offset 0)" in output.text and "0–" not in output.text


def test_every_refusal_of_a_recall_tool_reads_its_code_bad_arguments_too():
    """The audit's bad calls (finding 8): a wrong type, an unknown argument or invalid JSON
    answered ``history_search: limit must be an integer, got string`` with no code in the text
    the model reads, while the tools' own refusals read ``INVALID_ARGUMENT: …``."""
    session, checkpoint = long_span()
    registry = ToolRegistry([HistoryReadTool(), HistorySearchTool()])
    ctx = ToolContext(
        workspace=Path("/tmp"), session_id=session.id, call_id="c", history=session.events
    )

    def call(name: str, arguments: str):
        return asyncio.run(registry.execute("c", name, arguments, ctx, ApprovalPolicy("read-only")))

    for name, arguments in [
        ("history_search", '{"query": "ZEBRA", "limit": "5"}'),
        ("history_search", '{"query": "ZEBRA", "limit": 2.5}'),
        ("history_search", '{"query": "ZEBRA", "limit": true}'),
        ("history_search", '{"query": 12345}'),
        ("history_search", '{"query": "ZEBRA", "checkpoint": 180}'),
        ("history_search", '{"query": "ZEBRA", "bogus": 1}'),
        ("history_search", '{"query": "   "}'),
        ("history_search", "not json at all"),
        ("history_search", "[1]"),
        ("history_read", '{"offset": 1}'),
        ("history_read", f'{{"checkpoint": "{checkpoint.id}", "offset": "2"}}'),
        ("history_read", '{"checkpoint": "c5x"}'),
    ]:
        output = call(name, arguments)
        assert output.is_error and output.code == INVALID_ARGUMENT, arguments
        assert output.text.startswith("INVALID_ARGUMENT: "), output.text
    offset = call("history_read", f'{{"checkpoint": "{checkpoint.id}", "offset": -1}}')
    assert offset.text.startswith(f"{INVALID_OFFSET}: ")
