"""The newest history page of a stored JSONL session, read from the end of its log.

Opening a session shows its newest page; reading the whole log for it makes the first render
(a web page, the TUI's first paint) as slow as the log is long. ``newest_page`` reads the
log's last bytes instead (quadrupling until the page's cut falls inside them) and cuts the
page with the very ``history_page`` of ``dsh.transcript.history``, so it is the page a full
load would give. Anything unusual (a store
without files, a line that does not check out) answers None and the caller loads the log.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from dsh.errors import DshError
from dsh.events import Event, decode_event_line
from dsh.store.integrity import check_line
from dsh.transcript.history import HistoryPage, history_page

FIRST_READ_BYTES = 256 * 1024


class _NeedMore(Exception):
    """The page reaches before the events read so far."""


class _Suffix(Sequence[Event]):
    """The log's events from ``first`` on, indexed by seq (earlier seqs: ``_NeedMore``)."""

    def __init__(self, events: list[Event], complete: bool) -> None:
        self.events = events
        self.first = events[0].seq
        self.complete = complete

    def __len__(self) -> int:
        return self.first + len(self.events)

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start = index.start or 0
            if start < self.first and not self.complete:
                raise _NeedMore
            return self.events[max(0, start - self.first) : index.stop - self.first]
        if index < self.first:
            raise _NeedMore
        return self.events[index - self.first]


def newest_page(
    path: Path, max_messages: int, *, first_read: int = FIRST_READ_BYTES
) -> tuple[HistoryPage, int] | None:
    """(the newest page, the last seq) of the JSONL log at ``path``, or None to load it."""
    size = first_read
    while True:
        try:
            suffix = _read_suffix(path, size)
            if suffix is None:
                return None
            return history_page(suffix, None, max_messages), len(suffix) - 1
        except _NeedMore:
            size *= 4
        except (OSError, DshError):
            return None


def _read_suffix(path: Path, size: int) -> _Suffix | None:
    with path.open("rb") as handle:
        total = os.fstat(handle.fileno()).st_size
        start = max(0, total - size)
        handle.seek(start)
        data = handle.read()
    end = data.rfind(b"\n") + 1  # a torn last line is not part of the log
    lines = data[:end].split(b"\n")[:-1]
    lines = lines[1:]  # a partial first line, or (from the start) the header
    if not lines:
        if start > 0:
            raise _NeedMore
        return None
    events: list[Event] = []
    for raw in lines:
        event = decode_event_line(check_line(raw, number=0, where=f"{path}: "), line=0)
        if events and event.seq != events[-1].seq + 1:
            return None
        events.append(event)
    if start == 0 and events[0].seq != 0:
        return None
    return _Suffix(events, complete=start == 0)
