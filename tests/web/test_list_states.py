"""The sweep behind the session list's live states (``dsh.web.list_states``) reads only the lock
files that are not empty, and still finds what reading every file finds
(``dsh.web.follow.lock_holder``) at every step: a holder taking a lock, releasing it cleanly,
dying with its pid left behind, that pid reused by a process holding no lock, another taking
it; and a listing that finds another holder than the sweep knew tells the pages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web.follow import lock_holder
from dsh.web.list_states import ListStates
from dsh.web.live import LiveHub
from tests.web.lock_holders import FlockHolder


def test_a_sweep_finds_what_reading_every_lock_file_finds(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "home")
    ids = []
    for _ in range(3):
        session = Session.create(store, cwd=tmp_path)
        session.close()
        ids.append(session.id)
    ids.append("20990101-never-opened")  # no lock file at all
    states = ListStates(store, LiveHub("(server)"), {})
    holders: dict[str, FlockHolder] = {}
    unrelated = subprocess.Popen(["sleep", "300"])  # alive, holding no lock

    def take(session_id: str) -> None:
        holders[session_id] = FlockHolder(store.lock_path(session_id))

    def sweep_agrees() -> dict[str, int | None]:
        expected = {session_id: lock_holder(store, session_id) for session_id in ids}
        assert states.sweep(ids) == expected
        assert states.sweep(ids) == expected  # and again, as they are
        return expected

    try:
        assert set(sweep_agrees().values()) == {None}
        take(ids[0])
        assert sweep_agrees()[ids[0]] == holders[ids[0]].pid
        holders[ids[0]].release()
        take(ids[1])
        assert sweep_agrees() == {**dict.fromkeys(ids), ids[1]: holders[ids[1]].pid}
        holders[ids[1]].crash()  # it died holding it: its pid stays, its flock is gone
        assert set(sweep_agrees().values()) == {None}
        store.lock_path(ids[1]).write_text(f"{unrelated.pid}\ndsh run\n")  # a reused pid
        take(ids[2])
        assert sweep_agrees() == {**dict.fromkeys(ids), ids[2]: holders[ids[2]].pid}
        holders[ids[2]].release()
        assert set(sweep_agrees().values()) == {None}
    finally:
        for holder in holders.values():
            holder.crash()
        unrelated.kill()
        unrelated.wait()


def test_a_listing_that_finds_another_holder_tells_every_page() -> None:
    hub = LiveHub("(server)")
    page = hub.subscribe()
    states = ListStates(JsonlStore(Path("/nonexistent")), hub, {}, every=None)
    states.listed([{"id": "a", "open": False, "heldBy": None}])
    states.listed([{"id": "a", "open": False, "heldBy": 4242}, {"id": "b", "heldBy": 7}])
    sent = [json.loads(page.queue.get_nowait()) for _ in range(page.queue.qsize())]
    assert sent == [
        {
            "kind": "session-state",
            "session": {"id": "a", "open": False, "running": None, "heldBy": 4242},
        }
    ]  # "b" was not listed before: the pages have it from the listing itself
    assert states.holders == {"a": 4242, "b": 7}
