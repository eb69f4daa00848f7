"""``LogFollow``, the follower's reads of a session another process writes: every read hands out
exactly the events a fresh load of the log holds past the last one handed out (or fails as that
load fails), whatever was written in between.

The log is written as the read cache's property test writes it (``Log``: random turns landing
in random pieces, torn writes completed later or never, a writable open repairing the log, a
shorter copy renamed over it, a cut back in place) and, besides, its last complete line is
changed in place and put back: the follower refuses the changed log as a load does, then reads
on. A SQLite session gets appends, rows deleted in place and its last row changed in place."""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import DshError, LogCorruptError
from dsh.events import encode_event
from dsh.store import EventStore, JsonlStore, MemoryStore, SqliteStore
from dsh.surface import Session
from dsh.web.follow import LogFollow
from tests.agent.log_ops import apply_op, log_ops
from tests.helpers import FIXED_TIME, append_chat_turn, new_session
from tests.web.test_read_cache_properties import Log, changes

SEAL = b',"crc":"'

Answer = list[bytes] | tuple[str, ...]
"""The events' stored bytes, or the error's class name."""


def fresh_past(store: EventStore, session_id: str, seq: int) -> Answer:
    """The events past ``seq`` of a fresh load of the log (or the class of its error)."""
    try:
        with Session.open(store, session_id) as session:
            return [encode_event(e) for e in session.events if e.seq > seq]
    except DshError as exc:
        return ("error", type(exc).__name__)


def handed_out(tail: LogFollow) -> Answer:
    before = tail.last_seq
    try:
        events = [encode_event(e) for e in tail.read()]
    except DshError as exc:
        assert tail.last_seq == before
        return ("error", type(exc).__name__)
    return events


def answers_as_a_fresh_load(tail: LogFollow, store: EventStore) -> None:
    expected = fresh_past(store, tail.session_id, tail.last_seq)
    assert handed_out(tail) == expected


def with_a_wrong_seal(body: bytes) -> bytes:
    """``body`` (a sealed line) with its seal's first digit changed: a load refuses it."""
    at = body.rindex(SEAL) + len(SEAL)
    digit = b"0" if body[at : at + 1] != b"0" else b"1"
    return body[:at] + digit + body[at + 1 :]


def last_line_changed(log: Log) -> Iterator[None]:
    """The log's last complete event line changed in place (same size), then put back."""
    data = log.path.read_bytes()
    end = data.rfind(b"\n")
    start = data.rfind(b"\n", 0, end) + 1
    if start == 0:
        return  # the header alone
    line = data[start:end]
    with log.path.open("r+b") as handle:
        handle.seek(start)
        handle.write(with_a_wrong_seal(line))
    yield
    with log.path.open("r+b") as handle:
        handle.seek(start)
        handle.write(line)
    yield


jsonl_changes = st.one_of(changes, st.tuples(st.just("change-last-line")))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.integers(-1, 40), st.lists(jsonl_changes, min_size=1, max_size=8))
def test_each_jsonl_read_hands_out_what_a_fresh_load_holds_past_the_last_seq(start, steps):
    with tempfile.TemporaryDirectory() as tmp:
        log = Log(Path(tmp))
        tail = LogFollow(log.store, log.id, start)
        answers_as_a_fresh_load(tail, log.store)
        for change in steps:
            moves = (
                last_line_changed(log) if change[0] == "change-last-line" else log.change(change)
            )
            for _ in moves:
                answers_as_a_fresh_load(tail, log.store)
                answers_as_a_fresh_load(tail, log.store)  # nothing more until the log changes
        tail.close()


def last_row_changed(store: SqliteStore, session_id: str) -> Iterator[None]:
    db = sqlite3.connect(store.path)
    try:
        row = db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if row is None:
            return
        seq, body = row[0], bytes(row[1])
        for put in (with_a_wrong_seal(body), body):
            db.execute(
                "UPDATE events SET body = ? WHERE session_id = ? AND seq = ?",
                (put, session_id, seq),
            )
            db.commit()
            yield
    finally:
        db.close()


