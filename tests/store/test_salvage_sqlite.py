"""``dsh sessions repair`` on the SQLite store: a real database file, corrupted on disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.main import cli
from dsh.errors import LogCorruptError, SessionLockedError, StoreError
from dsh.events import encode_event
from dsh.store import SqliteStore, span_cache_path
from dsh.store.integrity import seal
from dsh.store.salvage_sqlite import salvage_sqlite_session
from dsh.surface import Session
from dsh.surface.projection import first_refused
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def closed_session(store: SqliteStore, turns: int = 3) -> str:
    with new_session(store) as session:
        for i in range(turns):
            append_chat_turn(session, f"question {i}", f"answer {i}")
            append_tool_turn(session, f"look {i}", calls=[("read_file", "{}", f"body {i} " * 20)])
    return session.id


def checkpointed(store: SqliteStore) -> None:
    """Move the write-ahead log into the database file, as a clean shutdown leaves it."""
    with sqlite3.connect(store.path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def corrupt_on_disk(store: SqliteStore, session_id: str, seq: int) -> bytes:
    """Change one byte of event ``seq``'s stored body in the database file itself, so that the
    body no longer decodes (bit rot SQLite itself does not notice: it keeps no checksums)."""
    body = seal(encode_event(Session.open(store, session_id).events[seq]))
    checkpointed(store)
    data = bytearray(store.path.read_bytes())
    at = data.find(body)
    assert at >= 0 and data.find(body, at + 1) < 0
    data[at] = ord("[")  # the body is no longer a JSON object
    store.path.write_bytes(bytes(data))
    return bytes(data)


def stored_events(store: SqliteStore, session_id: str) -> list[bytes]:
    return [encode_event(e) for e in Session.open(store, session_id).events]


def test_repair_keeps_the_events_before_a_body_corrupted_on_disk_and_copies_the_database(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path)
    sid, other = closed_session(store), closed_session(store)
    before, others = stored_events(store, sid), stored_events(store, other)
    corrupted = corrupt_on_disk(store, sid, 9)
    with pytest.raises(LogCorruptError, match="seq 9"):
        Session.open(store, sid)

    spans = span_cache_path(tmp_path, sid)  # derived from the log: stale once the log is cut
    spans.parent.mkdir(parents=True)
    spans.write_bytes(b"stale")
    report = salvage_sqlite_session(store, sid, validate=first_refused)

    assert not spans.exists() and f"dropped {spans} (rebuilt on use)" in report.lines()
    assert report.copy is not None and report.copy.read_bytes() == corrupted
    assert report.copy.name.startswith("dsh.sqlite3.before-repair-")
    assert stored_events(store, sid) == before[:9]  # the valid events, unchanged
    assert stored_events(store, other) == others  # the other session is not touched
    dropped = len(before) - 9
    lines = report.lines()
    assert lines[0] == f"session {sid}: copied the database to {report.copy}"
    assert "kept 9 events (seq 0-8)" in lines
    bad = next(line for line in lines if line.startswith("dropped events"))
    assert bad.startswith(f"dropped events seq 9-{len(before) - 1} ({dropped} events, ")
    assert "bytes); first bad seq 9: checksum mismatch (stored " in bad  # the place named once
    assert not salvage_sqlite_session(store, sid).changed  # a second run finds nothing to do
    with sqlite3.connect(report.copy) as copy:  # the copy is a database holding the original
        assert copy.execute("SELECT count(*) FROM events WHERE session_id = ?", (sid,)).fetchone()[
            0
        ] == len(before)


def test_repair_cuts_at_a_missing_row(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    before = stored_events(store, sid)
    with sqlite3.connect(store.path) as db:
        db.execute("DELETE FROM events WHERE session_id = ? AND seq = 5", (sid,))
    report = salvage_sqlite_session(store, sid, validate=first_refused)
    assert stored_events(store, sid) == before[:5]
    assert report.first_bad_seq == 5 and report.kept == 5
    assert "seq 5: the row is missing (the next stored row is seq 6)" in "\n".join(report.lines())


def test_repair_of_a_sound_session_changes_nothing_and_makes_no_copy(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    checkpointed(store)
    data = store.path.read_bytes()
    report = salvage_sqlite_session(store, sid, validate=first_refused)
    assert report.lines() == [f"session {sid}: the log loads as it is; nothing to repair"]
    assert store.path.read_bytes() == data
    assert not list(tmp_path.glob("*.before-repair-*"))


def test_repair_waits_for_no_writer(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    with Session.open(store, sid, writable=True), pytest.raises(SessionLockedError):
        salvage_sqlite_session(store, sid)


def test_repair_refuses_a_session_whose_header_is_unreadable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE sessions SET header = ? WHERE id = ?", (b"{not json", sid))
    with pytest.raises(LogCorruptError, match="not a valid session header"):
        salvage_sqlite_session(store, sid)
    assert not list(tmp_path.glob("*.before-repair-*"))


def test_a_damaged_page_is_one_line_on_open_and_repair_keeps_the_copy_and_says_so(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path)
    with new_session(store) as session:
        for i in range(40):
            append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 60)])
    checkpointed(store)
    data = bytearray(store.path.read_bytes())
    middle = len(data) // 4096 // 2
    data[middle * 4096 : (middle + 1) * 4096] = bytes(4096)  # one page lost
    store.path.write_bytes(bytes(data))
    with pytest.raises(LogCorruptError, match="SQLite cannot read it"):
        Session.open(store, session.id)
    with pytest.raises(StoreError, match="the database is as it was, and a copy is at") as caught:
        salvage_sqlite_session(store, session.id)
    assert "\n" not in str(caught.value)
    (copy,) = tmp_path.glob("dsh.sqlite3.before-repair-*[0-9]")  # and its "-wal"
    assert copy.read_bytes() == bytes(data) and store.path.read_bytes() == bytes(data)


def test_dsh_sessions_repair_works_on_the_sqlite_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    monkeypatch.setenv("DSH_STORE_BACKEND", "sqlite")
    monkeypatch.chdir(tmp_path)
    store = SqliteStore(tmp_path)
    sid = closed_session(store)
    before = stored_events(store, sid)
    corrupt_on_disk(store, sid, 12)
    refused = CliRunner().invoke(cli, ["sessions", "show", sid])
    assert refused.exit_code == 1 and "seq 12" in refused.output
    result = CliRunner().invoke(cli, ["sessions", "repair", sid[:-2]], catch_exceptions=False)
    assert result.exit_code == 0
    (copy,) = tmp_path.glob("dsh.sqlite3.before-repair-*[0-9]")
    assert result.output.splitlines()[:2] == [
        f"session {sid}: copied the database to {copy}",
        "kept 12 events (seq 0-11)",
    ]
    assert f"dropped events seq 12-{len(before) - 1}" in result.output
    assert CliRunner().invoke(cli, ["sessions", "show", sid]).exit_code == 0


def test_with_another_session_writing_the_copy_includes_the_write_ahead_log(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path)
    sid, other = closed_session(store), closed_session(store)
    total = len(stored_events(store, sid))
    with Session.open(store, other, writable=True) as writer:  # keeps the WAL from checkpointing
        append_chat_turn(writer, "still working", "yes")
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE events SET body = ? WHERE session_id = ? AND seq = 4", (b"[1]", sid))
        report = salvage_sqlite_session(store, sid, validate=first_refused)
        assert report.kept == 4 and len(report.copies) == 1
        append_chat_turn(writer, "after the repair", "fine")  # the other writer goes on
    copy = sqlite3.connect(report.copy)  # the copy and its WAL: the state before the repair
    try:
        rows = copy.execute("SELECT seq, body FROM events WHERE session_id = ?", (sid,)).fetchall()
    finally:
        copy.close()
    assert len(rows) == total and dict(rows)[4] == b"[1]"
    assert len(stored_events(store, sid)) == 4
    assert any(b"after the repair" in line for line in stored_events(store, other))
