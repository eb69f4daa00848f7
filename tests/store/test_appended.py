"""``AppendedReader``: a stored log read on from a remembered position hands on exactly what a
fresh load holds past it, and a log that changed other than by appends is read from its start."""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from dsh.errors import LogCorruptError, SessionNotFoundError, UsageError
from dsh.events import Event, SessionTitle, encode_event
from dsh.store import JsonlStore, MemoryStore, SqliteStore
from dsh.store import appended as appended_module
from dsh.store.appended import AppendedReader, LogPosition, reader_for
from dsh.store.base import SessionHeader, encode_header
from dsh.store.integrity import sealed_lines
from dsh.store.jsonl import torn_tail_warning
from dsh.surface import Session
from tests.helpers import FIXED_TIME, append_chat_turn

Store = JsonlStore | SqliteStore


class Collect:
    """An ``EventSink`` that keeps every event as its bytes, and counts restarts."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.restarts = 0

    def restart(self) -> None:
        self.lines = []
        self.restarts += 1

    def add(self, events: Sequence[Event]) -> None:
        self.lines += [encode_event(e) for e in events]


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return JsonlStore(tmp_path) if request.param == "jsonl" else SqliteStore(tmp_path)


def writer(store: Store) -> Session:
    """A new session whose clock moves on a millisecond per event, as a real clock would."""
    clock = itertools.count(FIXED_TIME)
    return Session(store.create(cwd="/work/project"), clock=lambda: next(clock))


def loaded(store: Store, session_id: str) -> tuple[SessionHeader, list[bytes]]:
    log = store.open(session_id)
    try:
        return log.header, [encode_event(e) for e in log.events]
    finally:
        log.close()


def read(store: Store, session_id: str, position: LogPosition | None, sink: Collect) -> LogPosition:
    header, _ = loaded(store, session_id)
    with AppendedReader(store) as reader:
        return reader.read(header, position, sink)


def test_a_read_from_no_position_hands_on_what_a_load_holds(store: Store) -> None:
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
        session.append(SessionTitle(title="named"))
    sink = Collect()
    position = read(store, session.id, None, sink)
    assert sink.lines == loaded(store, session.id)[1]
    assert position.seq == len(sink.lines) - 1 and sink.restarts == 1


def test_a_read_from_a_position_hands_on_only_the_appended_events(store: Store) -> None:
    session = writer(store)
    append_chat_turn(session, "first", "ok")
    whole = Collect()
    position = read(store, session.id, None, whole)
    again = Collect()
    assert read(store, session.id, position, again) == position and again.lines == []
    append_chat_turn(session, "second", "ok")
    session.sync()
    more = Collect()
    position = read(store, session.id, position, more)
    assert more.restarts == 0
    assert whole.lines + more.lines == loaded(store, session.id)[1]
    assert position.seq == len(session.events) - 1
    session.close()


def test_an_empty_log_is_read_on_from_its_header(store: Store) -> None:
    session = writer(store)
    first = Collect()
    position = read(store, session.id, None, first)
    assert first.lines == [] and position.seq == -1
    append_chat_turn(session, "first", "ok")
    session.sync()
    more = Collect()
    read(store, session.id, position, more)
    assert more.restarts == 0 and more.lines == loaded(store, session.id)[1]
    session.close()


def test_another_header_reads_the_log_again_from_its_start(store: Store) -> None:
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    header, lines = loaded(store, session.id)
    with AppendedReader(store) as reader:
        position = reader.read(header, None, Collect())
        sink = Collect()
        moved = msgspec.structs.replace(header, cwd="/somewhere/else")
        reader.read(moved, position, sink)
    assert sink.restarts == 1 and sink.lines == lines


def cut_in_place(store: Store, session_id: str, events: int) -> None:
    """Drop the last ``events`` events where they are stored (no new file)."""
    if isinstance(store, JsonlStore):
        path = store.log_path(session_id)
        lines = path.read_bytes().splitlines(keepends=True)
        with path.open("r+b") as handle:
            handle.truncate(sum(map(len, lines[:-events])))
    else:
        with sqlite3.connect(store.path) as db:
            (count,) = db.execute(
                "SELECT count(*) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
            db.execute(
                "DELETE FROM events WHERE session_id = ? AND seq >= ?", (session_id, count - events)
            )


def test_a_log_cut_back_in_place_and_grown_again_is_read_from_its_start(store: Store) -> None:
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
        append_chat_turn(session, "second", "ok")
    position = read(store, session.id, None, Collect())
    cut_in_place(store, session.id, 6)  # the second turn
    clock = itertools.count(FIXED_TIME + 1000)
    with Session(store.open(session.id, writable=True), clock=lambda: next(clock)) as again:
        append_chat_turn(again, "other", "ok")
        append_chat_turn(again, "more", "ok")
    sink = Collect()
    read(store, session.id, position, sink)
    assert sink.restarts == 1 and sink.lines == loaded(store, session.id)[1]


def test_a_log_cut_back_under_its_position_is_read_from_its_start(store: Store) -> None:
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
        append_chat_turn(session, "second", "ok")
    position = read(store, session.id, None, Collect())
    cut_in_place(store, session.id, 3)
    sink = Collect()
    read(store, session.id, position, sink)
    assert sink.restarts == 1 and sink.lines == loaded(store, session.id)[1]


def test_a_replaced_jsonl_file_is_read_from_its_start(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
        append_chat_turn(session, "second", "ok")
    header, lines = loaded(store, session.id)
    position = read(store, session.id, None, Collect())
    path = store.log_path(session.id)
    staged = path.with_name("staged")
    staged.write_bytes(sealed_lines([encode_header(header), *lines]))  # the same bytes, anew
    os.replace(staged, path)
    sink = Collect()
    read(store, session.id, position, sink)
    assert sink.restarts == 1 and sink.lines == lines


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    path = store.log_path(session.id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]) + lines[-2][:7])
    early = Collect()
    position = read(store, session.id, None, early)
    assert early.lines == loaded(store, session.id)[1]  # the load drops the torn line too
    with path.open("ab") as handle:
        handle.write(lines[-2][7:] + lines[-1][:5])
    middle = Collect()
    position = read(store, session.id, position, middle)
    with path.open("ab") as handle:
        handle.write(lines[-1][5:])
    late = Collect()
    read(store, session.id, position, late)
    assert (middle.restarts, late.restarts) == (0, 0)
    assert early.lines + middle.lines + late.lines == loaded(store, session.id)[1]
    assert len(middle.lines) == len(late.lines) == 1


@pytest.mark.parametrize("chunk", [16, 100, 1 << 20])
def test_lines_longer_than_a_read_and_reads_across_lines_hand_on_every_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(appended_module, "READ_CHUNK", chunk)
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first " * 50, "ok")
        append_chat_turn(session, "second", "ok " * 80)
    sink = Collect()
    position = read(store, session.id, None, sink)
    assert sink.lines == loaded(store, session.id)[1]
    assert position.offset == store.log_path(session.id).stat().st_size


def test_a_settled_unchanged_file_is_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonlStore(tmp_path)
    session = writer(store)
    append_chat_turn(session, "first", "ok")
    session.sync()
    path = store.log_path(session.id)
    hour_ago = (FIXED_TIME - 3_600_000) * 1_000_000
    os.utime(path, ns=(hour_ago, hour_ago))
    fresh = read(store, session.id, None, Collect())
    assert fresh.mtime_ns == hour_ago
    header = store.list()[0]
    opened: list[Path] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        if self == path:
            opened.append(self)
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", counting_open)
    with AppendedReader(store) as reader:
        assert reader.read(header, fresh, Collect()) == fresh
        assert opened == []
        append_chat_turn(session, "second", "ok")  # the size moves on: the file is read
        session.sync()
        os.utime(path, ns=(hour_ago, hour_ago))
        sink = Collect()
        reader.read(header, fresh, sink)
    assert opened == [path] and sink.restarts == 0 and len(sink.lines) == 6
    session.close()


def test_a_recently_written_file_is_checked_by_its_anchor(tmp_path: Path) -> None:
    """A file written within the last ``SETTLED_NS``: an unchanged stat proves nothing (file
    times are coarse), so the next read opens it and compares the anchor line."""
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    position = read(store, session.id, None, Collect())
    assert position.mtime_ns == -1
    path = store.log_path(session.id)
    data = bytearray(path.read_bytes())
    stat = path.stat()
    data[-30] ^= 1  # the anchor line changes in place; size and times are put back
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(LogCorruptError):  # read again from the start: the bad line is found
        read(store, session.id, position, Collect())


def test_an_appended_line_that_does_not_load_is_refused_naming_it(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    path = store.log_path(session.id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    position = read(store, session.id, None, Collect())
    with path.open("ab") as handle:
        handle.write(lines[-1].replace(b"turn/end", b"turn/END"))
    with pytest.raises(LogCorruptError, match=f"line {len(lines)}"):
        read(store, session.id, position, Collect())


def test_only_jsonl_and_sqlite_stores_have_a_reader(tmp_path: Path) -> None:
    assert reader_for(MemoryStore()) is None
    assert reader_for(JsonlStore(tmp_path)) is not None
    assert reader_for(SqliteStore(tmp_path)) is not None


@pytest.mark.parametrize(("settled", "older_cache"), [(True, False), (False, False), (True, True)])
def test_a_line_changed_in_place_before_the_anchor_is_found(
    tmp_path: Path, settled: bool, older_cache: bool
) -> None:
    """A byte of an earlier line edited in place (by hand, or a disk fault): the file keeps its
    size but its mtime moves, which no append does, so it is read again from its start and the
    bad line refused — a listing shows the session unreadable, not as it was."""
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "list numbers", "ok")
        append_chat_turn(session, "second", "ok")
    path = store.log_path(session.id)
    if settled:
        hour_ago = (FIXED_TIME - 3_600_000) * 1_000_000
        os.utime(path, ns=(hour_ago, hour_ago))
    position = read(store, session.id, None, Collect())
    assert (position.mtime_ns >= 0) is settled
    if older_cache:  # a position from a dsh that kept no seen_mtime_ns
        position = msgspec.structs.replace(position, seen_mtime_ns=-1)
    data = bytearray(path.read_bytes())
    data[data.index(b"list numbers")] = ord("L")  # not the anchor line: the first turn
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    header = store.list()[0]  # the header line is intact (a load would refuse the log)
    with AppendedReader(store) as reader, pytest.raises(LogCorruptError, match="checksum"):
        reader.read(header, position, Collect())


# ---- a whole load through the reader ---------------------------------------------------------


def test_a_load_holds_what_the_stores_open_holds_and_is_read_on_from(store: Store) -> None:
    session = writer(store)
    append_chat_turn(session, "first", "ok")
    session.sync()
    with AppendedReader(store) as reader:
        log, position = reader.load(session.id)
        header, lines = loaded(store, session.id)
        assert (log.header, [encode_event(e) for e in log.events]) == (header, lines)
        assert not log.writable and position.seq == len(lines) - 1
        append_chat_turn(session, "second", "ok")
        session.sync()
        more = Collect()
        reader.read(log.header, position, more)
    assert more.restarts == 0 and lines + more.lines == loaded(store, session.id)[1]
    session.close()


def test_a_load_of_a_session_that_is_not_stored_is_not_found(store: Store) -> None:
    with writer(store):
        pass
    with AppendedReader(store) as reader, pytest.raises(SessionNotFoundError):
        reader.load("20260101-000000-000-abcdef")


def test_a_load_leaves_a_line_still_being_written_for_the_next_read_and_warns_as_a_load(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    path = store.log_path(session.id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:9])
    with AppendedReader(store) as reader:
        log, position = reader.load(session.id)
        assert [encode_event(e) for e in log.events] == loaded(store, session.id)[1]
        with store.open(session.id) as fresh:  # and warns of it as a load does
            assert log.warnings == fresh.warnings == [torn_tail_warning(path, 9)]
        with path.open("ab") as handle:
            handle.write(lines[-1][9:])
        rest = Collect()
        reader.read(log.header, position, rest)
        assert reader.load(session.id)[0].warnings == []  # whole again: nothing to say
    assert rest.restarts == 0 and len(rest.lines) == 1
    assert [encode_event(e) for e in log.events] + rest.lines == loaded(store, session.id)[1]


def test_a_read_only_log_catches_up_only_with_the_events_that_continue_it(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with writer(store) as session:
        append_chat_turn(session, "first", "ok")
    events = list(store.open(session.id).events)
    with AppendedReader(store) as reader:
        log, _ = reader.load(session.id)
        with pytest.raises(LogCorruptError, match="expected seq"):  # seq 1 again
            log.catch_up(events[1:])
        assert len(log.events) == len(events)
    writable = store.open(session.id, writable=True)
    with pytest.raises(UsageError):
        writable.catch_up(events[:1])
    writable.close()
