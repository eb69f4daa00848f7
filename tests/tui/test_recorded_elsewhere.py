"""``/resume ID``'s check that the session ran in another workspace
(``Controller.recorded_elsewhere``) reads that one session's header (``header_of``), never a
listing of every session in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.config import Settings
from dsh.store import JsonlStore, SqliteStore
from dsh.tui.controller import Controller, TuiOptions


class OneLookupOnly:
    """A store that refuses to list: only a lookup of one session answers."""

    def __init__(self, inner: JsonlStore | SqliteStore) -> None:
        self.inner = inner

    def list(self) -> object:
        raise AssertionError("listed every session to look one up")

    def unreadable(self) -> object:
        raise AssertionError("listed every session to look one up")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def _controller(inner: JsonlStore | SqliteStore, workspace: Path) -> Controller:
    """A controller of ``workspace`` on ``inner`` behind a store that cannot list (the check
    tells no listener anything)."""
    options = TuiOptions(settings=Settings(), store=OneLookupOnly(inner), workspace=workspace)
    return Controller(options, listener=None)


@pytest.mark.parametrize("backend", [JsonlStore, SqliteStore])
def test_the_recorded_workspace_is_read_from_that_session_alone(tmp_path: Path, backend):
    inner = backend(tmp_path / "home")
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    ids = {}
    for name, cwd in (("here", here), ("elsewhere", elsewhere)):
        log = inner.create(cwd=str(cwd))
        log.close()
        ids[name] = log.id
    controller = _controller(inner, here)

    assert controller.recorded_elsewhere(ids["elsewhere"]) == str(elsewhere)
    assert controller.recorded_elsewhere(ids["here"]) is None
    assert controller.recorded_elsewhere("20990101-000000-000-000000") is None  # no such one


def test_an_unreadable_session_is_not_said_to_be_elsewhere(tmp_path: Path):
    """Its header cannot say where it ran: the open that follows says what is wrong."""
    inner = JsonlStore(tmp_path / "home")
    log = inner.create(cwd=str(tmp_path / "elsewhere"))
    log.close()
    inner.log_path(log.id).write_bytes(b"not a header\n")
    controller = _controller(inner, tmp_path)

    assert controller.recorded_elsewhere(log.id) is None
