"""Listing unreadable sessions, and salvaging the valid prefix of a corrupt log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import LogCorruptError, SessionLockedError
from dsh.store import (
    JsonlStore,
    SqliteStore,
    anchor_cache_path,
    resolve_session_id,
    span_cache_path,
)
from dsh.store.derived import settings_record_path, word_cache_path
from dsh.store.integrity import unseal
from dsh.store.salvage import plan_salvage, salvage_session
from dsh.surface import Session
from dsh.surface.projection import first_refused
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def closed_session(store: JsonlStore | SqliteStore) -> str:
    with new_session(store) as session:
        append_chat_turn(session)
        append_tool_turn(session)
        append_chat_turn(session)
    return session.id


def test_a_jsonl_session_with_a_bad_header_is_listed_as_unreadable_not_dropped(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    good, bad = closed_session(store), closed_session(store)
    path = store.log_path(bad)
    header, rest = path.read_bytes().split(b"\n", 1)
    unsealed = unseal(header)[0]  # a header that is bad as JSON, not only by its checksum
    path.write_bytes(b'{"type":"session","version":1,"id":' + unsealed[40:] + b"\n" + rest)
    assert [h.id for h in store.list()] == [good]
    (unreadable,) = store.unreadable()
    assert unreadable.id == bad and unreadable.line == 1
    assert "not a valid session header" in unreadable.reason
    assert resolve_session_id(store, bad[:-2]) == bad  # show/export reach it and say why
    assert store.header_of(bad) == unreadable  # what the listing says of it, read alone
    with pytest.raises(LogCorruptError, match="line 1"):
        store.open(bad)


def test_a_sqlite_session_with_a_bad_header_is_listed_as_unreadable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    good, bad = closed_session(store), closed_session(store)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE sessions SET header = ? WHERE id = ?", (b"{not json", bad))
    assert [h.id for h in store.list()] == [good]  # it used to fail the whole listing
    assert [u.id for u in store.unreadable()] == [bad]
    assert store.header_of(bad) == store.unreadable()[0]  # read alone, said alike


def test_salvage_keeps_the_valid_prefix_copies_the_original_and_is_never_silent(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    sid = closed_session(store)
    path = store.log_path(sid)
    lines = path.read_bytes().split(b"\n")[:-1]
    broken = [*lines[:6], lines[6][:-5], *lines[7:]]
    data = b"\n".join(broken) + b"\n"
    path.write_bytes(data)
    spans = span_cache_path(tmp_path, sid)  # derived from the log: stale once the log is cut
    words = word_cache_path(tmp_path, sid)
    anchors = anchor_cache_path(tmp_path, sid)
    settings = settings_record_path(tmp_path, sid)  # the session's close wrote it
    assert settings.is_file()
    for derived in (spans, words, anchors):
        derived.parent.mkdir(parents=True, exist_ok=True)
        derived.write_bytes(b"stale")
    report = salvage_session(store, sid)
    assert not spans.exists() and f"dropped {spans} (rebuilt on use)" in report.lines()
    assert not words.exists() and f"dropped {words} (rebuilt on use)" in report.lines()
    assert not anchors.exists() and f"dropped {anchors} (rebuilt on use)" in report.lines()
    assert not settings.exists() and f"dropped {settings} (rebuilt on use)" in report.lines()
    assert report.changed and report.copy is not None and report.copy.read_bytes() == data
    assert path.read_bytes() == b"\n".join(lines[:6]) + b"\n"
    assert (report.kept_lines, report.first_bad_line, report.total_lines) == (6, 7, len(lines))
    assert report.dropped_bytes == len(data) - len(path.read_bytes())
    text = "\n".join(report.lines())
    assert f"dropped lines 7-{len(lines)}" in text and "first bad line 7" in text
    assert len(Session.open(store, sid).events) == 5
    assert not salvage_session(store, sid).changed  # a second run finds nothing to do


def test_salvage_waits_for_no_writer(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    sid = closed_session(store)
    with Session.open(store, sid, writable=True), pytest.raises(SessionLockedError):
        salvage_session(store, sid)


def test_salvage_refuses_a_log_without_a_readable_header(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    sid = closed_session(store)
    path = store.log_path(sid)
    before = path.read_bytes()
    path.write_bytes(b"garbage\n" + before)
    with pytest.raises(LogCorruptError, match="line 1"):
        salvage_session(store, sid)
    assert path.read_bytes() == b"garbage\n" + before  # untouched


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_salvaged_prefix_always_loads(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    store = JsonlStore(tmp_path_factory.mktemp("home"))
    sid = closed_session(store)
    path = store.log_path(sid)
    pristine = path.read_bytes()
    at = int(data.draw(st.floats(0, 1, exclude_max=True), label="where") * len(pristine))
    size = data.draw(st.integers(1, 64), label="size")
    junk = data.draw(st.binary(min_size=size, max_size=size), label="junk")
    mutant = pristine[:at] + junk + pristine[at + size :]
    try:
        report = plan_salvage(mutant, session_id=sid, path=path, validate=first_refused)
    except LogCorruptError:
        return  # the header itself was hit: nothing to keep, and nothing written
    kept = b"".join(line + b"\n" for line in mutant.split(b"\n")[: report.kept_lines])
    path.write_bytes(kept)
    loaded = Session.open(store, sid)
    assert loaded.header.id == sid
    assert len(loaded.events) == report.kept_lines - 1
