"""``EventStore.latest_settings``: a stored session's last ``session/settings`` event, read
without loading its log (what ``dsh run --session``, ``dsh --resume``, ``--replay`` and the
picker read before they open a session) — always the event a full load and fold finds, however
the log was written, crashed, repaired, cut into chunks or copied, and whatever its JSONL settings
record (``dsh.store.settings_record``) says: a record kept on disk is always the one a fresh
computation makes."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.agent import session_settings
from dsh.config import Settings
from dsh.errors import LogCorruptError
from dsh.events import SessionSettingsEvent, TurnStart
from dsh.store import EventStore, JsonlStore, SqliteStore, line_search, settings_record
from dsh.store.derived import settings_record_path
from dsh.store.sqlite_schema import LATEST_SETTINGS
from dsh.surface import Draft, Session
from tests.helpers import append_chat_turn, next_turn

MARKER = '\n{"type":"session/settings","seq":0,"time":0,"data":{}}\n'
"""A prompt quoting a settings line's start (JSON escapes its newlines: never a line)."""
TORN = {
    "settings": b'{"type":"session/settings","seq":999,"time":1,"data":{"provid',
    "other": b'{"type":"user/message","seq":999,"ti',
}
"""What a crash mid-write leaves after the last newline."""
steps = st.lists(
    st.one_of(
        st.tuples(st.just("settings"), st.integers(min_value=1, max_value=10**6)),
        st.tuples(st.just("chat"), st.text(max_size=40).map(lambda t: t + MARKER)),
        st.tuples(st.just("read"), st.none()),
        st.tuples(st.just("reopen"), st.none()),
        st.tuples(
            st.just("crash"), st.tuples(st.booleans(), st.sampled_from([None, "settings", "other"]))
        ),
        st.tuples(st.just("forget"), st.none()),
        st.tuples(st.just("rewrite"), st.none()),
        st.tuples(st.just("cut"), st.integers(min_value=1, max_value=8)),
    ),
    max_size=12,
)
CHUNKS = [1, 7, 64, 300, line_search.READ_CHUNK]
"""Bytes read at a time: smaller than the search's prefix, than a line, than the log."""


def _record_settings(session: Session, window: int, model: str = "m") -> None:
    snapshot = session_settings.snapshot(Settings(), "deepseek", model, window, "/w")
    session_settings.record(session, snapshot)


def _record_file(store: EventStore, session_id: str) -> Path | None:
    return settings_record_path(store.home, session_id) if isinstance(store, JsonlStore) else None


def _check(store: EventStore, session_id: str) -> None:
    """The fast read is what a full load and fold finds; JSONL's record, once read, is the one
    a fresh computation writes."""
    with Session.open(store, session_id) as loaded:  # read-only: no lock, no repair
        expected = loaded.of_type(SessionSettingsEvent)
    found = store.latest_settings(session_id)
    assert found == (expected[-1] if expected else None)
    assert session_settings.read(store, session_id) == (expected[-1].data if expected else None)
    record = _record_file(store, session_id)
    if record is not None:
        kept = record.read_bytes()
        record.unlink()
        assert store.latest_settings(session_id) == found
        assert record.read_bytes() == kept


def _play(store: EventStore, plan: list[tuple[str, object]]) -> None:
    session = Session.create(store, cwd="/w")
    session_id, jsonl = session.id, isinstance(store, JsonlStore)
    for kind, value in plan:
        if kind == "settings":
            assert isinstance(value, int)
            _record_settings(session, value)
        elif kind == "chat":
            append_chat_turn(session, str(value), "ok")
        elif kind == "read":
            _check(store, session_id)  # while the writer holds the log
        elif kind == "reopen":
            session.close()
            _check(store, session_id)  # the record its close wrote, if any
            session = Session.open(store, session_id, writable=True)
        elif kind == "crash":  # killed mid-turn: its close never runs, a line may be torn
            assert isinstance(value, tuple)
            records_settings, torn = value
            session.append(TurnStart(turn=next_turn(session)))
            if records_settings:
                _record_settings(session, 7, model="dying")
            with mock.patch.object(settings_record, "after_writer"):
                session.close()
            if jsonl and torn is not None:
                with store.log_path(session_id).open("ab") as log:
                    log.write(TORN[torn])
            _check(store, session_id)  # the torn line is no line: a load drops it
            session = Session.open(store, session_id, writable=True)  # crash repair
        elif kind == "forget" and jsonl:
            settings_record_path(store.home, session_id).unlink(missing_ok=True)
        elif kind == "rewrite" and jsonl:  # a copy renamed over the log: another inode
            session.close()
            path = store.log_path(session_id)
            shutil.copyfile(path, path.with_name("copy"))
            os.replace(path.with_name("copy"), path)
            session = Session.open(store, session_id, writable=True)
        elif kind == "cut" and jsonl:  # cut back in place (a hand edit), then written on
            session.close()
            path = store.log_path(session_id)
            data = path.read_bytes()
            ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]  # header's first
            assert isinstance(value, int)
            keep = ends[max(0, len(ends) - 1 - value)]
            with path.open("r+b") as log:
                log.truncate(keep)
            session = Session.open(store, session_id, writable=True)
    session.close()
    _check(store, session_id)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps, chunk=st.sampled_from(CHUNKS))
