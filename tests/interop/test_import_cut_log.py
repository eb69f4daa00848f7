"""A log cut before it was imported (it ends inside a turn) is closed by the first writable open
as any open turn is, and the warning says the imported log left it open: it said "a process
that did not crash but could not write the rest of its log (disk full?)", though no process of
dsh's ever ran that turn. A turn a dsh process leaves open after the import is still said as
before. Both stores, real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events import SessionEndSeedEvent, TurnEndEvent, TurnStart
from dsh.interop import import_upstream
from dsh.store import JsonlStore, SqliteStore
from dsh.surface import Session

FIXTURE = Path(__file__).parent / "fixtures" / "04-stream-chunks.jsonl"
IMPORTED = "closed turn left open by the imported log: it ends inside that turn"
NOT_CRASHED = "a process that did not crash but could not write the rest of its log (disk full?)"


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JsonlStore | SqliteStore:
    home = tmp_path / "home"
    return JsonlStore(home) if request.param == "jsonl" else SqliteStore(home)


def import_cut_log(store: JsonlStore | SqliteStore, tmp_path: Path) -> str:
    """The fixture's header and first three events: inside its first turn."""
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(FIXTURE.read_bytes().splitlines(keepends=True)[:4]))
    return import_upstream(store, store.home, cut, cwd=str(tmp_path), session_id="cut").session_id


def closing_warnings(store: JsonlStore | SqliteStore, session_id: str) -> list[str]:
    """The crash-repair warnings of a writable open (which closes what is open)."""
    log = store.open(session_id, writable=True)
    try:
        return [w for w in log.warnings if w.startswith("closed turn")]
    finally:
        log.close()


def test_the_imported_log_is_said_to_leave_its_turn_open_and_a_later_process_its_own(
    store: JsonlStore | SqliteStore, tmp_path: Path
) -> None:
    session_id = import_cut_log(store, tmp_path)

    first = closing_warnings(store, session_id)
    with Session.open(store, session_id) as session:
        events = list(session.events)
    with Session.open(store, session_id, writable=True) as session:
        session.append(TurnStart(turn=2))  # a process that then stops cleanly, the turn open
    later = closing_warnings(store, session_id)

    assert isinstance(events[3], SessionEndSeedEvent) and isinstance(events[-1], TurnEndEvent)
    assert first == [f"{IMPORTED} ({len(events) - 3} repair events)"]
    (closed,) = later  # after the import: a dsh process left it open, said as before
    assert NOT_CRASHED in closed and "imported" not in closed
