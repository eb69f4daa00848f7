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
* ``003_event_edits``: a count per session of its event rows changed other than by an append
  (``event_edits``, kept by triggers: a row updated or deleted, or inserted before the log's
  end, as ``INSERT OR REPLACE`` does), so a reader that read a log before can tell, by that one
  lookup, that rows it read may have changed (``dsh.store.appended``). dsh changes no row but by
  a repair's cut and a migration's removal; an append fires nothing but the insert trigger's
  one index probe. A count is never cleared, so a session removed and stored again is read
  again too.
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


EDITS_TABLE = "event_edits"


def _count_edit(session: str) -> str:
    return (
        f"INSERT INTO {EDITS_TABLE} VALUES ({session}, 1) "
        "ON CONFLICT (session_id) DO UPDATE SET edits = edits + 1;"
    )


def _m003_event_edits(db: sqlite3.Connection) -> None:
    """Count, per session, the event rows changed other than by an append (triggers)."""
    db.execute(
        f"CREATE TABLE {EDITS_TABLE} (session_id TEXT PRIMARY KEY, edits INTEGER NOT NULL) "
        "WITHOUT ROWID"
    )
    db.execute(
        "CREATE TRIGGER events_updated AFTER UPDATE ON events BEGIN "
        f"{_count_edit('old.session_id')} {_count_edit('new.session_id')} END"
    )
    db.execute(
        f"CREATE TRIGGER events_deleted AFTER DELETE ON events BEGIN "
        f"{_count_edit('old.session_id')} END"
    )
    # REPLACE deletes the row it replaces without firing a delete trigger (unless the
    # connection enables recursive triggers): an insert with rows after it is counted instead.
    db.execute(
        "CREATE TRIGGER events_inserted_inside AFTER INSERT ON events WHEN EXISTS (SELECT 1 "
        "FROM events WHERE session_id = new.session_id AND seq > new.seq) BEGIN "
        f"{_count_edit('new.session_id')} END"
    )


def edits_of(db: sqlite3.Connection, session_id: str) -> int:
    """How many times ``session_id``'s event rows were changed other than by an append (-1:
    unknown, a database without ``003_event_edits``, read by a reader that cannot migrate)."""
    try:
        row = db.execute(
            f"SELECT edits FROM {EDITS_TABLE} WHERE session_id = ?", (session_id,)
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return -1
    return 0 if row is None else int(row[0])


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_sessions_and_events", _m001_sessions_and_events),
    ("002_settings_index", _m002_settings_index),
    ("003_event_edits", _m003_event_edits),
]
INDEX_ONLY = frozenset({"002_settings_index", "003_event_edits"})
"""Migrations a reader that cannot migrate (``connect_reader``) does without: a database
lacking them reads as well, only slower (without the settings index, a lookup walks the rows;
without the edit counts, a reader reads every log again from its start)."""


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
