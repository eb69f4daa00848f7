"""Moving sessions between the JSONL and SQLite stores keeps headers and event bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import StoreError
from dsh.events import encode_event
from dsh.store import JsonlStore, SqliteStore
from dsh.store.base import encode_header
from dsh.store.migrate import migrate_sessions
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def snapshot(store: JsonlStore | SqliteStore) -> dict[str, list[bytes]]:
    out = {}
    for header in store.list():
        with store.open(header.id) as log:
            out[header.id] = [encode_header(log.header)] + [encode_event(e) for e in log.events]
    return out


def test_a_forked_session_keeps_its_parent_and_seed_length_both_ways(tmp_path: Path) -> None:
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    with new_session(jsonl) as parent:
        append_chat_turn(parent)
        append_tool_turn(parent)
    with jsonl.open(parent.id) as log:
        seed = list(log.events)[:4]
    fork = jsonl.create(cwd="/elsewhere", parent_session=parent.id, seed=seed)
    fork.close()
    before = snapshot(jsonl)
    assert len(before) == 2
    report = migrate_sessions(jsonl, sqlite)
    assert sorted(report.moved) == sorted(before) and not report.failed
    assert jsonl.list() == [] and snapshot(sqlite) == before
    assert sqlite.open(fork.id).header.seed_length == 4
    assert sorted(migrate_sessions(sqlite, jsonl).moved) == sorted(before)
    assert sqlite.list() == [] and snapshot(jsonl) == before


def test_another_session_of_the_same_id_in_the_target_is_refused_and_left_in_both(
    tmp_path: Path,
) -> None:
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    with new_session(jsonl) as session:
        append_chat_turn(session)
    migrate_sessions(jsonl, sqlite)
    with new_session(sqlite) as other:
        append_chat_turn(other)
    migrate_sessions(sqlite, jsonl)  # both back in jsonl
    sqlite.create(cwd="/x", session_id=session.id).close()  # same id, different content
    report = migrate_sessions(jsonl, sqlite)
    assert report.moved == [other.id] and [sid for sid, _ in report.failed] == [session.id]
    assert "it is in both stores with different headers" in report.failed[0][1]
    assert [h.id for h in jsonl.list()] == [session.id]
    assert session.id in [h.id for h in sqlite.list()]


def test_a_repaired_session_moves_back_to_jsonl_beside_its_repair_copy(tmp_path: Path) -> None:
    """A move to SQLite keeps the JSONL directory's other files (a repair copy, a torn tail),
    and so the directory: the move back reuses it instead of failing with "File exists"."""
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    with new_session(jsonl) as session:
        append_chat_turn(session)
    aside = jsonl.session_dir(session.id) / "session.jsonl.before-repair-20260101-000000"
    aside.write_bytes(b"the bytes a repair copied aside\n")
    before = snapshot(jsonl)
    assert migrate_sessions(jsonl, sqlite).moved == [session.id]
    assert aside.exists()

    report = migrate_sessions(sqlite, jsonl)

    assert report.moved == [session.id] and not report.failed
    assert snapshot(jsonl) == before and sqlite.list() == []
    assert aside.read_bytes() == b"the bytes a repair copied aside\n"


def test_creating_a_session_over_an_existing_log_is_refused(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        append_chat_turn(session)
    before = snapshot(store)
    with pytest.raises(StoreError, match="exists"):
        store.create(cwd="/x", session_id=session.id)
    assert snapshot(store) == before
