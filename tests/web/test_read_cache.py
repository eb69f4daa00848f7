"""``ReadCache``: a stored session another process appends to is caught up with what was
appended, never loaded again; a line still being written waits for its newline; a log replaced
or holding a line that does not load is loaded again whole, so it answers as a fresh load does
(or with its error); the events the registry hands out stay as they were read while the kept
session grows; SQLite sessions are kept too, and a store without positions is read every time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import LogCorruptError, UnknownEventTypeError
from dsh.events import encode_event
from dsh.store import MemoryStore, SqliteStore
from dsh.store.appended import AppendedReader
from dsh.surface import Session
from dsh.web.read_cache import ReadCache
from tests.helpers import append_chat_turn, new_session
from tests.web.builders import run_apart
from tests.web.conftest import make_env

APPEND_TURN = """
import sys
from pathlib import Path
from dsh.store import JsonlStore
from dsh.surface import Session
sys.path.insert(0, sys.argv[3])
from tests.helpers import append_chat_turn
with Session.open(JsonlStore(Path(sys.argv[1])), sys.argv[2], writable=True) as session:
    append_chat_turn(session, "from another process", "ok")
"""


def kept(cache: ReadCache, session_id: str) -> Session:
    with cache.held(session_id) as session:
        return session


def stored(session: Session) -> list[bytes]:
    return [encode_event(event) for event in session.events]


def fresh(store: object, session_id: str) -> list[bytes]:
    return stored(Session.open(store, session_id))  # type: ignore[arg-type]


def count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every whole load of a session, by the reader or by the store."""
    loads: list[str] = []
    real_load, real_open = AppendedReader.load, Session.open

    def load(self, session_id):  # type: ignore[no-untyped-def]
        loads.append(session_id)
        return real_load(self, session_id)

    def open_(store, session_id, **kwargs):  # type: ignore[no-untyped-def]
        loads.append(session_id)
        return real_open(store, session_id, **kwargs)

    monkeypatch.setattr(AppendedReader, "load", load)
    monkeypatch.setattr(Session, "open", open_)
    return loads


def test_what_another_process_appends_is_caught_up_without_loading_the_log_again(
    tmp_path, monkeypatch
):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "hello there", "hi")
    cache = ReadCache(env.store)
    first = kept(cache, writer.id)
    seen = len(first.events)
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-c", APPEND_TURN, str(env.store.home), writer.id, str(root)], check=True
    )
    loads = count_loads(monkeypatch)
    again = kept(cache, writer.id)
    assert again is first and len(again.events) > seen
    assert loads == []
    assert stored(again) == fresh(env.store, writer.id)


def test_a_line_still_being_written_shows_once_its_newline_lands(tmp_path, monkeypatch):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "first", "ok")
        append_chat_turn(writer, "second", "ok")
    path = env.store.log_path(writer.id)
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    cut = len(whole) - len(lines[-1]) - len(lines[-2]) // 2  # inside the last line but one
    path.write_bytes(whole[:cut])
    cache = ReadCache(env.store)
    torn = kept(cache, writer.id)
    assert stored(torn) == fresh(env.store, writer.id)  # the torn line is not shown
    loads = count_loads(monkeypatch)
    with path.open("ab") as handle:
        handle.write(whole[cut : len(whole) - 3])  # the line completes, the next one is torn
    assert kept(cache, writer.id) is torn
    assert len(torn.events) == len(lines) - 2
    with path.open("ab") as handle:
        handle.write(whole[len(whole) - 3 :])
    assert kept(cache, writer.id) is torn and loads == []
    assert stored(torn) == fresh(env.store, writer.id) and len(torn.events) == len(lines) - 1


def test_a_log_replaced_by_a_shorter_copy_is_loaded_again_whole(tmp_path):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "first", "ok")
        append_chat_turn(writer, "second", "ok")
    cache = ReadCache(env.store)
    before = kept(cache, writer.id)
    path = env.store.log_path(writer.id)
    lines = path.read_bytes().splitlines(keepends=True)
    copy = path.with_name("copy")
    copy.write_bytes(b"".join(lines[:4]))  # what `dsh sessions repair` does: a new file
    os.replace(copy, path)
    after = kept(cache, writer.id)
    assert after is not before and len(after.events) == 3
    assert stored(after) == fresh(env.store, writer.id)


def test_an_appended_line_that_does_not_load_answers_with_the_loads_error(tmp_path):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "first", "ok")
    cache = ReadCache(env.store)
    kept(cache, writer.id)
    path = env.store.log_path(writer.id)
    whole = path.read_bytes()
    seq = len(Session.open(env.store, writer.id).events)
    with path.open("ab") as handle:  # written by a newer dsh
        handle.write(b'{"type":"future/thing","seq":%d,"time":0,"data":{}}\n' % seq)
    with pytest.raises(LogCorruptError) as loaded:
        Session.open(env.store, writer.id)
    with pytest.raises(LogCorruptError) as served:
        kept(cache, writer.id)
    assert type(served.value) is type(loaded.value) is UnknownEventTypeError
    assert str(served.value) == str(loaded.value)
    path.write_bytes(whole)  # put right: served as it is again
    assert stored(kept(cache, writer.id)) == fresh(env.store, writer.id)


def test_the_events_handed_out_stay_as_they_were_read_while_the_kept_session_grows(tmp_path):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "first", "ok")
    registry = env.registry()
    events = run_apart(registry.events(writer.id))
    count = len(events)
    with Session.open(env.store, writer.id, writable=True) as more:
        append_chat_turn(more, "second", "ok")
    info = run_apart(registry.info(writer.id))  # the kept session catches up
    assert info["lastSeq"] + 1 > count == len(events)


def test_a_sqlite_session_is_kept_and_caught_up_too(tmp_path):
    store = SqliteStore(tmp_path)
    writer = new_session(store)
    append_chat_turn(writer, "first", "ok")
    cache = ReadCache(store)
    first = kept(cache, writer.id)
    append_chat_turn(writer, "second", "ok")
    assert kept(cache, writer.id) is first
    assert stored(first) == fresh(store, writer.id)
    writer.close()


def test_a_store_without_positions_is_read_whole_every_time():
    store = MemoryStore()
    writer = new_session(store)
    append_chat_turn(writer, "first", "ok")
    cache = ReadCache(store)
    first = kept(cache, writer.id)
    append_chat_turn(writer, "second", "ok")
    again = kept(cache, writer.id)
    assert again is not first and stored(again) == fresh(store, writer.id)
    writer.close()


def test_the_benchmark_prints_the_pickup_of_one_event_read_on_and_reloaded_with_the_ratio():
    """``benchmarks/web_info.py`` on a small session (figures are not checked: no timing
    assertions)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "web_info.py"
    done = subprocess.run(
        [sys.executable, str(script), "--events", "300", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("load average: ") and lines[-1].startswith("load average after: ")
    for figure in ("cache (held)", "session info  incremental"):
        row = next(line for line in lines if line.startswith(figure))
        assert " ms   full reload " in row and row.endswith("x") and "ratio" in row
