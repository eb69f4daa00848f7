"""A SQLite session's event rows decoded as they are read (``SqliteStore.open``): about
``ROWS_BYTES`` of bodies at a time are checked against their seals and decoded, then let go,
so opening a session costs about the memory of its events, as a JSONL load does
(``decode_event_chunks``), not every row's body held at once besides their joined and unsealed
copies.

The events, and the error of a log that does not load, are those of checking and decoding all
the rows at once (what the open did before): every row's seq first (the first one out of place:
a gap or reordering), then every body's conversion to bytes, then every seal (the first row that
changed), then every body's decoding (the first that does not decode), then the log's rules over
all the decoded events (``check_events``). So a fault found in a batch does not end the read: a
fault of an earlier kind in a later row is the one reported, as it was when every row was held.
After a bad seal the rows left are only gap-checked and converted; after a row that does not
decode, only checked, not decoded. Errors name the row's seq (where a JSONL error names the line).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dsh.errors import LogCorruptError, UnknownEventTypeError
from dsh.events import Event, check_events, decode_events_unchecked
from dsh.store.integrity import check_rows

ROWS_BYTES = 1 << 18
"""Bytes of row bodies checked and decoded at a time (as ``jsonl.READ_CHUNK``)."""


def decode_rows(rows: Iterable[tuple[Any, Any]], session_id: str) -> list[Event]:
    """The events of a session's ``(seq, body)`` rows in seq order (a cursor, read once)."""
    where = f"session {session_id}: "
    events: list[Event] = []
    unconvertible: TypeError | None = None  # a body that is not a blob, nor bytes-like
    refused: LogCorruptError | None = None  # the first row whose seal does not match
    undecodable: LogCorruptError | None = None  # the first row that does not decode
    for first, bodies in _batches(rows, session_id):
        if unconvertible is not None:
            continue
        try:
            raw = [bytes(body) for body in bodies]
        except TypeError as exc:
            unconvertible = exc
            continue
        if refused is not None:
            continue
        try:
            lines = check_rows(raw, first_seq=first, where=where)
        except LogCorruptError as exc:
            refused = exc
            continue
        del raw
        if undecodable is None:
            try:
                events.extend(decode_events_unchecked(lines, first_line=first))
            except LogCorruptError as exc:
                undecodable, events = exc, []
    if unconvertible is not None:
        raise unconvertible
    if refused is not None:
        raise refused
    try:
        if undecodable is not None:
            raise undecodable
        check_events(events, first_line=0)
    except UnknownEventTypeError as exc:  # keep the class: callers tell "newer format" apart
        raise UnknownEventTypeError(
            exc.event_type,
            seq=exc.seq if exc.seq is not None else exc.line,
            context=f"session {session_id}",
        ) from exc
    except LogCorruptError as exc:
        # first_line=0 makes "line N" equal the row's seq; say so plainly.
        message = str(exc).replace("line ", "seq ", 1)
        raise LogCorruptError(f"session {session_id}: {message}", seq=exc.line) from exc
    return events


def _batches(rows: Iterable[tuple[Any, Any]], session_id: str) -> Iterator[tuple[int, list[Any]]]:
    """The rows' bodies, about ``ROWS_BYTES`` at a time, each batch with its first seq; a row
    whose seq is not its position raises as soon as it is read."""
    batch: list[Any] = []
    size = first = 0
    for position, (seq, body) in enumerate(rows):
        if seq != position:
            raise LogCorruptError(
                f"session {session_id}: expected seq {position} but found seq {seq} "
                "(a gap in the log)",
                seq=seq,
            )
        batch.append(body)
        size += len(body) if isinstance(body, bytes) else 1
        if size >= ROWS_BYTES:
            yield first, batch
            first, batch, size = position + 1, [], 0
    if batch:
        yield first, batch
