"""Who holds a session's writer lock, as the page is told; the follower publishes each event
of a session written elsewhere and here in turn once."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.store import JsonlStore
from dsh.store.jsonl import LOCK_NAME
from dsh.surface import Session
from dsh.web.follow import Followers, lock_holder
from tests.helpers import append_chat_turn
from tests.web.builders import run_apart
from tests.web.conftest import make_env
from tests.web.lock_holders import FlockHolder


def test_the_holder_is_a_live_other_process_never_a_dead_one_or_this_one(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "home")
    session = Session.create(store, cwd=tmp_path)
    sid = session.id
    lock = store.session_dir(sid) / LOCK_NAME
    assert lock_holder(store, sid) is None  # held by this very process
    session.close()
    assert lock_holder(store, sid) is None  # released: the pid is gone from the file

    other = FlockHolder(lock)  # another writer: its flock taken, its pid written
    try:
        assert lock_holder(store, sid) == other.pid
    finally:
        other.crash()  # a crashed writer leaves its pid behind, its flock gone
    assert lock.read_text().startswith(f"{other.pid}\n")
    assert lock_holder(store, sid) is None
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as unrelated:
        try:  # that pid reused by a live process that holds no lock
            lock.write_text(f"{unrelated.pid}\n")
            assert lock_holder(store, sid) is None
        finally:
            unrelated.kill()
    lock.write_text(f"{os.getpid()}\n")
    assert lock_holder(store, sid) is None
    lock.write_text("garbage\n")
    assert lock_holder(store, sid) is None


def test_a_followed_session_opened_here_and_closed_again_publishes_each_event_once(
    tmp_path: Path,
) -> None:
    """Written elsewhere, then here (its own observer publishes), then elsewhere again: every
    event reaches the pages once, in seq order, and none is read past."""
    env = make_env(tmp_path)
    writer = Session.create(env.store, cwd=env.workspace)
    sid = writer.id
    append_chat_turn(writer, "before", "ok")
    writer.close()
    registry = env.registry()

    async def follow() -> list[int]:
        hub = registry.hub(sid)
        hub.bind_loop()
        subscriber = hub.subscribe()
        followers = Followers(registry)
        tail = followers.ensure(sid, -1).tail  # the page has none yet: the whole log streams in
        seqs: list[int] = []

        async def until(count: int) -> None:
            while len(seqs) < count:
                message = json.loads(await asyncio.wait_for(subscriber.queue.get(), 30))
                if message["kind"] == "event":
                    seqs.append(message["event"]["seq"])

        with Session.open(env.store, sid, writable=True) as elsewhere:
            append_chat_turn(elsewhere, "written elsewhere", "ok")
            count = len(elsewhere.events)
        await until(count)
        handle = await registry.resume(sid)
        append_chat_turn(handle.session, "written here", "ok")
        count = len(handle.session.events)
        await until(count)

        async def seen_open_here() -> None:  # the follower polls: it takes up after these
            while tail.last_seq < count - 1:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(seen_open_here(), 30)
        registry.close(sid)
        with Session.open(env.store, sid, writable=True) as elsewhere:
            append_chat_turn(elsewhere, "elsewhere again", "ok")
            count = len(elsewhere.events)
        await until(count)
        await followers.stop()
        return seqs

    assert run_apart(follow()) == list(range(len(Session.open(env.store, sid).events)))
