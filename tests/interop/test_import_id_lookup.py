"""``dsh sessions import --id ID`` checks that the id is free by looking that one session up
(``header_of``), never by listing every session in the store; a stored session whose header
cannot be read holds its id too, and is refused before anything is copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.errors import UsageError
from dsh.interop import import_upstream
from dsh.store import JsonlStore, SqliteStore

FIXTURE = Path(__file__).parent / "fixtures" / "01-header-v0.jsonl"


def _refusing_lists(store: JsonlStore | SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def listed() -> object:
        raise AssertionError("listed every session to check one id")

    monkeypatch.setattr(store, "list", listed)
    monkeypatch.setattr(store, "unreadable", listed)


@pytest.mark.parametrize("backend", [JsonlStore, SqliteStore])
def test_a_free_id_imports_and_a_taken_one_is_refused_without_a_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend
):
    home = tmp_path / "home"
    store = backend(home)
    _refusing_lists(store, monkeypatch)

    result = import_upstream(store, home, FIXTURE, cwd=str(tmp_path), session_id="taken")
    assert result.session_id == "taken"
    with pytest.raises(UsageError, match="a session taken already exists; choose another --id"):
        import_upstream(store, home, FIXTURE, cwd=str(tmp_path), session_id="taken")


def test_an_unreadable_session_holds_its_id_and_nothing_is_staged(tmp_path: Path):
    home = tmp_path / "home"
    store = JsonlStore(home)
    log = store.create(cwd=str(tmp_path), session_id="damaged")
    log.close()
    store.log_path("damaged").write_bytes(b"not a header\n")
    assert [u.id for u in store.unreadable()] == ["damaged"]

    with pytest.raises(UsageError, match="a session damaged already exists; choose another --id"):
        import_upstream(store, home, FIXTURE, cwd=str(tmp_path), session_id="damaged")
    assert not (home / "imports").exists()  # refused before the original was copied aside
    assert store.log_path("damaged").read_bytes() == b"not a header\n"