sqlite_changes = st.one_of(
    st.tuples(st.just("write"), st.lists(log_ops, min_size=1, max_size=3)),
    st.tuples(st.just("cut"), st.integers(0, 200)),  # rows deleted in place (repair cuts so)
    st.tuples(st.just("change-last-row")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(-1, 40), st.lists(sqlite_changes, min_size=1, max_size=8))
def test_each_sqlite_read_hands_out_what_a_fresh_load_holds_past_the_last_seq(start, steps):
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp))
        clock = itertools.count(FIXED_TIME)
        writer = Session(store.create(cwd="/work/project"), clock=lambda: next(clock))
        session_id = writer.id
        writer.close()
        tail = LogFollow(store, session_id, start)
        answers_as_a_fresh_load(tail, store)
        for number, change in enumerate(steps):
            if change[0] == "write":
                writer = Session(store.open(session_id, writable=True), clock=lambda: next(clock))
                for op in change[1]:
                    if op[0] != "reopen":
                        apply_op(writer, op, number)
                    answers_as_a_fresh_load(tail, store)
                writer.close()
            elif change[0] == "cut":
                db = sqlite3.connect(store.path)
                count = db.execute("SELECT count(*) FROM events").fetchone()[0]
                db.execute("DELETE FROM events WHERE seq >= ?", (change[1] % (count + 1),))
                db.commit()
                db.close()
            else:
                for _ in last_row_changed(store, session_id):
                    answers_as_a_fresh_load(tail, store)
            answers_as_a_fresh_load(tail, store)
        tail.close()


def stores(tmp_path: Path) -> list[EventStore]:
    return [JsonlStore(tmp_path / "jsonl"), SqliteStore(tmp_path / "sqlite"), MemoryStore()]


def test_reads_between_appends_hand_out_exactly_the_appended_events(tmp_path: Path) -> None:
    for store in stores(tmp_path):
        writer = new_session(store)
        append_chat_turn(writer, "before the follower", "ok")
        start = len(writer.events) - 1
        tail = LogFollow(store, writer.id, start)
        assert tail.read() == []
        handed: list[bytes] = []
        for turns in (1, 0, 3):
            for i in range(turns):
                append_chat_turn(writer, f"prompt {i}", f"reply {i}")
            writer.sync()
            handed += [encode_event(e) for e in tail.read()]
            assert tail.last_seq == len(writer.events) - 1
        assert handed == [encode_event(e) for e in writer.events[start + 1 :]]
        tail.close()
        writer.close()


def one_turn_log(tmp_path: Path) -> tuple[JsonlStore, str, Path]:
    """A JSONL store holding a session of one chat turn: the store, its id and its log."""
    store = JsonlStore(tmp_path)
    with new_session(store) as writer:
        append_chat_turn(writer)
    return store, writer.id, store.log_path(writer.id)


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    store, session_id, path = one_turn_log(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    last = lines[-1]
    path.write_bytes(b"".join(lines[:-2]))  # the log as it was two events earlier
    count = len(lines) - 1  # events in the whole log
    tail = LogFollow(store, session_id, count - 3)
    assert tail.read() == []
    with path.open("ab") as handle:
        handle.write(lines[-2] + last[:10])  # one whole line, then a torn start of the next
    assert [e.seq for e in tail.read()] == [count - 2]
    with path.open("ab") as handle:
        handle.write(last[10:])
    assert [e.seq for e in tail.read()] == [count - 1]


def test_a_line_changed_in_place_is_refused_naming_it_then_read_on_once_put_back(
    tmp_path: Path,
) -> None:
    store, session_id, path = one_turn_log(tmp_path)
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    tail = LogFollow(store, session_id, len(lines) - 3)
    assert [e.seq for e in tail.read()] == [len(lines) - 2]
    path.write_bytes(whole[: -len(lines[-1])] + with_a_wrong_seal(lines[-1][:-1]) + b"\n")
    with pytest.raises(LogCorruptError, match=f"line {len(lines)}"):
        tail.read()
    path.write_bytes(whole)
    assert tail.read() == []  # nothing new: the same events past the same seq
    append = Session.open(store, session_id, writable=True)
    append_chat_turn(append, "more", "ok")
    append.close()
    assert [e.seq for e in tail.read()] == list(range(len(lines) - 1, len(append.events)))


def test_raising_the_last_seq_reads_past_what_the_pages_got_elsewhere(tmp_path: Path) -> None:
    """While the session is open here its own observer publishes: the follower takes up after
    what it appended, never handing it out again."""
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer)
    tail = LogFollow(store, writer.id, len(writer.events) - 1)
    assert tail.read() == []
    append_chat_turn(writer, "appended here", "ok")
    tail.last_seq = len(writer.events) - 1
    assert tail.read() == []
    before = len(writer.events)
    append_chat_turn(writer, "appended elsewhere", "ok")
    writer.sync()
    assert [e.seq for e in tail.read()] == list(range(before, len(writer.events)))
    writer.close()
