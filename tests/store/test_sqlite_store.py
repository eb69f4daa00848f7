"""The SQLite store: the shared contract, plus migrations and sharing one database."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from dsh.errors import SessionLockedError, StoreError
from dsh.events import encode_event
from dsh.store import JsonlStore, SqliteStore
from dsh.store.integrity import seal, unseal
from dsh.surface import Session
from tests.contracts.store_contract import StoreContract
from tests.helpers import append_chat_turn, new_session, writer_in_child_process


def store_jsonl_lines(home: Path, session: Session) -> list[bytes]:
    """The event lines the JSONL store writes for ``session``'s events (seals included)."""
    jsonl = JsonlStore(home / "jsonl")
    copy = jsonl.create(cwd="/", seed=list(session.events))
    copy.close()
    return jsonl.log_path(copy.id).read_bytes().split(b"\n")[1:-1]


def _db(store: SqliteStore) -> sqlite3.Connection:
    return sqlite3.connect(store.path, isolation_level=None)


class TestSqliteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> SqliteStore:
        return SqliteStore(tmp_path / "home")

    def reopen_store(self, store: SqliteStore) -> SqliteStore:
        return SqliteStore(store.home)

    def stored_event_bytes(self, store: SqliteStore, session_id: str) -> list[bytes]:
        """The stored rows without their CRC seals (the canonical JSON the codec reads)."""
        db = _db(store)
        try:
            rows = db.execute(
                "SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        finally:
            db.close()
        return [unseal(bytes(body))[0] for (body,) in rows]

    def replace_stored_event(
        self, store: SqliteStore, session_id: str, seq: int, raw: bytes
    ) -> None:
        db = _db(store)
        try:
            changed = db.execute(
                "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?",
                (seal(raw), session_id, seq),  # sealed as a writer would: only the content is odd
            ).rowcount
        finally:
            db.close()
        assert changed == 1

    def drop_stored_event(self, store: SqliteStore, session_id: str, seq: int) -> None:
        db = _db(store)
        try:
            changed = db.execute(
                "DELETE FROM events WHERE session_id = ? AND seq = ?", (session_id, seq)
            ).rowcount
        finally:
            db.close()
        assert changed == 1

    def position_label(self, seq: int) -> str:
        return f"seq {seq}"  # rows are keyed by seq; there are no lines


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "home")


def test_schema_migrations_records_each_applied_migration_once(store):
    new_session(store).close()
    SqliteStore(store.home).list()  # a second store on the same file migrates nothing again
    db = _db(store)
    try:
        names = [row[0] for row in db.execute("SELECT name FROM schema_migrations")]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()
    assert names == ["001_sessions_and_events", "002_settings_index", "003_event_edits"]
    assert {"sessions", "events", "events_settings"} <= tables


def test_a_database_migrated_by_a_newer_dsh_is_refused_before_anything_is_written(store):
    """A newer dsh recorded a migration this one lacks (here: a column added to ``events``).
    This dsh opened it for writing, took the lock and failed only at the first append with
    "table events has 4 columns but 3 values were supplied"; a migration that kept the columns
    would have been written into silently. Refused at open in one line, read or write, as a
    JSONL header of a newer format version is."""
    with new_session(store) as session:
        append_chat_turn(session)
    db = _db(store)
    try:
        db.execute("INSERT INTO schema_migrations VALUES ('002_from_the_future', 0)")
        db.execute("ALTER TABLE events ADD COLUMN extra TEXT")
        db.commit()
    finally:
        db.close()
    for attempt in (store.list, lambda: store.open(session.id, writable=True)):
        with pytest.raises(StoreError) as caught:
            attempt()
        message = str(caught.value)
        assert "newer dsh" in message and "002_from_the_future" in message
        assert "\n" not in message
    db = _db(store)
    try:
        (count,) = db.execute("SELECT count(*) FROM events").fetchone()
    finally:
        db.close()
    assert count == len(session.events)


def test_two_stores_on_the_same_home_share_sessions(store):
    other = SqliteStore(store.home)
    with new_session(store) as session:
        append_chat_turn(session)
    assert [h.id for h in other.list()] == [session.id]

    with Session.open(other, session.id, writable=True) as resumed:
        append_chat_turn(resumed)
    reloaded = store.open(session.id)
    assert list(reloaded.events) == list(resumed.events)
    reloaded.close()


def test_event_rows_hold_the_same_bytes_the_jsonl_store_writes(store):
    with new_session(store) as session:
        append_chat_turn(session)
    db = _db(store)
    try:
        bodies = [bytes(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        db.close()
    lines = store_jsonl_lines(store.home, session)
    assert bodies == lines == [seal(encode_event(e)) for e in session.events]


def test_writable_open_held_by_another_process_names_its_pid_until_it_dies(store):
    with new_session(store) as session:
        append_chat_turn(session)
    with writer_in_child_process(store.home, "sqlite", session.id) as child_pid:
        with pytest.raises(SessionLockedError) as caught:
            store.open(session.id, writable=True)
        assert caught.value.holder_pid == child_pid
        store.open(session.id).close()  # readers never block
    store.open(session.id, writable=True).close()


def test_a_writable_open_after_a_killed_writer_runs_quick_check_and_says_so(store):
    with new_session(store) as session:
        append_chat_turn(session)
    with store.open(session.id, writable=True) as clean:
        assert not any("quick_check" in w for w in clean.warnings)  # the last close was clean
    with writer_in_child_process(store.home, "sqlite", session.id) as child_pid:
        pass  # killed while holding the session open
    with store.open(session.id, writable=True) as after_crash:
        (line,) = [w for w in after_crash.warnings if "quick_check" in w]
        assert f"the last writer (pid {child_pid}) stopped without closing" in line
        assert line.endswith("PRAGMA quick_check: ok")
    with store.open(session.id, writable=True) as again:  # that close was clean again
        assert not any("quick_check" in w for w in again.warnings)


def test_quick_check_problems_after_an_unclean_shutdown_are_reported_in_one_line(store):
    with new_session(store) as session:
        append_chat_turn(session)
    db = _db(store)
    try:
        db.execute("CREATE TABLE scratch (x TEXT)")
        db.executemany("INSERT INTO scratch VALUES (?)", [("x" * 500,) for _ in range(40)])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'scratch'").fetchone()[0]
    finally:
        db.close()
    with store.path.open("r+b") as handle:  # a page of another table left as garbage
        handle.seek((root - 1) * page_size)
        handle.write(b"\x0d" + b"\xff" * (page_size - 1))
    (store.lock_dir / f"{session.id}.lock").write_text("4242\n")  # as a killed writer leaves it
    with store.open(session.id, writable=True) as log:
        (line,) = [w for w in log.warnings if "quick_check" in w]
        assert "(pid 4242) stopped without closing; PRAGMA quick_check found" in line
        assert "\n" not in line and re.search(r"found \d+ problem\(s\): \S", line), line
