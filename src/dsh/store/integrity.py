"""Per-line CRC32 seals for JSONL logs: a changed byte refuses the load, naming the line.

The JSONL store writes every line (the header and each event) as its canonical JSON with one
more key at the end, ``"crc"``: eight lowercase hex digits of ``zlib.crc32`` over the canonical
line (the line as it would be without that key). The codec does not know the key (event structs
forbid unknown fields), so the store checks and strips the key before decoding: what the
codec sees, and what the SQLite store and exports hold, is the canonical line.

A line without a seal loads as before (logs written before seals existed, or a line written by
hand). A damaged seal cannot pass for a missing one: a changed hex digit fails the comparison,
and any other change to the ``,"crc":"…"`` text either breaks the JSON or leaves a key the codec
refuses.
"""

from __future__ import annotations

import re
import struct
import zlib
from itertools import repeat

from dsh.errors import LogCorruptError

_MARK = b',"crc":"'
_SEAL_SIZE = len(_MARK) + 8 + 2  # ,"crc":"  + 8 hex digits + "}
_MARK_SIZE = len(_MARK)
_HEX = b"0123456789abcdef"


_SEALED = b'%s,"crc":"%08x"}'
_SEALED_LINE = _SEALED + b"\n"


def seal(line: bytes) -> bytes:
    """``line`` (a canonical JSON object, no newline) with its ``"crc"`` key appended."""
    return _SEALED % (line[:-1], zlib.crc32(line))


def sealed_lines(lines: list[bytes]) -> bytes:
    """``lines`` sealed as :func:`seal` does, each ended by a newline, as one buffer (what one
    append writes)."""
    crc32 = zlib.crc32
    return b"".join([_SEALED_LINE % (line[:-1], crc32(line)) for line in lines])


def unseal(line: bytes) -> tuple[bytes, int | None]:
    """The canonical line and the CRC its seal names (``None``: the line has no seal)."""
    if len(line) <= _SEAL_SIZE or not line.endswith(b'"}'):
        return line, None
    start = len(line) - _SEAL_SIZE
    if line[start : start + len(_MARK)] != _MARK:
        return line, None
    digits = line[start + _MARK_SIZE : -2]
    if digits.translate(None, _HEX):  # not only lowercase hex digits
        return line, None
    return line[:start] + b"}", int(digits, 16)


def check_line(line: bytes, *, number: int, where: str) -> bytes:
    """The canonical bytes of stored line ``number``; refuses a line whose seal does not match."""
    canonical, crc = unseal(line)
    if crc is None:
        return canonical
    actual = zlib.crc32(canonical)
    if actual != crc:
        raise _mismatch(number, where, crc, actual)
    return canonical


def check_row(body: bytes, *, seq: int, where: str) -> bytes:
    """:func:`check_line` for a SQLite event row, named by its seq as the SQLite store names
    rows (``{where}seq N: checksum mismatch …``)."""
    canonical, crc = unseal(body)
    if crc is None:
        return canonical
    actual = zlib.crc32(canonical)
    if actual != crc:
        raise LogCorruptError(
            f"{where}seq {seq}: checksum mismatch (stored {crc:08x}, content {actual:08x}); "
            "the row changed after it was written",
            seq=seq,
        )
    return canonical


def check_rows(bodies: list[bytes], *, first_seq: int, where: str) -> list[bytes]:
    """:func:`check_row` over consecutive rows from ``first_seq``: when every row is sealed and
    matches, checked at once (the fast path of :func:`unseal_counted`, no Python code per
    row); else row by row, naming the first bad one."""
    if bodies:
        data = b"\n".join(bodies) + b"\n"
        fast = _unseal_all_sealed(data, 0, len(data))
        if fast is not None and fast[1] == len(bodies):
            return fast[0].split(b"\n")[:-1]
    return [check_row(body, seq=first_seq + i, where=where) for i, body in enumerate(bodies)]


_SEAL_AT_LINE_END = re.compile(rb',"crc":"([0-9a-f]{8})"\}\n')
"""A seal and its newline. A JSON string holds no raw newline or bare quote, so in a line of
JSON this can only match at the line's end."""


def unseal_body(data: bytes, start: int, end: int, *, first_line: int, where: str) -> bytes:
    """``data[start:end]`` (complete lines) with every line checked as :func:`check_line` does
    and its seal removed."""
    return unseal_counted(data, start, end, first_line=first_line, where=where)[0]


def unseal_counted(
    data: bytes, start: int, end: int, *, first_line: int, where: str
) -> tuple[bytes, int]:
    """:func:`unseal_body` and the number of lines in the body.

    Fast path, when every line is sealed: the seals are cut out in one regex split, the CRCs
    are computed and compared with the stored digits with no Python code per line, and the
    lines are the seals (no newline is left between two: none needs counting). Otherwise (a log
    written before seals, a line whose seal does not read as one, a mismatch) the lines are
    checked one by one, which gives the same body or names the first bad line."""
    fast = _unseal_all_sealed(data, start, end)
    if fast is not None:
        return fast
    body = _unseal_lines(data, start, end, first_line, where)
    return body, data.count(b"\n", start, end)


def _unseal_all_sealed(data: bytes, start: int, end: int) -> tuple[bytes, int] | None:
    """The unsealed body and its line count if every line ends in a seal that matches; None
    otherwise."""
    body = data[start:end] if start or end != len(data) else data
    parts = _SEAL_AT_LINE_END.split(body)
    if parts[-1]:
        return None  # the body does not end with a seal (the last part follows the last one)
    kept = parts[0:-1:2]  # each line's canonical JSON but its closing brace
    if not all(kept):
        return None  # a line that is only a seal: checked (and refused) line by line
    if b"\n" in b"".join(kept):
        return None  # a line without a seal, before a sealed one
    crc32 = zlib.crc32
    actual = list(map(crc32, repeat(b"}"), map(crc32, kept)))
    # Compared as bytes: the CRCs as 4-byte big-endian words against the stored hex digits,
    # read at once (the pattern let only lowercase hex digits through).
    stored = bytes.fromhex(b"".join(parts[1::2]).decode("ascii"))
    if struct.pack(f">{len(actual)}I", *actual) != stored:
        return None  # a mismatch: found again, with its line number, line by line
    lines = len(kept)
    kept.append(b"")
    return b"}\n".join(kept), lines


def _unseal_lines(data: bytes, start: int, end: int, first_line: int, where: str) -> bytes:
    view = memoryview(data)
    parts: list[memoryview | bytes] = []
    append, find, starts, crc32 = parts.append, data.find, data.startswith, zlib.crc32
    number = first_line
    position = start
    while position < end:
        newline = find(b"\n", position, end)
        mark = newline - _SEAL_SIZE
        if (
            mark > position
            and starts(_MARK, mark)
            and data[newline - 1] == 0x7D  # }
            and data[newline - 2] == 0x22  # "
            and not (digits := data[mark + _MARK_SIZE : newline - 2]).translate(None, _HEX)
        ):
            kept = view[position:mark]
            actual = crc32(b"}", crc32(kept))
            if actual != int(digits, 16):
                raise _mismatch(number, where, int(digits, 16), actual)
            append(kept)
            append(b"}\n")
        else:
            append(view[position : newline + 1])
        position = newline + 1
        number += 1
    return b"".join(parts)


def _mismatch(number: int, where: str, stored: int, actual: int) -> LogCorruptError:
    return LogCorruptError(
        f"{where}line {number}: checksum mismatch (stored {stored:08x}, content {actual:08x}); "
        "the line changed after it was written",
        line=number,
    )
