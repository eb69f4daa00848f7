"""A SQLite store whose directory cannot be written (a read-only mount, another user's home)
reads as the JSONL store does there: listed, shown and tailed; only writers are refused.

SQLite refuses to open a WAL database when it cannot create the ``-shm`` file beside it, so every
read failed with ``unable to open database file`` (``dsh sessions list`` included) where the JSONL
store read everything. The reader runs in its own process: as root on a read-only bind mount in a
private mount namespace (root writes anywhere else), otherwise in a directory made read-only."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.store import SqliteStore
from tests.helpers import append_chat_turn, new_session

_READER = """
import json, sys
from pathlib import Path
from dsh.errors import DshError
from dsh.store import SqliteStore
from dsh.store.appended import AppendedReader
from dsh.transcript.listing import session_summaries

store = SqliteStore(Path(sys.argv[1]))
out = {}
try:
    (header,) = store.list()
    out["titles"] = [s.title for s in session_summaries(store)]
    with store.open(header.id) as log:
        out["events"] = len(log.events)
    with AppendedReader(store) as reader:
        out["tailed"] = len(reader.load(header.id)[0].events)
    try:
        store.open(header.id, writable=True)
    except DshError as exc:
        out["writer"] = str(exc)
except DshError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


def _read_where_nothing_can_be_written(home: Path, reader: str = _READER) -> dict[str, object]:
    code = [sys.executable, "-c", reader, str(home)]
    if os.geteuid() == 0:
        if shutil.which("unshare") is None or shutil.which("mount") is None:
            pytest.skip("root without unshare(1)/mount(8): no read-only directory to be had")
        script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
        command = ["unshare", "--mount", "sh", "-c", script, "sh", str(home), *code]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0 and not done.stdout:
            pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()}")
    else:
        home.chmod(0o555)
        try:
            done = subprocess.run(code, capture_output=True, text=True, timeout=60)
        finally:
            home.chmod(0o755)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("writer_left_a_wal", [False, True])
def test_a_store_in_a_read_only_directory_is_listed_shown_and_tailed(
    tmp_path: Path, writer_left_a_wal: bool
) -> None:
    home = tmp_path / "home"
    store = SqliteStore(home)
    with new_session(store) as session:
        append_chat_turn(session, "read me", "ok")
    events = len(session.events)
    if writer_left_a_wal:  # a writer still open: its -wal and -shm files are there
        writer = store.open(session.id, writable=True)
        assert (home / "dsh.sqlite3-wal").exists() and (home / "dsh.sqlite3-shm").exists()
    try:
        seen = _read_where_nothing_can_be_written(home)
    finally:
        if writer_left_a_wal:
            writer.close()
    assert "error" not in seen, seen["error"]
    assert seen["titles"] == ["read me"]
    assert seen["events"] == events and seen["tailed"] == events
    assert "cannot" in str(seen["writer"])  # a writer is still refused, in one line


_SETTINGS_READER = """
import json, sys
from pathlib import Path
from dsh.errors import DshError
from dsh.store import SqliteStore

store = SqliteStore(Path(sys.argv[1]))
try:
    (header,) = store.list()
    found = store.latest_settings(header.id)
    print(json.dumps({"model": found.data.model if found else None}))
except DshError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def test_a_database_without_the_settings_index_reads_its_settings_where_it_cannot_migrate(
    tmp_path: Path,
) -> None:
    """An older dsh's database (no ``002_settings_index``) on a read-only mount: the index is
    only an index, so it is read without it rather than refused as a schema too old."""
    from dsh.agent import session_settings
    from dsh.config import Settings

    home = tmp_path / "home"
    store = SqliteStore(home)
    with new_session(store) as session:
        snapshot = session_settings.snapshot(Settings(), "deepseek", "older", None, "/w")
        session_settings.record(session, snapshot)
        append_chat_turn(session, "read me", "ok")
    db = sqlite3.connect(store.path)
    try:
        db.execute("DROP INDEX events_settings")
        db.execute("DELETE FROM schema_migrations WHERE name = '002_settings_index'")
        db.commit()
    finally:
        db.close()
    seen = _read_where_nothing_can_be_written(home, _SETTINGS_READER)
    assert seen == {"model": "older"}


def test_a_database_without_the_edit_counts_is_listed_where_it_cannot_migrate(
    tmp_path: Path,
) -> None:
    """An older dsh's database (no ``003_event_edits``) on a read-only mount is read, not
    refused as a schema too old: without the counts a listing reads each log from its start."""
    home = tmp_path / "home"
    store = SqliteStore(home)
    with new_session(store) as session:
        append_chat_turn(session, "read me", "ok")
    db = sqlite3.connect(store.path)
    try:
        for trigger in ("events_updated", "events_deleted", "events_inserted_inside"):
            db.execute(f"DROP TRIGGER {trigger}")
        db.execute("DROP TABLE event_edits")
        db.execute("DELETE FROM schema_migrations WHERE name = '003_event_edits'")
        db.commit()
    finally:
        db.close()
    seen = _read_where_nothing_can_be_written(home)
    assert "error" not in seen, seen["error"]
    assert seen["titles"] == ["read me"] and seen["tailed"] == len(session.events)
