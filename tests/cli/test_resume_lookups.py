"""``dsh run --session ID`` and ``dsh --resume ID`` find the session and its workspace by
reading that session's header alone: an exact id never lists the store (it used to list every
session's header three times before the session was opened); a prefix still does, and an
unreadable session is still named with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli import context
from dsh.errors import LogCorruptError, SessionNotFoundError
from dsh.store import JsonlStore, SqliteStore
from tests.helpers import append_chat_turn, new_session


def listing_refused(*args: object) -> None:
    raise AssertionError("listed every session to find one")


@pytest.mark.parametrize("backend", [JsonlStore, SqliteStore])
def test_an_exact_id_finds_the_session_and_its_workspace_without_listing_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: type[JsonlStore | SqliteStore]
) -> None:
    store = backend(tmp_path / "home")
    made = {}
    for number in range(3):
        workspace = tmp_path / f"work-{number}"
        workspace.mkdir()
        with new_session(store, cwd=str(workspace)) as session:
            append_chat_turn(session)
        made[session.id] = workspace
    monkeypatch.setattr(backend, "list", listing_refused)
    monkeypatch.setattr(backend, "unreadable", listing_refused)
    for session_id, workspace in made.items():
        assert context.resolve_session_id(store, session_id) == session_id
        assert context.session_workspace(store, session_id, None) == workspace
    with pytest.raises(SessionNotFoundError, match="no session 'gone'"):
        context.session_workspace(store, "gone", None)


def test_a_prefix_still_lists_the_store_and_an_unreadable_session_is_named(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path / "home")
    with new_session(store) as session:
        append_chat_turn(session)
    assert context.resolve_session_id(store, session.id[:-3]) == session.id
    store.log_path(session.id).write_bytes(b"")  # a crash before the header was written
    assert context.resolve_session_id(store, session.id) == session.id
    with pytest.raises(LogCorruptError, match="line 1: missing session header"):
        context.session_workspace(store, session.id, None)
