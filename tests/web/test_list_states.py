"""The sweep behind the session list's live states (``dsh.web.list_states``) reads only the lock
files that are not empty, and still finds what reading every file finds
(``dsh.web.follow.lock_holder``) at every step: a holder taking a lock, releasing it cleanly,
dying with its pid left behind, another taking it; and a listing that finds another holder than
the sweep knew tells the pages."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web.follow import lock_holder
from dsh.web.list_states import ListStates
from dsh.web.live import LiveHub


@pytest.fixture
def alive() -> Iterator[list[int]]:
    """The pids of two processes that live while the test runs."""
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
    yield [sleeper.pid for sleeper in sleepers]
    for sleeper in sleepers:
        sleeper.kill()
        sleeper.wait()


def test_a_sweep_finds_what_reading_every_lock_file_finds(tmp_path: Path, alive: list[int]) -> None:
    store = JsonlStore(tmp_path / "home")
    ids = []
    for _ in range(3):
        session = Session.create(store, cwd=tmp_path)
        session.close()
        ids.append(session.id)
    ids.append("20990101-never-opened")  # no lock file at all
    dead = subprocess.Popen(["true"])
    dead.wait()
    states = ListStates(store, LiveHub("(server)"), {})

    def holds(session_id: str, pid: int | None) -> None:
        lock = store.lock_path(session_id)
        os.truncate(lock, 0)  # as a release leaves it; then the holder's pid, as a taker writes
        if pid is not None:
            with lock.open("r+") as file:
                file.write(f"{pid}\ndsh run\n")

    steps = [
        {},
        {ids[0]: alive[0]},
        {ids[0]: None, ids[1]: alive[1]},
        {ids[1]: dead.pid},  # it died holding it: its pid stays, its flock is gone
        {ids[1]: alive[0], ids[2]: alive[1]},
        {ids[2]: None},
    ]
    for step in steps:
        for session_id, pid in step.items():
            holds(session_id, pid)
        expected = {session_id: lock_holder(store, session_id) for session_id in ids}
        assert states.sweep(ids) == expected, step
        assert states.sweep(ids) == expected  # and again, as they are
    assert list(expected.values()) == [None, alive[0], None, None]


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
