"""Finding lines in a JSONL log without reading it from its start: the last line of one event
type, read backwards from a bound; the bounds of the last complete line; a line's number.

Every event line starts ``{"type":"<type>",`` and a JSON string cannot hold those quotes
unescaped (nor a raw newline), so a raw search for a newline followed by that start finds
exactly the lines of that type.
"""

from __future__ import annotations

import os

READ_CHUNK = 1 << 18
"""Bytes read at a time, backwards or forwards."""
FIRST_READ = 1 << 13
"""Bytes read first from the end for its last line."""


def type_prefix(event_type: str) -> bytes:
    """What precedes a line of ``event_type`` and begins it: a newline and its start."""
    return b'\n{"type":"' + event_type.encode() + b'",'


def last_line(
    fd: int, prefix: bytes, *, floor: int = 0, ceiling: int | None = None
) -> tuple[int, bytes] | None:
    """The offset and bytes (its newline included, if it has one) of the last line of the file
    that follows a newline and begins with ``prefix[1:]`` (``prefix`` starts with the newline),
    read backwards ``READ_CHUNK`` bytes at a time from ``ceiling`` (the
    file's end when None) down to ``floor``; None if there is none. Only lines starting at
    ``floor`` or later count (``floor`` is a line's start, past the header), and only bytes
    before ``ceiling`` are read (a line's end: a line beginning before it ends by it)."""
    size = READ_CHUNK
    end = os.fstat(fd).st_size if ceiling is None else ceiling
    low = max(floor - 1, 0)  # the newline before the first line that counts
    reach = len(prefix) - 1  # how far a match may run into the chunk after the one searched
    later = b""  # the start of that chunk
    while end > low:
        begin = max(low, end - size)
        data = os.pread(fd, end - begin, begin)
        tail = data[-reach:]
        across = (tail + later).rfind(prefix)  # a match running into the later chunk comes last
        if across >= 0:
            start = begin + len(data) - len(tail) + across + 1
            return start, read_line(fd, start)
        at = data.rfind(prefix)
        if at >= 0:
            line_end = data.find(b"\n", at + 1)
            if line_end >= 0:
                return begin + at + 1, data[at + 1 : line_end + 1]
            return begin + at + 1, read_line(fd, begin + at + 1)
        later = (tail + later)[:reach] if len(data) <= reach else data[:reach]
        end = begin
    return None


def read_line(fd: int, start: int) -> bytes:
    """The line of the file ``fd`` that starts at ``start``: through its newline, or to the end
    of the file when it has none (a torn line)."""
    parts: list[bytes] = []
    while data := os.pread(fd, READ_CHUNK, start):
        cut = data.find(b"\n")
        if cut >= 0:
            parts.append(data[: cut + 1])
            break
        parts.append(data)
        start += len(data)
    return b"".join(parts)


def last_complete_line(fd: int, size: int) -> tuple[int, int]:
    """(start, end) of the last line of the file's first ``size`` bytes that ends with its
    newline, found reading backwards (a few KiB first: lines are mostly short); (0, 0) when
    none does."""
    end, at, step = -1, size, min(FIRST_READ, READ_CHUNK)
    while at > 0:
        begin = max(0, at - step)
        data = os.pread(fd, at - begin, begin)
        limit = len(data)
        if end < 0:
            limit = data.rfind(b"\n")
            if limit >= 0:
                end = begin + limit + 1
        if end >= 0:
            cut = data.rfind(b"\n", 0, limit)
            if cut >= 0:
                return begin + cut + 1, end
        at, step = begin, min(2 * step, READ_CHUNK)
    return 0, max(end, 0)


def lines_before(fd: int, offset: int) -> int:
    """How many newlines the file holds before ``offset``."""
    count, at = 0, 0
    while at < offset and (data := os.pread(fd, min(READ_CHUNK, offset - at), at)):
        count += data.count(b"\n")
        at += len(data)
    return count
