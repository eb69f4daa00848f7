"""Follow a session that another process writes (``dsh run``, the TUI, another ``dsh web``).

While a page watches a session that is not open for writing here, a ``Follower`` tails its log
every ``POLL_SECONDS`` (``dsh.store.tail.LogTail``: the bytes or rows appended since the last
read, never the whole log again) and publishes each new event exactly as the writer's own
observer would, so the page cannot tell a local writer from a remote one. It
also reads the writer lock's holder pid and publishes ``{"kind": "holder", "pid": N | null}``
when it changes; the page shows "busy in another process" and disables its composer meanwhile.
A follower stops when the session's last subscriber leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from dsh.errors import DshError
from dsh.store.jsonl import LOCK_NAME
from dsh.store.tail import LogTail
from dsh.web.live import frame

if TYPE_CHECKING:
    from dsh.web.sessions import SessionRegistry

log = logging.getLogger("dsh.web")

POLL_SECONDS = 0.025


def lock_holder(store: Any, session_id: str) -> int | None:
    """The pid recorded in the session's writer lock file if that process is alive and is not
    this one (a crashed writer leaves its pid behind; its flock is gone, so it holds nothing)."""
    session_dir = getattr(store, "session_dir", None)
    if session_dir is None:
        return None
    try:
        text = (Path(session_dir(session_id)) / LOCK_NAME).read_text("ascii", "replace").strip()
    except OSError:
        return None
    if not text.isdigit() or int(text) == os.getpid():
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, someone else's
    return pid


class Follower:
    def __init__(self, registry: SessionRegistry, session_id: str, last_seq: int) -> None:
        self.registry = registry
        self.session_id = session_id
        self.last_seq = last_seq
        self.holder: int | None = lock_holder(registry.store, session_id)
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        registry, session_id = self.registry, self.session_id
        hub = registry.hub(session_id)
        tail: LogTail | None = None
        try:
            while hub.subscribers:
                await asyncio.sleep(POLL_SECONDS)
                handle = registry.handles.get(session_id)
                if handle is not None:  # written here: the session's own observer publishes
                    self.last_seq = len(handle.session.events) - 1
                    self._set_holder(None)
                    _closed(tail)  # it takes up from the new end when released
                    tail = None
                    continue
                self._set_holder(lock_holder(registry.store, session_id))
                try:
                    if tail is None:  # finding the place reads the log once: off the loop
                        tail = await anyio.to_thread.run_sync(
                            LogTail, registry.store, session_id, self.last_seq
                        )
                    events = tail.read()
                except DshError as exc:  # e.g. a log cut back under us: find our place again
                    log.debug("follow %s: %s", session_id, exc)
                    _closed(tail)
                    tail = None
                    continue
                if session_id in registry.handles:
                    continue
                for event in events:
                    hub.on_event(event)
                self.last_seq = max(self.last_seq, tail.last_seq)
        finally:
            _closed(tail)

    def _set_holder(self, pid: int | None) -> None:
        if pid != self.holder:
            self.holder = pid
            self.registry.hub(self.session_id).publish(frame("holder", pid=pid))


def _closed(tail: LogTail | None) -> None:
    """Close ``tail`` (if any); the caller's tail is then None."""
    if tail is not None:
        tail.close()


class Followers:
    """One follower per watched session id."""

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        self.running: dict[str, Follower] = {}

    def ensure(self, session_id: str, last_seq: int) -> Follower:
        follower = self.running.get(session_id)
        if follower is None or follower.task is None or follower.task.done():
            follower = Follower(self.registry, session_id, last_seq)
            follower.task = asyncio.create_task(follower.run())
            follower.task.add_done_callback(lambda _: self._done(session_id, follower))
            self.running[session_id] = follower
        return follower

    def _done(self, session_id: str, follower: Follower) -> None:
        if self.running.get(session_id) is follower:
            del self.running[session_id]

    async def stop(self) -> None:
        for follower in list(self.running.values()):
            if follower.task is not None:
                follower.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task
        self.running.clear()
