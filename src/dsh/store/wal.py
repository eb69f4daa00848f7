"""The SQLite writer's WAL upkeep, kept off the append path: the group fsync and checkpoints.

With ``synchronous=NORMAL`` a commit is in the WAL file (handed to the OS: a process crash loses
nothing) but not synced. The group-commit thread fsyncs the WAL when a durable event or ``sync``
asks (``fsync_wal``). A checkpoint copies the WAL into the database file so the WAL can start
over; SQLite's automatic one runs inside the commit that crosses its threshold and waits for two
fsyncs there (the WAL's, then the database file's), which made every few hundredth append slow.
So the writer's connection keeps that automatic checkpoint only as a backstop
(``WRITER_BACKSTOP_PAGES``), and ``WalUpkeep`` runs a ``PASSIVE`` checkpoint (it never blocks
the writer or readers) on the group-commit thread, right after an fsync, once about
``CHECKPOINT_PAGES`` pages were committed since the last one. The backstop still bounds the WAL
when appends come so fast that a background checkpoint never catches up with them.

Nothing here changes what is durable when: a checkpoint syncs the WAL before it copies and the
database file after, so a frame is on stable storage before and after it moves.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

log = logging.getLogger("dsh.store")

CHECKPOINT_PAGES = 1000
"""Pages committed (estimated) before the group-commit thread checkpoints (SQLite's default
automatic checkpoint is at 1000 pages)."""
WRITER_BACKSTOP_PAGES = 10_000
"""The writer connection's own automatic checkpoint: WAL frames (pages) before a commit
checkpoints inline (about 40 MB with 4 KiB pages)."""


def fsync_wal(wal: Path) -> None:
    """fsync the WAL: with ``synchronous=NORMAL`` a commit is in the WAL but not yet synced;
    the checkpoint that moves it into the database file syncs on its own."""
    try:
        fd = os.open(wal, os.O_RDONLY)
    except FileNotFoundError:  # no WAL: everything is checkpointed into the synced database
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def estimated_pages(batch_bytes: int, page_size: int) -> int:
    """WAL frames a committed batch writes, about: its bytes over the page size, plus the
    b-tree page the rows go into."""
    return 1 + batch_bytes // page_size


def _checkpoint_connection(db_path: Path) -> sqlite3.Connection:
    """The group-commit thread's own connection: a checkpoint from it never waits for the
    writer's, and it syncs as the writer's does (WAL before copying, database file after)."""
    db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class WalUpkeep:
    """Counts what the writer commits; checkpoints from the group-commit thread when due.

    ``committed`` runs on the writing thread, ``checkpoint_if_due`` on the group-commit thread
    (its own connection, opened on first use); ``close`` after that thread has stopped.
    """

    def __init__(self, db_path: Path, *, page_size: int) -> None:
        self._db_path = db_path
        self._page_size = page_size
        self._pages_committed = 0  # written by the writing thread only
        self._pages_at_checkpoint = 0  # written by the group-commit thread only
        self._db: sqlite3.Connection | None = None
        self._warned = False
        self.checkpoints = 0
        """Background checkpoints run (for tests and benchmarks)."""

    def committed(self, batch_bytes: int) -> None:
        """Count a committed batch of ``batch_bytes`` bytes of rows."""
        self._pages_committed += estimated_pages(batch_bytes, self._page_size)

    def checkpoint_if_due(self) -> None:
        """A ``PASSIVE`` checkpoint once ``CHECKPOINT_PAGES`` were committed since the last one.
        A failure is logged once and retried when due again (the writer's backstop remains)."""
        pages = self._pages_committed
        if pages - self._pages_at_checkpoint < CHECKPOINT_PAGES:
            return
        self._pages_at_checkpoint = pages
        try:
            if self._db is None:
                self._db = _checkpoint_connection(self._db_path)
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.checkpoints += 1
        except sqlite3.Error as exc:
            if not self._warned:
                self._warned = True
                log.warning("background checkpoint of %s failed: %s", self._db_path, exc)

    def close(self) -> None:
        """Close the checkpoint connection (call once the group-commit thread has stopped)."""
        if self._db is not None:
            self._db.close()
            self._db = None
