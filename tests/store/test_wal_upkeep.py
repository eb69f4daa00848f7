"""SQLite WAL upkeep off the append path: the group-commit thread checkpoints the WAL once enough
was committed, the writer's own inline checkpoint is only a backstop, and a failed background
checkpoint is reported once and changes nothing the log holds."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

import dsh.store.wal as wal_module
from dsh.events import StepEnd, TurnStart
from dsh.store import SqliteStore
from dsh.store.sqlite import SqliteSessionLog
from dsh.store.wal import CHECKPOINT_PAGES, WRITER_BACKSTOP_PAGES, WalUpkeep, estimated_pages
from dsh.surface import Session
from tests.helpers import new_session, user_message

BIG_TEXT = "x" * 16_000  # about four pages a row


@pytest.fixture
def checkpointed(monkeypatch) -> threading.Event:
    """Set once the group-commit thread has run a due background checkpoint."""
    done = threading.Event()
    real = WalUpkeep.checkpoint_if_due

    def observed(self: WalUpkeep) -> None:
        before = self.checkpoints
        real(self)
        if self.checkpoints > before:
            done.set()

    monkeypatch.setattr(WalUpkeep, "checkpoint_if_due", observed)
    return done


def _fill_past_checkpoint_threshold(session: Session) -> int:
    """Append user messages whose estimate passes ``CHECKPOINT_PAGES``; their count."""
    count = CHECKPOINT_PAGES // estimated_pages(len(BIG_TEXT), 4096) + 1
    for _ in range(count):
        session.append(user_message(BIG_TEXT))
    return count


def test_the_writer_connection_checkpoints_inline_only_as_a_backstop(tmp_path: Path):
    session = new_session(SqliteStore(tmp_path))
    log = session._log
    assert isinstance(log, SqliteSessionLog) and log._db is not None
    assert log._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WRITER_BACKSTOP_PAGES
    session.close()


def test_the_group_commit_thread_checkpoints_once_enough_was_committed(
    tmp_path: Path, checkpointed: threading.Event
):
    store = SqliteStore(tmp_path)
    session = new_session(store)
    session.append(TurnStart(turn=1))
    count = _fill_past_checkpoint_threshold(session)
    assert not checkpointed.is_set()  # nothing durable yet: no fsync, so no upkeep either
    session.append(StepEnd(turn=1, step=1))  # durable: an fsync, then the due checkpoint
    assert checkpointed.wait(30)
    # The database file alone (no WAL beside it) now holds every row committed before.
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copyfile(store.path, copy / store.path.name)
    rows = sqlite3.connect(copy / store.path.name).execute(
        "SELECT count(*) FROM events WHERE session_id = ?", (session.id,)
    )
    assert rows.fetchone()[0] >= 1 + count
    session.close()
    assert len(Session.open(store, session.id).events) == len(session.events)


def test_no_background_checkpoint_before_the_threshold(
    tmp_path: Path, checkpointed: threading.Event
):
    session = new_session(SqliteStore(tmp_path))
    session.append(TurnStart(turn=1))
    session.append(user_message("short"))
    session.append(StepEnd(turn=1, step=1))
    session.sync()
    log = session._log
    assert isinstance(log, SqliteSessionLog)
    session.close()  # joins the group-commit thread: any upkeep it ran is over
    assert log._wal is not None and log._wal.checkpoints == 0
    assert not checkpointed.is_set()


def test_a_failed_background_checkpoint_is_reported_once_and_the_log_is_intact(
    tmp_path: Path, monkeypatch, caplog
):
    calls = threading.Event()

    def refuse(db_path: Path) -> sqlite3.Connection:
        calls.set()
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(wal_module, "_checkpoint_connection", refuse)
    caplog.set_level(logging.WARNING, logger="dsh.store")
    store = SqliteStore(tmp_path)
    session = new_session(store)
    log = session._log
    assert isinstance(log, SqliteSessionLog)
    for turn in (1, 2):
        session.append(TurnStart(turn=turn))
        _fill_past_checkpoint_threshold(session)
        session.append(StepEnd(turn=turn, step=1))
        session.sync()
    session.close()
    assert calls.is_set()
    warnings = [r for r in caplog.records if "background checkpoint" in r.getMessage()]
    assert len(warnings) == 1 and "\n" not in warnings[0].getMessage()
    monkeypatch.undo()
    assert len(Session.open(store, session.id).events) == len(session.events)


def test_the_page_estimate_counts_the_row_page_and_every_full_page_of_bytes():
    assert estimated_pages(0, 4096) == 1
    assert estimated_pages(4095, 4096) == 1
    assert estimated_pages(4096, 4096) == 2
    assert estimated_pages(3 * 4096 + 1, 4096) == 4
