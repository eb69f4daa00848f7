"""The SQLite store's schema: built by named migrations, each recorded in ``schema_migrations``
when applied (``migrate``, in one transaction each, by the first connection that finds it
missing); a database that records a migration this version does not know (a newer dsh's) is
refused (``check_known``).

* ``001_sessions_and_events``: a row per session (its header) and per event (its sealed line,
  keyed by session and seq);
* ``002_settings_index``: a partial index of the ``session/settings`` rows, so a session's
  latest recorded settings are one index lookup (``LATEST_SETTINGS``,
  ``SqliteStore.latest_settings``) however many events follow them. SQLite keeps it as rows are
  written and deleted (a repair's cut included); it is made once over the rows already stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from dsh.errors import StoreError
from dsh.events import SessionSettingsEvent
from dsh.events.types import event_type_name
from dsh.store.base import now_millis


def _m001_sessions_and_events(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, header BLOB NOT NULL, "
        "created_at INTEGER NOT NULL)"
    )
    db.execute(
        "CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id), "
        "seq INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
    )


SETTINGS_START = b'{"type":"' + event_type_name(SessionSettingsEvent).encode() + b'",'
"""How a ``session/settings`` row's body begins (the type is the first key of every event)."""
_IS_SETTINGS = f"substr(body, 1, {len(SETTINGS_START)}) = X'{SETTINGS_START.hex()}'"
SETTINGS_INDEX = "events_settings"
LATEST_SETTINGS = (
    f"SELECT seq, body FROM events INDEXED BY {SETTINGS_INDEX} WHERE session_id = ? AND "
    f"{_IS_SETTINGS} ORDER BY seq DESC LIMIT 1"
)
"""A session's latest settings row. The index is named: without statistics SQLite's planner
prefers walking the primary key back from the session's last row, which costs the rows after
it."""
_LATEST_SETTINGS_UNINDEXED = LATEST_SETTINGS.replace(f" INDEXED BY {SETTINGS_INDEX}", "")


def latest_settings_query(db: sqlite3.Connection) -> str:
    """``LATEST_SETTINGS``, or the same without the index on a database an older dsh wrote
    that this connection could not migrate (a read-only one)."""
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (SETTINGS_INDEX,)
    ).fetchone()
    return LATEST_SETTINGS if found is not None else _LATEST_SETTINGS_UNINDEXED


def _m002_settings_index(db: sqlite3.Connection) -> None:
    """A partial index of the ``session/settings`` rows alone, which SQLite keeps as rows are
    written and cut: a session's latest one is one index lookup (``latest_settings``)."""
    db.execute(f"CREATE INDEX {SETTINGS_INDEX} ON events (session_id, seq) WHERE {_IS_SETTINGS}")


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_sessions_and_events", _m001_sessions_and_events),
    ("002_settings_index", _m002_settings_index),
]
INDEX_ONLY = frozenset({"002_settings_index"})
"""Migrations that only add an index: a reader that cannot migrate (``connect_reader``) reads a
database without them as well, only slower."""


def check_known(applied: set[str]) -> None:
    unknown = sorted(applied - {name for name, _ in MIGRATIONS})
    if unknown:  # a newer dsh changed the schema: reading or writing it here could go wrong
        raise StoreError(
            f"it was migrated by a newer dsh (schema migration "
            f"{', '.join(unknown)} is unknown to this version); use that dsh with it"
        )


def migrate(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
        "applied_at INTEGER NOT NULL)"
    )
    applied = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
    check_known(applied)
    for name, migration in MIGRATIONS:
        if name in applied:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                db.execute("ROLLBACK")  # another process applied it meanwhile
                continue
            migration(db)
            db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, now_millis()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
