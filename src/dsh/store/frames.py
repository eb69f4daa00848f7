"""The record frames of dsh's derived files (``dsh.recall.span_file``, the recall spans;
``dsh.compaction.anchor_file``, the anchor index): what each file adds after its first line.

A frame is a 12-byte prefix — the header's length, the body's length, the CRC32 of header and
body, little-endian — then the header and the body. A reader takes the frames in order and
stops at the first that is cut short or fails its CRC (a torn append, a damaged disk): what
follows is derived from the log again. What a header and a body hold is the file's own.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

_PREFIX = struct.Struct("<III")


class Frame(NamedTuple):
    header: memoryview
    body: memoryview
    body_start: int
    """Where the body begins in the file's bytes."""
    stop: int
    """Where the frame ends (the next one begins)."""


def frame_bytes(header: bytes, body: bytes) -> tuple[bytes, bytes, bytes]:
    """A frame as its three parts (prefix, header, body), to be written in that order."""
    crc = zlib.crc32(body, zlib.crc32(header))
    return _PREFIX.pack(len(header), len(body), crc), header, body


def read_frames(data: bytes | memoryview | mmap.mmap, start: int) -> Iterator[Frame]:
    """The whole, CRC-checked frames of ``data`` from ``start`` on, up to the first that is not."""
    view = memoryview(data)
    position = start
    while position + _PREFIX.size <= len(view):
        header_size, body_size, crc = _PREFIX.unpack_from(view, position)
        header_start = position + _PREFIX.size
        body_start = header_start + header_size
        stop = body_start + body_size
        if stop > len(view) or zlib.crc32(view[header_start:stop]) != crc:
            return  # torn or damaged
        yield Frame(view[header_start:body_start], view[body_start:stop], body_start, stop)
        position = stop
