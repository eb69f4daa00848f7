"""A SQLite session opens a batch of rows at a time (``dsh.store.sqlite_rows``): the same events,
and the same refusal of a damaged log (a changed, deleted, reordered or undecodable row), as
checking and decoding every row at once, whatever the batch size; and without holding every
row's body at once."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import LogCorruptError, UnknownEventTypeError
from dsh.events import Event, decode_events, encode_event
from dsh.store import MemoryStore, SqliteStore, sqlite_rows
from dsh.store.integrity import check_rows, seal, unseal
from tests.helpers import append_chat_turn, append_tool_turn, new_session

Row = tuple[Any, Any]


def all_at_once(session_id: str, rows: list[Row]) -> list[Event]:
    """The open's decode before it streamed (every row fetched, then checked, then decoded):
    the fresh computation the streamed one must equal."""
    for position, (seq, _) in enumerate(rows):
        if seq != position:
            raise LogCorruptError(
                f"session {session_id}: expected seq {position} but found seq {seq} "
                "(a gap in the log)",
                seq=seq,
            )
    where = f"session {session_id}: "
    lines = check_rows([bytes(body) for _, body in rows], first_seq=0, where=where)
    try:
        return decode_events(lines, first_line=0)
    except UnknownEventTypeError as exc:
        raise UnknownEventTypeError(
            exc.event_type,
            seq=exc.seq if exc.seq is not None else exc.line,
            context=f"session {session_id}",
        ) from exc
    except LogCorruptError as exc:
        message = str(exc).replace("line ", "seq ", 1)
        raise LogCorruptError(f"session {session_id}: {message}", seq=exc.line) from exc


def outcome(load: Any) -> object:
    """What a load gives: the events' stored bytes, or the error's class, text and location."""
    try:
        events = load()
    except (LogCorruptError, TypeError) as exc:
        return (type(exc), str(exc), getattr(exc, "seq", None), getattr(exc, "line", None))
    return [encode_event(e) for e in events]


def stored_rows(store: SqliteStore, session_id: str) -> list[Row]:
    with sqlite3.connect(store.path) as db:
        return db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()


def store_rows(store: SqliteStore, session_id: str, rows: list[Row]) -> None:
    with sqlite3.connect(store.path) as db:
        db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
        db.executemany("INSERT INTO events VALUES (?, ?, ?)", [(session_id, *r) for r in rows])


def random_events(turns: list[tuple[bool, int]]) -> list[Event]:
    session = new_session(MemoryStore())
    for i, (tools, size) in enumerate(turns):
        if tools:
            calls = [("read_file", f'{{"path":"f{i}"}}', "é" * size), ("bash", "{}", "x" * i)]
            append_tool_turn(session, f"q{i}", calls=calls)
        else:
            append_chat_turn(session, f"q{i}", "r" * size)
    return list(session.events)


def damaged(body: bytes, kind: int, seq: int) -> Any:
    """One kind of damage to a row's body (``seq``: the row's position in the log)."""
    canonical = unseal(body)[0]
    if kind == 0:  # a row written before seals: loads as it is
        return canonical
    if kind == 1:  # another seq in a resealed row: the per-event rule refuses it
        return seal(canonical.replace(b'"seq":', b'"seq":1', 1))
    if kind == 2:  # a type this version does not know, sealed or not
        return seal(b'{"type":"future/thing","seq":%d,"time":5,"data":{}}' % seq)
    if kind == 3:  # an ignorable unknown type: loads as opaque
        return b'{"type":"future/note","seq":%d,"time":7,"ignorable":true,"data":{}}' % seq
    if kind == 4:  # not JSON, resealed
        return seal(b"{not json}")
    if kind == 5:  # a newline inside the JSON, resealed: still the same event
        return seal(canonical.replace(b"{", b"{\n", 1))
    if kind == 6:  # a body stored as text, not a blob
        return body.decode("utf-8")
    if kind == 7:  # two sealed lines in one row
        return body + b"\n" + body
    if kind == 8:  # a malformed payload, resealed
        return seal(b'{"type":"turn/start","seq":%d,"time":1,"data":{"turn":"one"}}' % seq)
    return b""  # an empty body


def damage(rows: list[Row], action: tuple[int, int, int, int]) -> list[Row]:
    op, at, other, extra = action
    if not rows:
        return rows
    i, j = at % len(rows), other % len(rows)
    seq, body = rows[i]
    rows = list(rows)
    if op == 0 and isinstance(body, bytes) and body:  # a changed bit: its seal refuses it
        position = extra % len(body)
        flipped = body[position] ^ (1 << (other % 8))
        rows[i] = (seq, body[:position] + bytes([flipped]) + body[position + 1 :])
    elif op == 1:  # a deleted row: a gap
        del rows[i]
    elif op == 2:  # two rows' bodies swapped: reordered
        rows[i], rows[j] = (seq, rows[j][1]), (rows[j][0], body)
    elif op == 3 and isinstance(body, bytes):
        rows[i] = (seq, damaged(body, extra % 10, i))
    elif op == 4:  # a row's seq that is not a number
        rows[i] = (f"x{seq}", body)
    elif op == 5:  # a row added past the last one (or one more past it): a copy of another
        last = max((s for s, _ in rows if isinstance(s, int)), default=-1)
        rows.append((last + 1 + extra % 2, body))
    elif op == 6 and isinstance(body, bytes):  # a body cut short
        rows[i] = (seq, body[: extra % max(len(body), 1)])
    return rows


actions = st.tuples(
    st.integers(0, 6), st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 10_000)
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=st.lists(st.tuples(st.booleans(), st.integers(0, 3000)), min_size=0, max_size=10),
    damages=st.lists(actions, max_size=4),
    batch=st.one_of(st.integers(1, 6000), st.just(sqlite_rows.ROWS_BYTES)),
)
def test_the_streamed_open_gives_what_decoding_every_row_at_once_gives(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[tuple[bool, int]],
    damages: list[tuple[int, int, int, int]],
    batch: int,
) -> None:
    store = SqliteStore(tmp_path_factory.mktemp("home"))
    log = store.create(cwd="/work", seed=random_events(turns))
    log.close()
    rows = stored_rows(store, log.id)
    for action in damages:
        rows = damage(rows, action)
    store_rows(store, log.id, rows)
    rows = stored_rows(store, log.id)  # as SQLite hands them back (ordered, typed)
    expected = outcome(lambda: all_at_once(log.id, rows))
    monkeypatch.setattr(sqlite_rows, "ROWS_BYTES", batch)
    assert outcome(lambda: store.open(log.id).events) == expected
    assert outcome(lambda: sqlite_rows.decode_rows(iter(rows), log.id)) == expected


def _long_session(store: SqliteStore, turns: int) -> str:
    session = new_session(store)
    for i in range(turns):
        append_tool_turn(session, f"q{i}", calls=[("read_file", "{}", f"{i} " + "y" * 6000)])
    session.close()
    return session.id


@pytest.mark.parametrize(
    ("early", "late", "reported"),
    [
        # a changed row early, a deleted one late: the gap is reported (seqs are checked first)
        ("changed", "deleted", "expected seq {late}"),
        # an undecodable row early, a changed one late: the change is reported (seals next)
        ("undecodable", "changed", "seq {late}: checksum mismatch"),
        # a row against the per-event rules early, an undecodable one late: the late one
        ("against a rule", "undecodable", "seq {late}: not valid JSON"),
        # a body stored as text late, a changed row early: the text body (every body is
        # converted before any seal is checked)
        ("changed", "text", "string argument without an encoding"),
    ],
)
def test_an_earlier_kind_of_fault_in_a_later_batch_is_the_one_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, early: str, late: str, reported: str
) -> None:
    store = SqliteStore(tmp_path)
    session_id = _long_session(store, 30)  # 330 rows, about 90 a batch below
    monkeypatch.setattr(sqlite_rows, "ROWS_BYTES", 50_000)
    rows = stored_rows(store, session_id)
    results = [seq for seq, body in rows if b"yyy" in body]  # the tool results' rows
    between = sum(len(body) for _, body in rows[results[3] : results[-3]])
    assert between > 2 * sqlite_rows.ROWS_BYTES  # the two faults are batches apart
    for kind, seq in ((late, results[-3]), (early, results[3])):  # the later first: a deletion
        if kind == "changed":
            rows[seq] = (seq, rows[seq][1].replace(b"yyy", b"yzy", 1))
        elif kind == "deleted":
            del rows[seq]
        elif kind == "undecodable":
            rows[seq] = (seq, seal(b"{not json}"))
        elif kind == "text":
            rows[seq] = (seq, rows[seq][1].decode())
        else:
            rows[seq] = (seq, damaged(rows[seq][1], 1, seq))
    store_rows(store, session_id, rows)
    with pytest.raises((LogCorruptError, TypeError), match=reported.format(late=results[-3])):
        store.open(session_id)


def test_opening_holds_a_batch_of_rows_at_a_time_not_every_row(tmp_path: Path) -> None:
    """What the open allocates beyond the events it keeps: about a batch of rows (their bodies,
    joined and unsealed), not the whole log's bodies and copies of them (about 4x the log when
    every row was fetched at once)."""
    store = SqliteStore(tmp_path)
    session_id = _long_session(store, 400)  # 4,400 rows, 2.9 MB of bodies
    size = sum(len(body) for _, body in stored_rows(store, session_id))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        log = store.open(session_id)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(log.events) == 4_400
    assert after - before > size // 2  # the events kept: about the log's text
    assert peak - after < size // 2, (peak - after, size)
