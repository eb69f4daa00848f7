"""A SQLite event row changed in place (an ``UPDATE`` by hand, a row deleted or replaced) after
a listing read it is found by the next listing, which reads that log again from its start
(``003_event_edits``: the session's count of changed rows, kept by triggers), while an append
leaves the remembered position standing. Real database files, changed through ``sqlite3``."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from dsh.errors import LogCorruptError
from dsh.events import Event
from dsh.store import SqliteStore
from dsh.store.appended import AppendedReader, LogPosition
from dsh.surface import Session
from dsh.transcript.listing import is_unreadable, session_summaries
from tests.helpers import FIXED_TIME, append_chat_turn


class Count:
    """An ``EventSink`` that counts events and restarts."""

    def __init__(self) -> None:
        self.events = 0
        self.restarts = 0

    def restart(self) -> None:
        self.events = 0
        self.restarts += 1

    def add(self, events: Sequence[Event]) -> None:
        self.events += len(events)


def stored_session(store: SqliteStore, turns: int = 2) -> str:
    clock = itertools.count(FIXED_TIME)
    with Session(store.create(cwd="/work/project"), clock=lambda: next(clock)) as session:
        for turn in range(turns):
            append_chat_turn(session, f"prompt {turn}", "ok")
    return session.id


def read(
    store: SqliteStore, session_id: str, position: LogPosition | None, sink: Count
) -> LogPosition:
    (header,) = [h for h in store.list() if h.id == session_id]
    with AppendedReader(store) as reader:
        return reader.read(header, position, sink)


def body_of(store: SqliteStore, session_id: str, seq: int) -> bytes:
    with sqlite3.connect(store.path) as db:
        (body,) = db.execute(
            "SELECT body FROM events WHERE session_id = ? AND seq = ?", (session_id, seq)
        ).fetchone()
    return bytes(body)


def flip_a_letter(body: bytes) -> bytes:
    """The same length, one letter changed: its seal no longer matches."""
    return body.replace(b'"type"', b'"typf"', 1)


def test_a_row_updated_before_the_anchor_is_found_by_the_next_listing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session_id = stored_session(store)
    (before,) = session_summaries(store)
    assert not is_unreadable(before) and before.turns == 2  # the cache now covers every row
    with sqlite3.connect(store.path) as db:
        db.execute(
            "UPDATE events SET body = ? WHERE session_id = ? AND seq = 3",
            (flip_a_letter(body_of(store, session_id, 3)), session_id),
        )

    (after,) = session_summaries(store)

    assert is_unreadable(after) and "seq 3: checksum mismatch" in after.title


@pytest.mark.parametrize("how", ["replace", "delete"])
def test_a_row_replaced_or_deleted_inside_the_log_reads_it_again(tmp_path: Path, how: str) -> None:
    """``INSERT OR REPLACE`` fires no delete trigger; a deleted row leaves a gap."""
    store = SqliteStore(tmp_path)
    session_id = stored_session(store)
    position = read(store, session_id, None, Count())
    with sqlite3.connect(store.path) as db:
        if how == "replace":
            db.execute(
                "INSERT OR REPLACE INTO events VALUES (?, 3, ?)",
                (session_id, flip_a_letter(body_of(store, session_id, 3))),
            )
        else:
            db.execute("DELETE FROM events WHERE session_id = ? AND seq = 3", (session_id,))

    with pytest.raises(LogCorruptError, match="seq 3"):
        read(store, session_id, position, Count())


def test_appends_keep_the_remembered_position(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session_id = stored_session(store)
    position = read(store, session_id, None, Count())
    clock = itertools.count(FIXED_TIME + 1000)
    with Session(store.open(session_id, writable=True), clock=lambda: next(clock)) as again:
        append_chat_turn(again, "more", "ok")
    sink = Count()

    after = read(store, session_id, position, sink)

    assert sink.restarts == 0 and sink.events > 0 and after.edits == position.edits == 0


def test_a_position_that_knows_no_count_reads_the_log_again(tmp_path: Path) -> None:
    """A summary cache written before the counts (no ``edits``): each log is read once more."""
    store = SqliteStore(tmp_path)
    session_id = stored_session(store)
    position = read(store, session_id, None, Count())
    older = LogPosition(seq=position.seq, header=position.header, anchor=position.anchor)
    sink = Count()

    read(store, session_id, older, sink)

    assert sink.restarts == 1 and sink.events == position.seq + 1