def test_the_jsonl_read_finds_what_a_full_load_finds(tmp_path_factory, plan, chunk):
    store = JsonlStore(tmp_path_factory.mktemp("home"))
    with mock.patch.object(line_search, "READ_CHUNK", chunk):
        _play(store, plan)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps)
def test_the_sqlite_read_finds_what_a_full_load_finds(tmp_path_factory, plan):
    _play(SqliteStore(tmp_path_factory.mktemp("home")), plan)


def _one_recorded(tmp_path: Path) -> tuple[JsonlStore, str]:
    store = JsonlStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        _record_settings(session, 4000)
        return store, session.id


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("with_record", [True, False])
def test_a_damaged_settings_line_is_refused_and_the_full_load_says_where(
    tmp_path, monkeypatch, chunk, with_record
):
    """Changed in place (the same file, the same size): the record's fingerprint of the line
    no longer matches, so the line is searched for and its seal refuses it."""
    monkeypatch.setattr(line_search, "READ_CHUNK", chunk)
    store, session_id = _one_recorded(tmp_path)
    record = settings_record_path(store.home, session_id)
    assert record.is_file()  # the writer's close wrote it
    if not with_record:
        record.unlink()
    path = store.log_path(session_id)
    path.write_bytes(path.read_bytes().replace(b'"contextWindow":4000', b'"contextWindow":4001'))
    with pytest.raises(LogCorruptError, match="line 2"):
        store.latest_settings(session_id)
    with pytest.raises(LogCorruptError, match="line 2"):  # read() falls back to the full load
        session_settings.read(store, session_id)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_torn_settings_line_is_not_taken_for_a_record(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(line_search, "READ_CHUNK", chunk)
    store, session_id = _one_recorded(tmp_path)
    path = store.log_path(session_id)
    path.write_bytes(path.read_bytes()[:-5])  # a crash mid-write: no newline at the end
    assert store.latest_settings(session_id) is None  # as the load, which drops the torn line
    assert session_settings.read(store, session_id) is None


def _long_log(tmp_path: Path) -> tuple[JsonlStore, str, int]:
    """A session whose settings line is its first event, followed by 40 turns."""
    store = JsonlStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        _record_settings(session, 4000)
        for i in range(40):
            append_chat_turn(session, f"question {i} " + "x" * 200, "ok")
        session_id = session.id
    size = store.log_path(session_id).stat().st_size
    return store, session_id, size


def _offsets_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    offsets: list[int] = []
    real_pread = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        offsets.append(offset)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    return offsets


def test_a_line_far_from_the_end_is_read_without_reading_what_follows_it(tmp_path, monkeypatch):
    store, session_id, size = _long_log(tmp_path)
    monkeypatch.setattr(line_search, "READ_CHUNK", 4096)
    assert size > 10 * 4096
    offsets = _offsets_read(monkeypatch)
    found = store.latest_settings(session_id)
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 4000
    header_end = store.log_path(session_id).read_bytes().index(b"\n") + 1
    # the header and the settings line at the start, the last line at the end: nothing between
    assert all(offset <= header_end or offset >= size - 2 * 4096 for offset in offsets)


def test_without_a_record_the_read_searches_back_once_and_records_the_line(tmp_path, monkeypatch):
    store, session_id, size = _long_log(tmp_path)
    settings_record_path(store.home, session_id).unlink()  # a log an older dsh wrote
    monkeypatch.setattr(line_search, "READ_CHUNK", 4096)
    offsets = _offsets_read(monkeypatch)
    assert store.latest_settings(session_id) is not None
    assert min(offsets) < 4096  # searched back to the line near the start
    offsets.clear()
    assert store.latest_settings(session_id) is not None
    header_end = store.log_path(session_id).read_bytes().index(b"\n") + 1
    assert all(offset <= header_end or offset >= size - 2 * 4096 for offset in offsets)


def test_a_line_appended_since_the_record_is_found_in_what_was_appended(tmp_path, monkeypatch):
    """A writer killed before its close (its record never written): the read searches only
    what follows the record, and finds the newer line there."""
    store, session_id, size = _long_log(tmp_path)
    session = Session.open(store, session_id, writable=True)
    _record_settings(session, 9000)
    append_chat_turn(session, "after", "ok")
    with mock.patch.object(settings_record, "after_writer"):
        session.close()
    monkeypatch.setattr(line_search, "READ_CHUNK", 4096)
    offsets = _offsets_read(monkeypatch)
    found = store.latest_settings(session_id)
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 9000
    header_end = store.log_path(session_id).read_bytes().index(b"\n") + 1
    assert all(offset <= header_end or offset >= size - 2 * 4096 for offset in offsets)


def _sqlite_session(tmp_path: Path) -> tuple[SqliteStore, str]:
    store = SqliteStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        _record_settings(session, 4000)
        append_chat_turn(session, "hi", "ok")
        _record_settings(session, 5000)
        append_chat_turn(session, "again", "ok")
        return store, session.id


def test_a_log_cut_back_in_place_and_written_on_is_not_read_through_its_old_record(tmp_path):
    """The record covers bytes that are no longer the log's: its anchor line is not there any
    more, so a settings line written where the cut left off is found."""
    store, session_id, _ = _long_log(tmp_path)
    path = store.log_path(session_id)
    data = path.read_bytes()
    cut = data.rindex(b'{"type":"turn/start"', 0, data.rindex(b'{"type":"turn/start"'))
    with path.open("r+b") as log:
        log.truncate(cut)  # the last two turns gone, the record still naming the old end
    session = Session.open(store, session_id, writable=True)
    _record_settings(session, 9000)
    for i in range(3):
        append_chat_turn(session, f"written on {i} " + "y" * 200, "ok")  # past the old end
    assert path.stat().st_size > len(data)
    found = store.latest_settings(session_id)  # the writer is still open: its record unwritten
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 9000
    session.close()


def test_a_batch_of_settings_lines_records_its_last(tmp_path):
    """One write holding several settings lines (``append_many``): the writer's record names
    the last, as a search would."""
    store = JsonlStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        append_chat_turn(session, "first", "ok")
        drafts = [
            Draft(session_settings.snapshot(Settings(), "deepseek", "m", window, "/w"))
            for window in (4000, 5000, 6000)
        ]
        session.append_many(drafts)
        append_chat_turn(session, "after", "ok")
        session_id = session.id
    found = store.latest_settings(session_id)  # through the record the close wrote
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 6000
    _check(store, session_id)


def test_sqlite_finds_the_latest_settings_with_one_index_lookup(tmp_path):
    store, session_id = _sqlite_session(tmp_path)
    db = sqlite3.connect(store.path)
    try:
        plan = db.execute(f"EXPLAIN QUERY PLAN {LATEST_SETTINGS}", (session_id,)).fetchall()
    finally:
        db.close()
    assert "USING INDEX events_settings" in " ".join(str(row[-1]) for row in plan)
    found = store.latest_settings(session_id)
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 5000


def test_a_database_an_older_dsh_wrote_gets_the_index_over_its_rows(tmp_path):
    store, session_id = _sqlite_session(tmp_path)
    db = sqlite3.connect(store.path)
    try:  # as before the migration: no index, not recorded
        db.execute("DROP INDEX events_settings")
        db.execute("DELETE FROM schema_migrations WHERE name = '002_settings_index'")
        db.commit()
    finally:
        db.close()
    found = store.latest_settings(session_id)  # its first connection migrates
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 5000
    db = sqlite3.connect(store.path)
    try:
        names = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()
    assert "002_settings_index" in names and "events_settings" in indexes


def test_a_repair_that_cuts_the_latest_settings_row_leaves_the_one_before(tmp_path):
    """Rows deleted (``dsh sessions repair`` cuts a log so) leave the index: the index is
    SQLite's, kept in the same transaction as the rows."""
    store, session_id = _sqlite_session(tmp_path)
    with Session.open(store, session_id) as loaded:
        (first, second) = loaded.of_type(SessionSettingsEvent)
    db = sqlite3.connect(store.path)
    try:
        db.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (session_id, second.seq))
        db.commit()
    finally:
        db.close()
    assert store.latest_settings(session_id) == first
