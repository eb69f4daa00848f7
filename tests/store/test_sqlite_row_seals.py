"""SQLite event rows carry the JSONL line's CRC seal: a row whose content changed after it was
written (and still decodes, so nothing else would notice) is refused by every reader, naming the
seq; rows written before seals still load."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dsh.errors import LogCorruptError
from dsh.events import encode_event
from dsh.store import SqliteStore
from dsh.store.appended import AppendedReader
from dsh.store.integrity import seal, unseal
from dsh.surface import Session
from tests.helpers import append_chat_turn, new_session
from tests.store.test_appended import Collect


def _rows(store: SqliteStore, session_id: str) -> list[bytes]:
    with sqlite3.connect(store.path) as db:
        rows = db.execute(
            "SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    return [bytes(body) for (body,) in rows]


def _set_row(store: SqliteStore, session_id: str, seq: int, body: bytes) -> None:
    with sqlite3.connect(store.path) as db:
        db.execute(
            "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?", (body, session_id, seq)
        )


def _session(store: SqliteStore) -> Session:
    session = new_session(store)
    append_chat_turn(session, "deploy to port 8123", "done: port 8123")
    session.close()
    return session


def _edited(body: bytes) -> bytes:
    """``body`` with one digit of its text changed: still valid JSON, still a valid event."""
    assert b"8123" in body
    return body.replace(b"8123", b"9123", 1)


def test_every_row_is_the_sealed_line_the_jsonl_store_writes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session = _session(store)
    rows = _rows(store, session.id)
    assert rows == [seal(encode_event(e)) for e in session.events]
    assert all(unseal(row)[1] is not None for row in rows)


def test_a_row_edited_in_place_is_refused_at_load_naming_its_seq(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session = _session(store)
    seq = next(i for i, row in enumerate(_rows(store, session.id)) if b"8123" in row)
    _set_row(store, session.id, seq, _edited(_rows(store, session.id)[seq]))
    with pytest.raises(LogCorruptError, match=rf"session {session.id}: seq {seq}: checksum"):
        Session.open(store, session.id)


def test_the_appended_reader_refuses_an_edited_row_too(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session = _session(store)
    seq = next(i for i, row in enumerate(_rows(store, session.id)) if b"8123" in row)
    header = Session.open(store, session.id).header
    _set_row(store, session.id, seq, _edited(_rows(store, session.id)[seq]))
    with AppendedReader(store) as reader, pytest.raises(LogCorruptError, match=rf"seq {seq}"):
        reader.read(header, None, Collect())


def test_rows_written_before_seals_still_load(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    session = _session(store)
    for seq, row in enumerate(_rows(store, session.id)):
        _set_row(store, session.id, seq, unseal(row)[0])  # as an older dsh stored them
    reopened = Session.open(store, session.id)
    assert [encode_event(e) for e in reopened.events] == [encode_event(e) for e in session.events]
    writer = Session.open(store, session.id, writable=True)
    append_chat_turn(writer, "more", "ok")
    writer.close()
    rows = _rows(store, session.id)
    assert unseal(rows[0])[1] is None and unseal(rows[-1])[1] is not None  # new rows sealed
    assert len(Session.open(store, session.id).events) == len(rows)
