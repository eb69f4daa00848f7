"""A JSONL batch (``Session.append_many``) is one ``os.write``; a crash can tear it at any byte.
Whatever the cut, the log loads as it would after a torn single line: every complete line
stays (a prefix of the batch may load, as ``benchmarks/compaction_kill.py`` allows), the bytes
after the last newline are dropped with the one torn-line warning, and a writable open moves them
aside and appends on a clean line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.events import StepStart, TurnStart
from dsh.store import JsonlStore
from dsh.surface import Draft, Session
from tests.helpers import append_chat_turn, fixed_clock, new_session, user_message

BATCH_SIZES = [1, 3]


def _batch(
    store: JsonlStore, size: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, bytes, bytes]:
    """A closed session whose last append was one batch of ``size`` events: its id, the log's
    bytes before the batch, and the batch's bytes (checked to be one ``os.write``)."""
    session = new_session(store)
    append_chat_turn(session)
    path = store.log_path(session.id)
    before = path.read_bytes()
    drafts = [Draft(TurnStart(turn=2)), Draft(StepStart(turn=2, step=1)), Draft(user_message("q"))]
    writes: list[int] = []
    real_write = os.write

    def counted(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr("dsh.store.jsonl.os.write", counted)
    session.append_many(drafts[:size])
    monkeypatch.undo()
    session.close()
    batch = path.read_bytes()[len(before) :]
    assert writes == [len(batch)] and batch.count(b"\n") == size
    return session.id, before, batch


def _cut(store: JsonlStore, session_id: str, before: bytes, batch: bytes, cut: int) -> None:
    store.log_path(session_id).write_bytes(before + batch[:cut])


@pytest.mark.parametrize("size", BATCH_SIZES)
def test_a_batch_torn_at_any_byte_loads_its_complete_lines_and_warns_once_about_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
):
    store = JsonlStore(tmp_path)
    session_id, before, batch = _batch(store, size, monkeypatch)
    full = list(store.open(session_id).events)
    kept_before = before.count(b"\n") - 1  # the header is line 1
    for cut in range(len(batch) + 1):
        _cut(store, session_id, before, batch, cut)
        log = store.open(session_id)
        complete = batch[:cut].count(b"\n")
        torn = cut - (batch.rfind(b"\n", 0, cut) + 1)
        assert list(log.events) == full[: kept_before + complete], cut
        if torn:
            assert len(log.warnings) == 1 and f"torn last line ({torn} bytes)" in log.warnings[0]
        else:
            assert log.warnings == []
        log.close()


@pytest.mark.parametrize("size", BATCH_SIZES)
def test_a_writable_open_moves_a_torn_batch_tail_aside_and_appends_on_a_clean_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
):
    store = JsonlStore(tmp_path)
    session_id, before, batch = _batch(store, size, monkeypatch)
    first_newline = batch.index(b"\n") + 1
    cuts = {1, first_newline - 1, first_newline, first_newline + 1, len(batch) - 1}
    for cut in sorted(c for c in cuts if 0 < c < len(batch)):
        _cut(store, session_id, before, batch, cut)
        aside = store.session_dir(session_id) / "session.jsonl.torn"
        aside.unlink(missing_ok=True)
        clean = before + batch[: batch.rfind(b"\n", 0, cut) + 1]
        torn = batch[len(clean) - len(before) : cut]
        resumed = Session(store.open(session_id, writable=True), clock=fixed_clock)
        if torn:
            assert aside.read_bytes() == torn + b"\n"
        else:
            assert not aside.exists()
        assert store.log_path(session_id).read_bytes().startswith(clean)
        append_chat_turn(resumed)  # after crash repair closed turn 2 if it was left open
        resumed.close()
        reloaded = store.open(session_id)
        assert reloaded.warnings == []
        assert list(reloaded.events) == list(resumed.events)
        reloaded.close()
