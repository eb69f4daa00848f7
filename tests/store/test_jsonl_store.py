"""The JSONL store: the shared contract, plus what only a file of lines can get wrong."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from dsh.errors import LogCorruptError, SessionLockedError, StorageWriteError, StoreError
from dsh.events import SessionEndSeedEvent, TurnEndEvent, TurnStart, TurnStartEvent
from dsh.store import JsonlStore, new_session_id
from dsh.store.integrity import seal, unseal
from dsh.surface import Session
from tests.contracts.store_contract import StoreContract
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    fixed_clock,
    new_session,
    replace_with_checkpoint,
    surface_state,
    user_message,
    writer_in_child_process,
)


def _lines(store: JsonlStore, session_id: str) -> list[bytes]:
    """The stored lines without their CRC seals (the canonical JSON the codec reads)."""
    data = store.log_path(session_id).read_bytes()
    assert data.endswith(b"\n")
    return [unseal(line)[0] for line in data.split(b"\n")[:-1]]


def _write_lines(store: JsonlStore, session_id: str, lines: list[bytes]) -> None:
    """Store ``lines`` as a writer would, each with its seal (so only the content is odd)."""
    store.log_path(session_id).write_bytes(
        b"\n".join(seal(line) if line else line for line in lines) + b"\n"
    )


class TestJsonlStore(StoreContract):
    def make_store(self, tmp_path: Path) -> JsonlStore:
        return JsonlStore(tmp_path / "home")

    def reopen_store(self, store: JsonlStore) -> JsonlStore:
        return JsonlStore(store.home)

    def stored_event_bytes(self, store: JsonlStore, session_id: str) -> list[bytes]:
        return _lines(store, session_id)[1:]

    def replace_stored_event(
        self, store: JsonlStore, session_id: str, seq: int, raw: bytes
    ) -> None:
        lines = _lines(store, session_id)
        lines[seq + 1] = raw
        _write_lines(store, session_id, lines)

    def drop_stored_event(self, store: JsonlStore, session_id: str, seq: int) -> None:
        lines = _lines(store, session_id)
        del lines[seq + 1]
        _write_lines(store, session_id, lines)

    def position_label(self, seq: int) -> str:
        return f"line {seq + 2}"  # line 1 is the header

    def install_fixture(self, store: JsonlStore, path: Path) -> str:
        session_id = json.loads(path.read_bytes().split(b"\n", 1)[0])["id"]
        store.session_dir(session_id).mkdir(parents=True)
        shutil.copyfile(path, store.log_path(session_id))
        return session_id


@pytest.fixture
def store(tmp_path: Path) -> JsonlStore:
    return JsonlStore(tmp_path / "home")


def _closed(store: JsonlStore) -> Session:
    with new_session(store) as session:
        append_chat_turn(session)
        append_tool_turn(session)
    return session


TORN = b'{"type":"turn/start","seq":17,"time":17900'


# ---- file layout ----------------------------------------------------------------------------


def test_line_one_is_the_session_header_and_each_later_line_one_event_in_seq_order(store):
    session = _closed(store)
    lines = _lines(store, session.id)
    header = json.loads(lines[0])
    assert header == {
        "type": "session",
        "version": 1,
        "id": session.id,
        "cwd": "/work/project",
        "createdAt": session.header.created_at,
    }
    assert store.log_path(session.id) == store.home / "sessions" / session.id / "session.jsonl"
    assert [json.loads(line)["seq"] for line in lines[1:]] == list(range(len(session.events)))


def test_session_ids_sort_by_creation_time_and_are_safe_on_a_command_line():
    earlier = new_session_id(1_790_000_000_000)
    later = new_session_id(1_790_000_000_001)
    much_later = new_session_id(1_800_000_000_000)
    assert earlier < later < much_later
    assert earlier.startswith("20260921-141320-000-")
    for session_id in (earlier, later, much_later):
        assert re.fullmatch(r"[0-9a-z-]+", session_id)


def test_header_of_a_newer_format_version_refuses_the_load(store):
    session = _closed(store)
    lines = _lines(store, session.id)
    header = json.loads(lines[0])
    header["version"] = 2
    lines[0] = json.dumps(header).encode()
    _write_lines(store, session.id, lines)
    with pytest.raises(LogCorruptError, match="version 2"):
        store.open(session.id)


# ---- torn tail and corrupt lines ------------------------------------------------------------


def test_torn_last_line_is_dropped_with_a_warning_naming_it(store):
    session = _closed(store)
    path = store.log_path(session.id)
    with path.open("ab") as handle:
        handle.write(TORN)
    before = path.read_bytes()

    log = store.open(session.id)
    assert list(log.events) == list(session.events)
    assert len(log.warnings) == 1
    assert "torn last line" in log.warnings[0]
    assert str(path) in log.warnings[0]
    assert f"{len(TORN)} bytes" in log.warnings[0]
    log.close()
    # Reading never writes: the torn bytes stay where they are and nothing is moved aside.
    assert path.read_bytes() == before
    assert not (path.parent / "session.jsonl.torn").exists()


def test_writable_open_moves_a_torn_tail_aside_and_the_next_append_starts_a_clean_line(store):
    session = _closed(store)
    path = store.log_path(session.id)
    clean = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(TORN)

    resumed = Session(store.open(session.id, writable=True), clock=fixed_clock)
    assert (path.parent / "session.jsonl.torn").read_bytes() == TORN + b"\n"
    assert path.read_bytes() == clean
    append_chat_turn(resumed)
    resumed.close()

    reloaded = store.open(session.id)
    assert reloaded.warnings == []
    assert list(reloaded.events) == list(resumed.events)
    assert isinstance(reloaded.events[len(session.events)], SessionEndSeedEvent)
    reloaded.close()


def test_torn_tail_inside_an_open_turn_is_cut_before_the_turn_is_repaired(store):
    with new_session(store) as session:
        append_chat_turn(session)
        session.append(TurnStart(turn=2))
    path = store.log_path(session.id)
    with path.open("ab") as handle:
        handle.write(b'{"type":"step/start","seq":7,"ti')

    repaired = store.open(session.id, writable=True)
    assert isinstance(repaired.events[6], TurnStartEvent)
    assert isinstance(repaired.events[7], SessionEndSeedEvent)
    assert isinstance(repaired.events[-1], TurnEndEvent)
    repaired.close()
    reloaded = store.open(session.id)
    assert reloaded.warnings == []
    assert list(reloaded.events) == list(repaired.events)
    reloaded.close()


def test_corrupt_line_in_the_middle_is_refused_with_its_line_number(store):
    session = _closed(store)
    lines = _lines(store, session.id)
    lines[5] = b"this is not json"
    _write_lines(store, session.id, lines)
    with pytest.raises(LogCorruptError) as caught:
        store.open(session.id, writable=True)
    assert caught.value.line == 6
    assert "line 6" in str(caught.value)
    # A refused writable open leaves no lock behind.
    _write_lines(store, session.id, _lines(store, session.id)[:5])
    store.open(session.id, writable=True).close()


def test_corrupt_last_line_that_ends_with_a_newline_is_refused_not_dropped(store):
    session = _closed(store)
    path = store.log_path(session.id)
    with path.open("ab") as handle:
        handle.write(TORN + b"\n")  # complete as a line, so not a torn write
    last_line = len(session.events) + 2
    with pytest.raises(LogCorruptError, match=f"line {last_line}"):
        store.open(session.id)


def test_empty_line_in_the_middle_is_refused_with_its_line_number(store):
    session = _closed(store)
    lines = _lines(store, session.id)
    lines.insert(4, b"")
    _write_lines(store, session.id, lines)
    with pytest.raises(LogCorruptError, match="line 5: empty line"):
        store.open(session.id)


# ---- writes ---------------------------------------------------------------------------------


def _fail_second_write(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch os.write: the first call lands only half its bytes, every later call fails with
    EROFS (a disk that went read-only mid-batch). Returns the list of calls made."""
    real_write = os.write
    calls: list[int] = []

    def write(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("dsh.store.jsonl.os.write", write)
    return calls


@pytest.mark.parametrize("op", ["append", "replace"])
def test_failed_write_commits_nothing_and_the_session_can_append_again(store, monkeypatch, op):
    session = new_session(store)
    first = append_chat_turn(session)
    second = append_chat_turn(session)
    path = store.log_path(session.id)
    before_bytes = path.read_bytes()
    before_events = list(session.events)
    before_surface = surface_state(session)
    before_messages = session.derive_messages()

    def write_something() -> None:
        if op == "append":
            session.append(user_message("one more thing"))
        else:
            replace_with_checkpoint(session, first.user, second.assistants[-1])

    calls = _fail_second_write(monkeypatch)
    with pytest.raises(StorageWriteError, match="Read-only file system") as caught:
        write_something()
    monkeypatch.undo()

    assert len(calls) == 2  # a short write was followed by a failing one
    assert caught.value.retryable
    assert path.read_bytes() == before_bytes  # the half line was cut off again
    assert list(session.events) == before_events
    assert surface_state(session) == before_surface
    assert session.derive_messages() == before_messages

    write_something()
    session.close()
    reloaded = Session.open(store, session.id)
    assert list(reloaded.events) == list(session.events)
    assert surface_state(reloaded) == surface_state(session)
    reloaded.close()


def test_failed_first_write_of_a_resumed_session_still_begins_with_the_end_seed(store, monkeypatch):
    closed = _closed(store)
    session = Session(store.open(closed.id, writable=True), clock=fixed_clock)
    _fail_second_write(monkeypatch)
    with pytest.raises(StorageWriteError):
        session.append(TurnStart(turn=3))
    monkeypatch.undo()
    assert len(session.events) == len(closed.events)

    session.append(TurnStart(turn=3))
    session.close()
    events = store.open(closed.id).events
    assert isinstance(events[len(closed.events)], SessionEndSeedEvent)
    assert isinstance(events[len(closed.events) + 1], TurnStartEvent)
    assert len(events) == len(closed.events) + 2


def test_step_end_and_turn_end_are_fsynced_but_other_events_wait_for_a_batch(store, monkeypatch):
    session = new_session(store)
    real_fsync = os.fsync
    synced: list[int] = []

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr("dsh.store.jsonl.os.fsync", fsync)
    session.append(TurnStart(turn=1))
    session.append(user_message("hi"))
    session._log._fsync.wait()  # type: ignore[attr-defined]  # every requested fsync is done
    assert synced == []  # nothing durable appended: no fsync requested
    append_chat_turn(session)  # ends with step/end and turn/end
    session.sync()
    assert synced
    session.close()


def test_dsh_home_that_is_a_regular_file_gives_a_one_line_store_error(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    with pytest.raises(StoreError) as caught:
        JsonlStore(home).create(cwd="/work/project")
    message = str(caught.value)
    assert "\n" not in message
    assert str(home) in message


def test_a_copied_session_directory_is_never_opened_for_writing(store):
    """``cp -r ID ID.bak``, then ``dsh run --session ID.bak --cwd DIR``: the writable open took
    the copy's lock and appended to the copy as session ID (the run even printed ``session: ID``),
    so two writers could each append to "session ID" at once. The copy still reads as it is."""
    session = _closed(store)
    copy = store.session_dir(session.id).with_name(f"{session.id}.bak")
    shutil.copytree(store.session_dir(session.id), copy)
    before = (copy / "session.jsonl").read_bytes()
    with pytest.raises(StoreError) as caught:
        store.open(copy.name, writable=True)
    message = str(caught.value)
    assert f"its log is session {session.id}, not {copy.name}" in message
    assert "\n" not in message
    assert (copy / "session.jsonl").read_bytes() == before
    with store.open(session.id, writable=True):  # the copy's open left no lock behind
        pass
    assert len(store.open(copy.name).events) == len(session.events)
    assert [h.id for h in store.list()] == [session.id]


# ---- another process ------------------------------------------------------------------------


def test_writable_open_held_by_another_process_names_its_pid_until_it_dies(store):
    session = _closed(store)
    with writer_in_child_process(store.home, "jsonl", session.id) as child_pid:
        with pytest.raises(SessionLockedError) as caught:
            store.open(session.id, writable=True)
        assert caught.value.holder_pid == child_pid
        assert f"process {child_pid}" in str(caught.value)
        reader = store.open(session.id)  # readers never block
        assert len(reader.events) == len(session.events)
        reader.close()
    # The kernel dropped the dead child's lock.
    store.open(session.id, writable=True).close()


def test_sessions_created_in_one_millisecond_still_sort_in_creation_order(monkeypatch):
    """Ids and createdAt sort by creation even when the clock does not move between two."""
    import dsh.store.base as base

    monkeypatch.setattr(base, "now_millis", lambda: 1_780_000_000_000)
    made = [base.new_header(cwd="/w", parent_session=None, seed_length=0) for _ in range(20)]
    assert [h.id for h in made] == sorted(h.id for h in made)
    assert [h.created_at for h in made] == sorted({h.created_at for h in made})


def test_an_ambiguous_id_prefix_says_how_many_sessions_match(tmp_path):
    from dsh.errors import UsageError
    from dsh.store import resolve_session_id

    store = JsonlStore(tmp_path)
    for _ in range(7):
        store.create(cwd="/w")
    with pytest.raises(UsageError, match=r"is ambiguous: 7 sessions match \(.*, …\); give more"):
        resolve_session_id(store, "2")  # every id starts with its creation year


def test_a_workspace_path_that_is_not_utf8_is_refused_before_anything_is_created(tmp_path):
    from dsh.errors import UsageError

    store = JsonlStore(tmp_path)
    with pytest.raises(UsageError, match=r"the workspace /w/x\\xff is not a UTF-8 path"):
        store.create(cwd=os.fsdecode(b"/w/x\xff"))
    assert not store.root.exists() or list(store.root.iterdir()) == []
