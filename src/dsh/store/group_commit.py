"""Group commit: fsync requests are coalesced by one background thread.

Appends hand their bytes to the OS synchronously (so a process crash loses nothing that was
appended); the fsync that makes them survive a power loss runs in the background, and requests
that arrive while one is running share the next one. ``wait`` blocks until every request made so
far is on stable storage; ``sync`` first requests one for writes no request covers yet.

An optional ``after`` callable runs on the same thread after an fsync completes (its waiters are
released first): upkeep that must stay off the append path, such as a SQLite checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class GroupFsync:
    def __init__(
        self,
        fsync: Callable[[], None],
        name: str,
        *,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._fsync = fsync
        self._after = after
        self._cond = threading.Condition()
        self._requested = 0
        self._done = 0
        self._unrequested_writes = False  # only touched by the writing thread
        self._error: OSError | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=f"fsync-{name}", daemon=True)
        self._thread.start()

    @property
    def error(self) -> OSError | None:
        return self._error

    def wrote(self, *, durable: bool) -> None:
        """Note a write that reached the OS: a durable one requests an fsync now, the others
        ride on the next request (a later durable write, or ``sync``)."""
        if durable:
            self._unrequested_writes = False
            self.request()
        else:
            self._unrequested_writes = True

    def request(self) -> None:
        """Ask for an fsync (coalesced with any others made before it starts)."""
        with self._cond:
            self._requested += 1
            self._cond.notify_all()

    def sync(self) -> None:
        """Block until every write noted so far is on stable storage; re-raise an fsync
        failure."""
        if self._unrequested_writes:
            self._unrequested_writes = False
            self.request()
        self.wait()

    def wait(self) -> None:
        """Block until all requested fsyncs are done; re-raise an fsync failure."""
        with self._cond:
            target = self._requested
            while self._done < target and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        """Finish the requested fsyncs, then stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._requested == self._done and not self._closing:
                    self._cond.wait()
                if self._requested == self._done:
                    return
                target = self._requested
            try:
                self._fsync()
            except OSError as exc:
                with self._cond:
                    self._error = exc
                    self._cond.notify_all()
                return
            with self._cond:
                self._done = target
                self._cond.notify_all()
                closing = self._closing
            if self._after is not None and not closing:
                self._after()
