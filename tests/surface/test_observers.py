"""Append is synchronous; observers run after the commit and cannot undo it (docs/architecture.md,
"The session log")."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events import Event, TurnStart, encode_event
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, new_session, user_message


def test_an_observer_sees_an_event_already_committed_to_the_log_and_the_surface(tmp_path: Path):
    store = JsonlStore(tmp_path)
    session = new_session(store)
    seen: list[tuple[int, bool, bool]] = []

    def observer(event: Event) -> None:
        stored = store.open(session.id)  # a reader, while the writer holds the session
        try:
            on_disk = [encode_event(e) for e in stored.events]
        finally:
            stored.close()
        seen.append((event.seq, encode_event(event) in on_disk, event.seq in session.nodes))

    session.subscribe(observer)
    appended = session.append(user_message("hello"))
    assert seen == [(appended.seq, True, True)]


def test_an_observer_that_raises_cannot_undo_the_commit_nor_stop_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    store = JsonlStore(tmp_path)
    session = new_session(store)
    append_chat_turn(session)
    later: list[int] = []

    def failing(event: Event) -> None:
        raise RuntimeError("observer bug")

    session.subscribe(failing)
    session.subscribe(lambda event: later.append(event.seq))
    before = len(session.events)
    with caplog.at_level("ERROR"):
        event = session.append(user_message("still here"))  # returns: the failure is not raised
        session.append(TurnStart(turn=2))
    assert event.seq == before and session.nodes[-1] == event.seq
    assert later == [before, before + 1]
    assert any("observer failed" in r.getMessage() for r in caplog.records)
    session.close()
    reopened = Session.open(store, session.id)
    assert [e.seq for e in reopened.events[before:]] == [before, before + 1]
    assert reopened.nodes[-1] == event.seq
