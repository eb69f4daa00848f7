"""The anchor index kept on disk between processes (``dsh.compaction.anchor_file``).

A resumed session's first recallable pass reads the stored index and scans only the events it
does not cover. The file is derived data: whatever state it is in (missing, torn, damaged,
another format, another session's, stale after the log changed), the index a pass ranks with
equals one built from the whole log, so the checkpoints are the same bytes; and failing to
write it never fails a pass or touches the log.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.compaction import anchor_file as anchor_file_module
from dsh.compaction.anchor_file import AnchorFile, read_records
from dsh.compaction.anchors import AnchorIndex
from dsh.compaction.recallable import spans as spans_module
from dsh.compaction.recallable.spans import SessionAnchors
from dsh.events import encode_event
from dsh.store import JsonlStore, SqliteStore, anchor_cache_path
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recallable import SETTINGS
from tests.helpers import append_chat_turn, append_tool_turn, fixed_clock, new_session

LITERALS = (
    "ZEBRA-7731",
    "src/app.py",
    "conf/x.toml",
    "retries = 5",
    '"ValueError: bad port"',
    "deadbeef42",
    "value_3_1",
    "PORT=8080",
)


def _where(directory: Path) -> Callable[[str], Path]:
    return lambda session_id: directory / f"{session_id}.anchors"


def _fresh(session: Session, upto: int | None = None) -> AnchorIndex:
    """The index built from the log alone, as without the file."""
    return SessionAnchors().update(session, upto)


def _assert_same(index: AnchorIndex, session: Session, upto: int | None = None) -> None:
    fresh = _fresh(session, upto)
    assert dict(index.counts) == dict(fresh.counts)
    assert index.texts == fresh.texts


def _chatty_session(store, turns: int, start: int = 0) -> Session:
    session = new_session(store)
    _chat(session, turns, start)
    return session


def _chat(session: Session, turns: int, start: int = 0) -> None:
    for n in range(start, start + turns):
        picked = " ".join(LITERALS[k % len(LITERALS)] for k in range(n % 3, n % 3 + 1 + n % 4))
        append_chat_turn(session, f"check ZEBRA-{n} and {picked}", f"src/mod_{n % 5}.py is fine")


def _count_renders(monkeypatch) -> list[int]:
    """Count the messages the anchor index renders (each is scanned once, when rendered)."""
    rendered = [0]
    real = spans_module.render_message

    def counting(message):
        rendered[0] += 1
        return real(message)

    monkeypatch.setattr(spans_module, "render_message", counting)
    return rendered


# ---- reading the stored index ---------------------------------------------------------------


def test_a_reopened_session_reads_the_stored_index_and_scans_only_the_new_events(
    tmp_path, monkeypatch
):
    store = JsonlStore(tmp_path / "home")
    session = _chatty_session(store, 30)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(session)
    assert where(session.id).exists()
    _chat(session, 3, start=30)  # three more turns: six messages
    session_id = session.id
    session.close()

    reopened = Session(store.open(session_id, writable=True), clock=fixed_clock)
    rendered = _count_renders(monkeypatch)
    index = SessionAnchors(where).update(reopened)
    assert rendered[0] == 6
    monkeypatch.undo()
    _assert_same(index, reopened)


def test_each_update_appends_one_record_of_what_it_added(tmp_path):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 10)
    where = _where(tmp_path / "anchors")
    anchors = SessionAnchors(where)
    anchors.update(session)
    for turns in (2, 3):
        _chat(session, turns, start=100 + turns)
        anchors.update(session)
    path = where(session.id)
    records = read_records(path.read_bytes(), anchor_file_module.first_line(session))
    assert [(r.header.start, r.header.end) for r in records] == [
        (0, records[0].header.end),
        (records[0].header.end, records[1].header.end),
        (records[1].header.end, len(session.events)),
    ]
    assert [r.header.texts for r in records[1:]] == [4, 6]
    assert records[-1].stop == path.stat().st_size


def test_the_sqlite_store_reopens_with_the_stored_index_too(tmp_path, monkeypatch):
    store = SqliteStore(tmp_path / "home")
    session = _chatty_session(store, 12)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(session)
    session_id = session.id
    session.close()
    reopened = Session(store.open(session_id, writable=True), clock=fixed_clock)
    rendered = _count_renders(monkeypatch)
    index = SessionAnchors(where).update(reopened)
    assert rendered[0] == 0
    monkeypatch.undo()
    _assert_same(index, reopened)


def test_an_index_asked_for_fewer_events_than_the_file_covers_uses_an_earlier_record(tmp_path):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 10)
    where = _where(tmp_path / "anchors")
    anchors = SessionAnchors(where)
    first = len(session.events)
    anchors.update(session)
    _chat(session, 4, start=50)
    anchors.update(session)
    file = AnchorFile(where(session.id), session)
    loaded = file.load(session, first + 3)  # a plan logged before the second record's events
    assert loaded is not None and loaded[1] == first
    _assert_same(loaded[0], session, first)
    assert file.end is None  # not the whole file: the next save writes it whole


# ---- the property: loaded and caught up equals a fresh build ----------------------------------

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("update"), st.integers(0, 3)),
        st.tuples(st.just("reopen"), st.just(0)),
        st.tuples(
            st.just("damage"),
            st.sampled_from(["truncate", "flip", "garbage", "delete", "tail"]),
            st.floats(0, 1),
        ),
    ),
    min_size=1,
    max_size=14,
)


def _damage(path: Path, how: str, where: float) -> None:
    if not path.exists():
        return
    data = bytearray(path.read_bytes())
    at = min(len(data) - 1, int(where * len(data)))
    if how == "delete":
        path.unlink()
        return
    if how == "truncate":
        data = data[:at]
    elif how == "flip" and data:
        data[at] ^= 0x5A
    elif how == "garbage":
        data += b"\x07\x00\x00\x00garbage"
    elif how == "tail":  # a torn append: the last few bytes of the last record missing
        data = data[: max(0, len(data) - 1 - int(where * 7))]
    path.write_bytes(bytes(data))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS, backend=st.sampled_from(["jsonl", "sqlite"]))
def test_a_stored_index_loaded_and_caught_up_equals_a_fresh_build(ops, backend):
    with tempfile.TemporaryDirectory() as root:
        home = Path(root)
        store = JsonlStore(home) if backend == "jsonl" else SqliteStore(home)
        session = _chatty_session(store, 3)
        where = _where(home / "anchors")
        anchors = SessionAnchors(where)
        turns = itertools.count(10)
        try:
            for op in ops:
                if op[0] == "append":
                    _chat(session, op[1], start=next(turns) * 10)
                elif op[0] == "update":
                    upto = max(0, len(session.events) - op[1])
                    _assert_same(anchors.update(session, upto), session, upto)
                elif op[0] == "reopen":
                    session.close()
                    session = Session(store.open(session.id, writable=True), clock=fixed_clock)
                    anchors = SessionAnchors(where)
                else:
                    _damage(where(session.id), op[1], op[2])
            _assert_same(SessionAnchors(where).update(session), session)
        finally:
            session.close()


# ---- a file that cannot be used is ignored ------------------------------------------------


def _older_format(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.replace(b"dsh-anchors 1 ", b"dsh-anchors 0 ", 1))


def _other_code(path: Path) -> None:
    data = path.read_bytes()
    line, rest = data.split(b"\n", 1)
    parts = line.split(b" ")
    parts[2] = b"0" * len(parts[2])  # another extractor or renderer counted these
    path.write_bytes(b" ".join(parts) + b"\n" + rest)


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), id="cut"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(lambda p: p.write_bytes(os.urandom(4096)), id="noise"),
        pytest.param(_older_format, id="older-format"),
        pytest.param(_other_code, id="other-code"),
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes()[:200] + b"\xff" + p.read_bytes()[201:]),
            id="damaged",
        ),
    ],
)
def test_a_spoiled_file_is_ignored_and_written_again(tmp_path, monkeypatch, spoil):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 20)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(session)
    spoil(where(session.id))
    index = SessionAnchors(where).update(session)
    _assert_same(index, session)
    rendered = _count_renders(monkeypatch)  # written whole again: the next process reads it
    SessionAnchors(where).update(session)
    assert rendered[0] == 0


def test_another_sessions_file_under_this_name_is_ignored(tmp_path, monkeypatch):
    store = JsonlStore(tmp_path / "home")
    mine, other = _chatty_session(store, 10), _chatty_session(store, 25)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(other)
    shutil.copyfile(where(other.id), where(mine.id))
    rendered = _count_renders(monkeypatch)
    index = SessionAnchors(where).update(mine)
    assert rendered[0] == 20  # all of its own messages, none of the other's counts
    monkeypatch.undo()
    _assert_same(index, mine)


def test_a_log_cut_back_and_grown_again_is_not_read_with_the_stale_index(tmp_path):
    store = JsonlStore(tmp_path / "home")
    session = _chatty_session(store, 12)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(session)
    covered = len(session.events)
    session_id = session.id
    session.close()
    log = store.log_path(session_id)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) - 12]))  # the last two turns cut (a repair)
    regrown = Session(store.open(session_id, writable=True), clock=fixed_clock)
    for _ in range(3):  # other turns where the cut ones were, past the stored index's end
        append_tool_turn(regrown, "look at conf/x.toml", final="ZEBRA-9 again")
    assert len(regrown.events) > covered
    _assert_same(SessionAnchors(where).update(regrown), regrown)


def test_anchor_texts_with_a_lone_surrogate_round_trip(tmp_path):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 2)
    index = AnchorIndex()
    index.add('say "bad \ud800 value" about src/app.py')
    path = tmp_path / "x.anchors"
    AnchorFile(path, session).save(session, index, len(session.events), None)
    loaded = AnchorFile(path, session).load(session, len(session.events))
    assert loaded is not None
    assert dict(loaded[0].counts) == dict(index.counts) and "bad \ud800 value" in index.counts


# ---- writing ------------------------------------------------------------------------------


def test_a_crash_while_writing_the_file_whole_leaves_the_old_one(tmp_path, monkeypatch):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 10)
    where = _where(tmp_path / "anchors")
    SessionAnchors(where).update(session)
    path = where(session.id)
    path.write_bytes(path.read_bytes() + b"\x01\x02")  # a torn record: written whole next time
    before = path.read_bytes()
    _chat(session, 2, start=40)

    def crash(*args, **kwargs):
        raise OSError("killed before the rename")

    monkeypatch.setattr(anchor_file_module.os, "replace", crash)
    _assert_same(SessionAnchors(where).update(session), session)
    assert path.read_bytes() == before
    assert not path.with_name(path.name + ".tmp").exists()
    monkeypatch.undo()
    _assert_same(SessionAnchors(where).update(session), session)


def test_a_file_changed_under_this_process_is_written_whole_not_appended_to(tmp_path):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 10)
    where = _where(tmp_path / "anchors")
    anchors = SessionAnchors(where)
    anchors.update(session)
    path = where(session.id)
    path.write_bytes(path.read_bytes() + b"another writer")
    _chat(session, 2, start=40)
    anchors.update(session)
    records = read_records(path.read_bytes(), anchor_file_module.first_line(session))
    assert [(r.header.start, r.header.end) for r in records] == [(0, len(session.events))]


def test_records_holding_twice_the_index_are_written_as_one(tmp_path, monkeypatch):
    monkeypatch.setattr(anchor_file_module, "COMPACT_SLACK", 0)
    session = _chatty_session(JsonlStore(tmp_path / "home"), 4)
    where = _where(tmp_path / "anchors")
    anchors = SessionAnchors(where)
    anchors.update(session)
    path = where(session.id)
    for n in range(12):  # the same literals again and again: the records repeat them
        append_chat_turn(session, f"check {LITERALS[0]} and {LITERALS[1]}", "ok")
        anchors.update(session)
        records = read_records(path.read_bytes(), anchor_file_module.first_line(session))
        entries = sum(r.header.entries for r in records)
        assert entries <= 2 * len(anchors.index.counts), n
    assert len(records) < 12
    _assert_same(SessionAnchors(where).update(session), session)


def _engine(session: Session, where: Callable[[str], Path] | None) -> CompactionEngine:
    ids = itertools.count(1)
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS, anchor_file=where)
    return CompactionEngine(session, backend, SETTINGS, new_id=lambda: f"p{next(ids)}")


def _varied(session: Session, turns: range) -> None:
    for i in turns:
        common = f"src/common_{i % 3}.py"
        append_tool_turn(
            session,
            f"step {i}: check ZEBRA-{7700 + i % 7} in {common}",
            calls=[("read_file", f'{{"path":"{common}"}}', f"line {i} of {common}\n" * 40)],
            final=f"mod_{i} uses port {8000 + i % 4} and {LITERALS[i % len(LITERALS)]}",
        )


def test_a_pass_with_the_stored_index_writes_the_same_bytes_as_one_built_from_the_log(tmp_path):
    stored_home, fresh_home = tmp_path / "stored", tmp_path / "fresh"
    store = JsonlStore(stored_home)
    session = new_session(store)
    _varied(session, range(24))
    where = lambda sid: anchor_cache_path(stored_home, sid)  # noqa: E731
    assert run(_engine(session, where).compact_now(window=100_000)) is not None
    _varied(session, range(24, 40))
    session_id = session.id
    session.close()
    copy = JsonlStore(fresh_home).log_path(session_id)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(store.log_path(session_id), copy)

    outcomes = []
    for home, files in ((stored_home, where), (fresh_home, None)):
        resumed = Session(JsonlStore(home).open(session_id, writable=True), clock=fixed_clock)
        before = len(resumed.events)
        assert run(_engine(resumed, files).compact_now(window=100_000)) is not None
        outcomes.append([encode_event(e) for e in resumed.events[before:]])
        resumed.close()
    stored, fresh = outcomes
    assert stored == fresh and any(b"Keywords" in line for line in stored)
    assert anchor_cache_path(stored_home, session_id).exists()
    assert not anchor_cache_path(fresh_home, session_id).exists()


def test_a_home_that_cannot_take_the_file_compacts_without_it(tmp_path):
    session = _chatty_session(JsonlStore(tmp_path / "home"), 1)
    _varied(session, range(20))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    where = lambda sid: blocked / "anchors" / f"{sid}.anchors"  # noqa: E731
    before = len(session.events)
    result = run(_engine(session, where).compact_now(window=100_000))
    assert result is not None and len(session.events) > before
    assert blocked.read_text() == "a file where the cache directory would be"
