"""The session list's states as they change, sent to every page: the sessions it does not show.

``GET /api/sessions`` gives each stored session's state as it was read: running (a turn or a
``/compact``) or live here, busy elsewhere (another process holds its writer lock: ``heldBy``),
idle. A page shows one session, whose item follows that session's own stream (the header's
state); ``ListStates`` keeps the others current without the list being read again: each change
is one frame on the server's stream (``WS /api/live``, which every page holds for its life)::

    {"kind": "session-state", "session": {"id", "open", "running", "heldBy"}}

- Here: a session opened (resumed, or new), its turn or ``/compact`` starting or ending, and its
  release are sent as they happen (``changed``, from the registry).
- Elsewhere: another process (``dsh run``, the terminal UI, another ``dsh web``) taking or
  releasing a session's writer lock is seen by a sweep over the lock files of the sessions the
  latest listing named (those not open here), every ``SWEEP_SECONDS`` while a page listens, in a
  worker thread; with no page listening, no sweep and no timer. A lock file is stat'ed, and read
  only when it is not empty (a holder writes its pid into it, a clean release empties it); a pid
  it records is checked for being alive and then against the flock (a crashed holder's flock is
  gone, and its pid may since name an unrelated process): a sweep of a settled
  store costs a ``stat`` per session (``benchmarks/web_list_states.py`` measures the idle
  server's CPU with and without it). Only a change is sent.
- A listing that finds another holder than the sweep knew (it read the lock in between) sends
  it too: every change the server sees reaches every page, so the pages agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from dsh.store import EventStore
from dsh.store.locking import holder_elsewhere
from dsh.web.live import LiveHub, frame

SWEEP_SECONDS = 1.0
"""How often the lock files are looked at while a page listens: a lock another process takes
or releases shows in the lists within about this long."""


class ListStates:
    """The states the pages' lists were sent, kept current (see the module's docstring).

    ``hub``: the server's stream; ``handles``: the sessions open here, by id (the registry's);
    ``every``: the sweep's period in seconds (None: no sweep)."""

    def __init__(
        self,
        store: EventStore,
        hub: LiveHub,
        handles: Mapping[str, Any],
        every: float | None = SWEEP_SECONDS,
    ) -> None:
        self.hub = hub
        self.handles = handles
        self.every = every
        self.holders: dict[str, int | None] = {}
        """The sessions the latest listing named, with the holder last seen of each."""
        self._changes = 0
        self._set_at: dict[str, int] = {}
        """When (``_changes``) the loop last set each holder: a sweep that began before then
        read it earlier, and leaves it."""
        self.task: asyncio.Task[None] | None = None
        self._lock_path: Callable[[str], Any] | None = getattr(store, "lock_path", None)
        self._paths: dict[str, str] = {}
        """Each session's lock file, as the last sweep named it (its thread alone uses it)."""

    def changed(self, session_id: str, *, open_: bool, running: str | None) -> None:
        """A session here was opened or released, or what runs in it changed (on the loop)."""
        self._changes += 1
        self.holders[session_id] = None  # this server holds it, or just released it
        self._set_at[session_id] = self._changes
        self._send(session_id, open_=open_, running=running, held=None)

    def listed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """A listing's rows (``SessionRegistry.list_sessions``): the sessions the sweep looks
        at from now on; a holder it found that differs from the one last seen is sent."""
        named: dict[str, int | None] = {}
        for row in rows:
            session_id, held = row["id"], None if row.get("open") else row.get("heldBy")
            named[session_id] = held
            if session_id in self.holders and self.holders[session_id] != held:
                self._send(session_id, open_=bool(row.get("open")), running=None, held=held)
        self._changes += 1
        self.holders = named
        self._set_at = dict.fromkeys(named, self._changes)

    def ensure_sweeping(self) -> None:
        """A page listens (on the loop): sweep while any does (at most one sweep runs)."""
        if self.every is None or self._lock_path is None:
            return
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._sweep_while_listened(self.every))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def _sweep_while_listened(self, every: float) -> None:
        while self.hub.subscribers:
            await asyncio.sleep(every)
            away = [session_id for session_id in self.holders if session_id not in self.handles]
            began = self._changes
            found = await anyio.to_thread.run_sync(self.sweep, away) if away else {}
            for session_id, held in found.items():
                if session_id in self.handles or self._set_at.get(session_id, began + 1) > began:
                    continue  # opened here, set since, or no longer listed, meanwhile
                if self.holders[session_id] != held:
                    self.holders[session_id] = held
                    self._send(session_id, open_=False, running=None, held=held)

    def sweep(self, session_ids: Collection[str]) -> dict[str, int | None]:
        """The live holder of each session's writer lock, by id (in a worker thread), as
        ``lock_holder`` finds it: an empty lock file (none holds it, or its holder released it)
        is only stat'ed, a live recorded pid is checked against the flock."""
        lock_path = self._lock_path
        assert lock_path is not None
        known = self._paths
        paths = {i: known.get(i) or os.fspath(lock_path(i)) for i in session_ids}
        self._paths = paths
        return {session_id: _holder_pid(path) for session_id, path in paths.items()}

    def _send(self, session_id: str, *, open_: bool, running: str | None, held: int | None) -> None:
        state = {"id": session_id, "open": open_, "running": running, "heldBy": held}
        self.hub.publish(frame("session-state", session=state))


def _holder_pid(path: str) -> int | None:
    """The pid of another live process holding the writer lock at ``path`` (None: none does)."""
    holder = holder_elsewhere(Path(path))
    return None if holder is None else holder.pid
