"""A session's load warnings reach its pages through the warning feed, once per load: what the
read cache's whole load of a stored session warns of (a torn last line dropped) and what
resuming it here warns of (the torn tail moved aside, a turn a crashed process left open
closed), never again on a catch-up; not while another live process holds the writer lock (its
last line is being written, not torn)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from dsh.store import JsonlStore
from dsh.store.jsonl import LOCK_NAME
from dsh.surface import Session
from dsh.web.sessions import SessionRegistry
from tests.helpers import append_chat_turn, leave_lock_of_a_killed_writer
from tests.web.builders import run_apart
from tests.web.conftest import make_env
from tests.web.lock_holders import FlockHolder

TORN = b'{"type":"user/mess'


def stored_with_torn_tail(store: JsonlStore, *, open_turn: bool = False) -> tuple[str, Path]:
    """A stored session of two chat turns whose log ends in a torn line (``open_turn``: the
    last turn's ``turn/end`` never made it either); its id and log."""
    with Session.create(store, cwd="/work/project") as session:
        append_chat_turn(session, "first", "ok")
        append_chat_turn(session, "second", "ok")
    path = store.log_path(session.id)
    data = path.read_bytes()
    if open_turn:  # a killed writer's: its lock still names it
        data = data[: data.rstrip(b"\n").rfind(b"\n") + 1]
        leave_lock_of_a_killed_writer(store, session.id)
    path.write_bytes(data + TORN)
    return session.id, path


def kept(registry: SessionRegistry, session_id: str) -> list[tuple[str, str, int]]:
    return [(w["level"], w["text"], w["count"]) for w in registry.warnings.kept(session_id)]


def torn_warning(path: Path, size: int = len(TORN)) -> str:
    return f"{path}: dropped a torn last line ({size} bytes) left by an interrupted write"


def test_a_read_cache_load_warns_the_sessions_pages_once_and_a_catch_up_never(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    sid, path = stored_with_torn_tail(env.store)
    registry = env.registry()
    with registry.warnings.installed():
        run_apart(registry.info(sid))
        assert kept(registry, sid) == [("warning", torn_warning(path), 1)]
        assert registry.warnings.kept(None) == []  # the session's, not the server's
        run_apart(registry.info(sid))  # kept: nothing loaded again
        run_apart(registry.history(sid, None, 25))
        with path.open("ab") as handle:  # the torn line is cut off, turns appended: caught up
            handle.truncate(path.stat().st_size - len(TORN))
        with Session.open(env.store, sid, writable=True) as writer:
            append_chat_turn(writer, "third", "ok")
        assert len(run_apart(registry.events(sid))) == len(writer.events)
        assert kept(registry, sid) == [("warning", torn_warning(path), 1)]

        path.write_bytes(path.read_bytes() + TORN)  # torn again, then replaced: loaded again
        copy = path.with_name("copy")
        copy.write_bytes(path.read_bytes())
        os.replace(copy, path)
        assert len(run_apart(registry.events(sid))) == len(writer.events)
        assert kept(registry, sid) == [("warning", torn_warning(path), 2)]
    assert TORN + b"\n" not in path.read_bytes()  # nothing written into the log


def test_no_torn_line_is_told_while_another_live_process_writes_the_log(tmp_path: Path) -> None:
    """Its last line is being written; once that process is gone, a load tells it."""
    env = make_env(tmp_path)
    sid, path = stored_with_torn_tail(env.store)
    registry = env.registry()
    with registry.warnings.installed():
        writer = FlockHolder(path.parent / LOCK_NAME)  # it holds the lock
        try:
            run_apart(registry.info(sid))
            assert kept(registry, sid) == []
        finally:
            writer.crash()
    registry = env.registry()  # the pid left in the lock file is dead: a torn line
    with registry.warnings.installed():
        run_apart(registry.info(sid))
        assert kept(registry, sid) == [("warning", torn_warning(path), 1)]


def test_resuming_a_session_here_warns_its_pages_of_what_the_open_repaired(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sid, path = stored_with_torn_tail(env.store, open_turn=True)
    registry = env.registry()

    async def resumed() -> list[tuple[str, str, int]]:
        with registry.warnings.installed() as feed:
            feed.bind_loop()
            hub = registry.hub(sid)
            subscriber = hub.subscribe()
            handle = await registry.resume(sid)
            frames: list[Any] = []
            while len(frames) < 2:
                message = await asyncio.wait_for(subscriber.queue.get(), 30)
                assert message is not None
                if '"kind":"warning"' in message:
                    frames.append(message)
            registry.close(handle.session.id)
            await registry.resume(sid)  # repaired already: nothing to say this time
            await registry.shutdown()
            return kept(registry, sid)

    warnings = run_apart(resumed())
    assert [text for _, text, _ in warnings] == [
        torn_warning(path),
        "closed turn left open by a crashed process (2 repair events)",
    ]
    assert all(count == 1 for _, _, count in warnings)
