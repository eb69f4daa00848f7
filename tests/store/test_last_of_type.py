"""``JsonlStore.last_of_type``: the last event of one type, found by a raw search of the log
read backwards from its end (what ``dsh run --session`` and ``dsh --resume`` use to read a
session's recorded settings before they open it) — always the event a full load finds, however
the chunks it reads cut the lines."""

from __future__ import annotations

import os
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsh.store.jsonl as jsonl
from dsh.agent import session_settings
from dsh.config import Settings
from dsh.errors import LogCorruptError
from dsh.events import SessionSettingsEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn

MARKER = '\n{"type":"session/settings","seq":0,"time":0,"data":{}}\n'
steps = st.lists(
    st.one_of(
        st.tuples(st.just("settings"), st.integers(min_value=1, max_value=10**6)),
        st.tuples(st.just("chat"), st.text(max_size=40).map(lambda t: t + MARKER)),
    ),
    max_size=8,
)
CHUNKS = [1, 7, 64, 300, jsonl.READ_CHUNK]
"""Bytes read at a time: smaller than the search's prefix, than a line, than the log."""


@settings(max_examples=60, deadline=None)
@given(plan=steps, chunk=st.sampled_from(CHUNKS))
def test_the_raw_search_finds_what_a_full_load_finds(tmp_path_factory, plan, chunk):
    store = JsonlStore(tmp_path_factory.mktemp("home"))
    with Session.create(store, cwd="/w") as session:
        for kind, value in plan:
            if kind == "settings":
                snapshot = session_settings.snapshot(Settings(), "deepseek", "m", value, "/w")
                session_settings.record(session, snapshot)
            else:
                append_chat_turn(session, value, "ok")  # a prompt quoting the line start
        session_id = session.id
    with Session.open(store, session_id) as loaded:
        expected = loaded.of_type(SessionSettingsEvent)
    with mock.patch.object(jsonl, "READ_CHUNK", chunk):
        found = store.last_of_type(session_id, "session/settings")
        recorded = session_settings.read(store, session_id)
    assert found == (expected[-1] if expected else None)
    assert recorded == (expected[-1].data if expected else None)


def _one_recorded(tmp_path) -> tuple[JsonlStore, str]:
    store = JsonlStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        session_settings.record(
            session, session_settings.snapshot(Settings(), "deepseek", "m", 4000, "/w")
        )
        return store, session.id


@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_damaged_settings_line_is_refused_and_the_full_load_says_where(
    tmp_path, monkeypatch, chunk
):
    monkeypatch.setattr(jsonl, "READ_CHUNK", chunk)
    store, session_id = _one_recorded(tmp_path)
    path = store.log_path(session_id)
    path.write_bytes(path.read_bytes().replace(b'"contextWindow":4000', b'"contextWindow":4001'))
    with pytest.raises(LogCorruptError, match="line 2"):
        store.last_of_type(session_id, "session/settings")
    with pytest.raises(LogCorruptError, match="line 2"):  # read() falls back to the full load
        session_settings.read(store, session_id)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_torn_settings_line_is_not_taken_for_a_record(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonl, "READ_CHUNK", chunk)
    store, session_id = _one_recorded(tmp_path)
    path = store.log_path(session_id)
    path.write_bytes(path.read_bytes()[:-5])  # a crash mid-write: no newline at the end
    with pytest.raises(LogCorruptError, match="line 2 is torn"):
        store.last_of_type(session_id, "session/settings")
    assert session_settings.read(store, session_id) is None  # the load drops the torn line


def test_a_line_near_the_end_is_found_without_reading_the_start_of_the_log(tmp_path, monkeypatch):
    store = JsonlStore(tmp_path / "home")
    with Session.create(store, cwd="/w") as session:
        for i in range(40):
            append_chat_turn(session, f"question {i} " + "x" * 200, "ok")
        session_settings.record(
            session, session_settings.snapshot(Settings(), "deepseek", "m", 4000, "/w")
        )
        append_chat_turn(session, "one more", "ok")
        session_id = session.id
    monkeypatch.setattr(jsonl, "READ_CHUNK", 4096)
    offsets: list[int] = []
    real_pread = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        offsets.append(offset)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    found = store.last_of_type(session_id, "session/settings")
    assert isinstance(found, SessionSettingsEvent) and found.data.context_window == 4000
    log_size = store.log_path(session_id).stat().st_size
    assert log_size > 10 * 4096
    assert min(offsets) >= log_size - 2 * 4096  # only the last chunks were read
