"""``LogTail``: the events another writer appended since the last read, without rereading the
log; what it hands out is exactly what a fresh load of the log holds past the starting seq."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import LogCorruptError
from dsh.events import encode_event
from dsh.store import EventStore, JsonlStore, MemoryStore, SqliteStore
from dsh.store.tail import LogTail
from tests.helpers import append_chat_turn, new_session


def fresh_lines(store: EventStore, session_id: str, after: int) -> list[bytes]:
    log = store.open(session_id)
    try:
        return [encode_event(e) for e in log.events[after + 1 :]]
    finally:
        log.close()


def stores(tmp_path: Path) -> list[EventStore]:
    return [JsonlStore(tmp_path / "jsonl"), SqliteStore(tmp_path / "sqlite"), MemoryStore()]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6))
def test_reads_between_appends_hand_out_exactly_the_appended_events(
    tmp_path_factory: pytest.TempPathFactory, batches: list[int]
) -> None:
    for store in stores(tmp_path_factory.mktemp("tail")):
        writer = new_session(store)
        append_chat_turn(writer, "before the tail", "ok")
        start = len(writer.events) - 1
        tail = LogTail(store, writer.id, start)
        handed: list[bytes] = []
        for turns in batches:
            for i in range(turns):
                append_chat_turn(writer, f"prompt {i}", f"reply {i}")
            writer.sync()
            handed += [encode_event(e) for e in tail.read()]
            assert tail.last_seq == len(writer.events) - 1
        assert handed == fresh_lines(store, writer.id, start)
        assert tail.read() == []
        tail.close()
        writer.close()


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer)
    writer.close()
    path = store.log_path(writer.id)
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    last = lines[-1]
    path.write_bytes(b"".join(lines[:-2]))  # the log as it was two events earlier
    count = len(lines) - 1  # events in the whole log
    tail = LogTail(store, writer.id, count - 3)
    assert tail.read() == []
    with path.open("ab") as handle:
        handle.write(lines[-2] + last[:10])  # one whole line, then a torn start of the next
    got = tail.read()
    assert [e.seq for e in got] == [count - 2]
    with path.open("ab") as handle:
        handle.write(last[10:])
    assert [e.seq for e in tail.read()] == [count - 1]


def test_a_log_cut_back_under_the_tail_is_found_again(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer)
    writer.close()
    path = store.log_path(writer.id)
    lines = path.read_bytes().splitlines(keepends=True)
    count = len(lines) - 1
    tail = LogTail(store, writer.id, count - 1)
    path.write_bytes(b"".join(lines) + b'{"torn')  # a torn write, then the repair cuts it off
    assert tail.read() == []
    path.write_bytes(b"".join(lines[:-1]))  # and a shorter log than the tail's place
    with pytest.raises(LogCorruptError):
        tail.read()


def test_a_changed_line_is_refused_naming_it(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer)
    writer.close()
    path = store.log_path(writer.id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    tail = LogTail(store, writer.id, len(lines) - 3)
    bad = lines[-1].replace(b"turn/end", b"turn/END")
    with path.open("ab") as handle:
        handle.write(bad)
    with pytest.raises(LogCorruptError, match=f"line {len(lines)}"):
        tail.read()
