"""Group commit: fsync requests are coalesced by one background thread.

Appends hand their bytes to the OS synchronously (so a process crash loses nothing that was
appended); the fsync that makes them survive a power loss runs in the background, and requests
that arrive while one is running share the next one. ``wait`` blocks until every request made so
far is on stable storage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class GroupFsync:
    def __init__(self, fsync: Callable[[], None], name: str) -> None:
        self._fsync = fsync
        self._cond = threading.Condition()
        self._requested = 0
        self._done = 0
        self._error: OSError | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=f"fsync-{name}", daemon=True)
        self._thread.start()

    @property
    def error(self) -> OSError | None:
        return self._error

    def request(self) -> None:
        with self._cond:
            self._requested += 1
            self._cond.notify_all()

    def wait(self) -> None:
        """Block until all requested fsyncs are done; re-raise an fsync failure."""
        with self._cond:
            target = self._requested
            while self._done < target and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
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
