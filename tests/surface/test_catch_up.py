"""``Session.catch_up``: a read-only session takes in what another process appended to its stored
log and then answers as a fresh load of the longer log does; an event the surface refuses
leaves it as it was, and a session open for writing grows by its own appends only."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from dsh.errors import LogCorruptError, UsageError
from dsh.events import RequestConfig, RequestHeader, RequestHeaderBody, Usage
from dsh.store import JsonlStore
from dsh.store.appended import AppendedReader
from dsh.surface import Session
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    new_session,
    replace_with_checkpoint,
    surface_state,
)


def answers(session: Session) -> tuple[object, ...]:
    events = list(session.events)
    return (
        events,
        surface_state(session),
        session.derive_messages(),
        session.measure(),
        session.request_header,
        {kind: list(session.of_type(kind)) for kind in {type(event) for event in events}},
        [
            (seq in session.surface, session.tool_pairing_balanced_after(seq))
            for seq in session.nodes
        ],
    )


def loaded(store: JsonlStore, session_id: str) -> Session:
    with AppendedReader(store) as reader:
        return Session(reader.load(session_id)[0])


def test_a_caught_up_session_answers_as_a_fresh_load_of_the_longer_log(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer, "first", "ok", usage=Usage(input_tokens=900, output_tokens=20))
    writer.sync()
    reader = loaded(store, writer.id)
    reader.measure()  # its node sum is kept from here on, as a web page's asking keeps it
    seen = len(writer.events)
    append_tool_turn(writer, usage=Usage(input_tokens=1200, output_tokens=30))
    body = RequestHeaderBody(
        config=RequestConfig(provider="deepseek", model="deepseek-chat"), system="be brief"
    )
    writer.append(RequestHeader(header=body, reason="change"))
    nodes = writer.nodes
    replace_with_checkpoint(writer, nodes[0], nodes[2])
    append_chat_turn(writer, "after", "ok")
    writer.sync()
    reader.catch_up(writer.events[seen:])
    assert answers(reader) == answers(Session.open(store, writer.id))
    writer.close()


def test_an_event_the_surface_refuses_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer, "first", "ok")
    append_chat_turn(writer, "second", "ok")
    writer.sync()
    reader = loaded(store, writer.id)
    seen = len(writer.events)
    nodes = writer.nodes
    checkpoint = writer.events[replace_with_checkpoint(writer, nodes[0], nodes[1])]
    append_chat_turn(writer, "third", "ok")
    again = msgspec.structs.replace(checkpoint, seq=len(writer.events))  # shadows gone nodes
    before = answers(reader)
    with pytest.raises(LogCorruptError, match=f"session {writer.id}: "):
        reader.catch_up([*writer.events[seen:], again])
    assert answers(reader) == before
    writer.close()


def test_a_session_open_for_writing_grows_by_its_own_appends_only(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with new_session(store) as first:
        append_chat_turn(first, "first", "ok")
    events = list(Session.open(store, first.id).events)
    writer = new_session(store)
    before = answers(writer)
    with pytest.raises(UsageError):
        writer.catch_up(events)
    assert answers(writer) == before
    writer.close()


def test_events_that_do_not_continue_the_log_leave_the_session_as_it_was(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer, "first", "ok")
    writer.sync()
    reader = loaded(store, writer.id)
    before = answers(reader)
    with pytest.raises(LogCorruptError, match="expected seq 6 but found seq 2"):
        reader.catch_up(writer.events[2:])  # already held: folded twice, they would corrupt it
    assert answers(reader) == before
    writer.close()
