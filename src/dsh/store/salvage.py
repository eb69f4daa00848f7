"""``dsh sessions repair``: salvage the valid prefix of a corrupt JSONL log.

A log that is bad in the middle refuses to load (docs/architecture.md, "The session log"), so
it cannot even be exported.
Salvage keeps the longest prefix that loads — the header and every event line up to the first one
that does not decode, fails its CRC seal, breaks the seq order or a per-event rule (or that the
caller's ``validate``
refuses, e.g. the surface fold) — and drops the rest, including a zero-filled tail left by a power
loss and a torn last line. It never works in place without a copy: the original bytes are first
copied to ``session.jsonl.before-repair-<time>`` (fsynced), then the kept prefix replaces the log
atomically. The report says exactly which lines were dropped and why, and how many of them are
intact (pass their CRC seals), with their line numbers in the copy.

Intact lines after a bad one are dropped too, never kept across a gap: a log's seqs are
contiguous and later events name earlier ones by seq (a tool result its call, a checkpoint the
span it replaces, a surface op the node it edits), so a log with a hole would fold into a
transcript the session never had, or not at all, and no event of an unreadable line can be
known to be one whose loss the fold tolerates. Only a prefix is a state the session was in.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dsh.errors import DshError, HeaderCorruptError, LogCorruptError, StoreError
from dsh.events import Event, decode_event_line, decode_events
from dsh.store.base import decode_header
from dsh.store.derived import drop_derived
from dsh.store.integrity import check_line, check_row
from dsh.store.jsonl import LOCK_NAME, JsonlStore, fsync_dir, write_synced
from dsh.store.locking import acquire_write_lock

Validator = Callable[[Sequence[Event]], int | None]
"""Given the decoded prefix, the index of the first event it refuses (None: all fine)."""


@dataclass
class SalvageReport:
    """What ``salvage_session`` kept and dropped."""

    session_id: str
    path: Path
    kept_lines: int
    """Lines kept, the header included."""
    total_lines: int
    """Complete lines in the original file."""
    dropped_bytes: int = 0
    torn_bytes: int = 0
    zero_bytes: int = 0
    first_bad_line: int | None = None
    reason: str | None = None
    copy: Path | None = None
    notes: list[str] = field(default_factory=list)
    intact: list[int] = field(default_factory=list)
    """Numbers of the dropped lines that pass their CRC seals (the same in the copy)."""

    @property
    def changed(self) -> bool:
        return self.copy is not None

    def _where_intact(self) -> str:
        """Where the intact dropped lines are, and a command that prints them."""
        ranges = spans(self.intact)
        script = ";".join(f"{part.replace('-', ',')}p" for part in ranges.split(", "))
        one = len(self.intact) == 1
        return (
            f"{'it is line' if one else 'they are lines'} {ranges} of the copy {self.copy} "
            f"(`sed -n '{script}' {self.copy}` prints {'it' if one else 'them'})"
        )

    def lines(self) -> list[str]:
        """The report as plain lines for the terminal."""
        if not self.changed:
            return [f"session {self.session_id}: the log loads as it is; nothing to repair"]
        dropped = self.total_lines - self.kept_lines
        out = [f"session {self.session_id}: copied the original to {self.copy}"]
        out.append(
            f"kept lines 1-{self.kept_lines} (the header and {self.kept_lines - 1} events, "
            f"seq 0-{self.kept_lines - 2})"
            if self.kept_lines > 1
            else "kept line 1 (the header; no event survived)"
        )
        if dropped:
            out.append(
                f"dropped lines {self.kept_lines + 1}-{self.total_lines} ({dropped} lines, "
                f"{self.dropped_bytes} bytes); "
                + first_bad("line", self.first_bad_line, self.reason)
            )
            out.append(intact_words(len(self.intact), dropped, "line", self._where_intact()))
        if self.zero_bytes:
            out.append(f"dropped a zero-filled tail of {self.zero_bytes} bytes (power loss)")
        if self.torn_bytes:
            out.append(f"dropped a torn last line of {self.torn_bytes} bytes (interrupted write)")
        out.extend(self.notes)
        return out


def salvage_session(
    store: JsonlStore, session_id: str, *, validate: Validator | None = None
) -> SalvageReport:
    """Cut the log of ``session_id`` to its longest loadable prefix (see the module doc).

    Holds the session's write lock throughout, so no writer runs meanwhile. Raises
    ``LogCorruptError`` if even the header is unreadable (there is nothing to keep).
    """
    path = store.log_path(session_id)
    lock = acquire_write_lock(path.parent / LOCK_NAME, session_id)
    try:
        data = _read(path)
        report = plan_salvage(data, session_id=session_id, path=path, validate=validate)
        if report.kept_lines < report.total_lines or report.torn_bytes or report.zero_bytes:
            report.copy = _copy_aside(path, data)
            kept = _prefix(data, report.kept_lines)
            _replace(path, kept)
            report.notes.extend(
                f"dropped {p} (rebuilt on use)" for p in drop_derived(store.home, session_id)
            )
        return report
    finally:
        lock.release()


def plan_salvage(
    data: bytes, *, session_id: str, path: Path, validate: Validator | None = None
) -> SalvageReport:
    """Decide what to keep of ``data`` (the log's bytes) without writing anything."""
    end = data.rfind(b"\n") + 1
    tail = data[end:]
    lines = data[:end].split(b"\n")[:-1]
    if not lines:
        raise HeaderCorruptError(
            f"{path}: line 1: missing session header; nothing to salvage", line=1
        )
    # raises: nothing to keep without the header
    header = check_line(lines[0], number=1, where=f"{path}: ")
    decode_header(header, where=f"{path}: line 1")
    body = lines[1:]
    zeros = len(tail) if _zero_filled(tail) else 0
    torn = 0 if zeros else len(tail)
    count = len(body)
    while count and _zero_filled(body[count - 1]):
        count -= 1
    zeros += sum(len(raw) + 1 for raw in body[count:])
    kept, reason, canonical = _loadable_prefix(body[:count])
    if validate is not None and kept:
        bad = validate(decode_events(canonical[:kept], first_line=2))
        if bad is not None:
            kept, reason = bad, f"line {bad + 2} (seq {bad}): refused by the surface fold"
    report = SalvageReport(
        session_id, path, kept_lines=1 + kept, total_lines=1 + count, zero_bytes=zeros
    )
    report.torn_bytes = torn
    if kept < count:
        report.first_bad_line = kept + 2
        report.reason = reason
        report.dropped_bytes = sum(len(raw) + 1 for raw in body[kept:count])
        report.intact = [kept + 2 + i for i, raw in enumerate(body[kept:count]) if intact(raw)]
    return report


def intact(raw: bytes) -> bool:
    """Whether a stored line (row) passes its CRC seal and decodes as an event on its own."""
    try:
        decode_event_line(check_line(raw, number=0, where=""), line=0)
    except DshError:
        return False
    return True


def intact_words(count: int, dropped: int, noun: str, where: str) -> str:
    """How many of the ``dropped`` lines (events) are intact, and ``where`` they are: ``7 of
    the 8 dropped lines are intact (each passes its CRC seal and decodes) but went from the
    first bad one on, as a log keeps no gap …; they are lines 10-16 of the copy …``."""
    if not count:
        return f"none of the {dropped} dropped {noun}s passes its CRC seal and decodes"
    some = f"all {dropped}" if count == dropped else f"{count} of the {dropped}"
    verb = (
        "is intact (it passes its CRC seal and decodes)"
        if count == 1
        else "are intact (each passes its CRC seal and decodes)"
    )
    return (
        f"{some} dropped {noun}s {verb} but went from the first bad one on, as a log keeps no "
        f"gap (later events name earlier ones by seq); {where}"
    )


def spans(numbers: Sequence[int]) -> str:
    """``10-16`` or ``9, 11-16``: sorted numbers as ranges (none: empty)."""
    if not numbers:
        return ""
    out: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        out.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(out)


def _loadable_prefix(lines: Sequence[bytes]) -> tuple[int, str | None, list[bytes]]:
    """How many event lines load (seal, decode, seq = position, per-event rules), why not more,
    and the loadable lines without their seals."""
    return loadable_prefix(lines, first=2, unit="line")


def loadable_prefix(
    lines: Sequence[bytes], *, first: int, unit: str
) -> tuple[int, str | None, list[bytes]]:
    """How many stored events load, why not more, and the loadable ones without their seals.
    ``first`` is the number the store gives the first event (JSONL: line 2; SQLite: seq 0) and
    ``unit`` what it calls it (``line``/``seq``), so the reason names the place as the store
    does."""
    count, reason = len(lines), None
    canonical: list[bytes] = []
    for index, raw in enumerate(lines):
        try:
            if unit == "line":
                line = check_line(raw, number=index + first, where="")
            else:  # a SQLite row: its seal's mismatch says "the row changed", as a load does
                line = check_row(raw, seq=index + first, where="")
            event = decode_event_line(line, line=index + first)
        except DshError as exc:
            count, reason = index, _in_units(str(exc), unit)
            break
        if event.seq != index:
            count = index
            reason = f"{unit} {index + first}: expected seq {index} but found seq {event.seq}"
            break
        canonical.append(line)
    while count:
        try:
            decode_events(canonical[:count], first_line=first)
            return count, reason, canonical
        except LogCorruptError as exc:  # a rule across lines: cut before the line it names
            if exc.line is None or not first <= exc.line < count + first:
                return 0, _in_units(str(exc), unit), canonical
            count, reason = exc.line - first, _in_units(str(exc), unit)
    return 0, reason, canonical


def _in_units(message: str, unit: str) -> str:
    """The codec names a place ``line N``; the SQLite store calls it ``seq N``."""
    return message if unit == "line" else message.replace("line ", f"{unit} ", 1)


def first_bad(unit: str, number: int | None, reason: str | None) -> str:
    """``first bad line 8: checksum mismatch``: the place once, where the reason (which names
    the place the codec stopped at) already begins with it."""
    place = f"{unit} {number}"
    named = reason is not None and re.match(rf"{place}\b", reason) is not None
    return f"first bad {reason}" if named else f"first bad {place}: {reason}"


def _zero_filled(raw: bytes) -> bool:
    return bool(raw) and not raw.strip(b"\x00")


def _prefix(data: bytes, line_count: int) -> bytes:
    position = 0
    for _ in range(line_count):
        position = data.index(b"\n", position) + 1
    return data[:position]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _copy_aside(path: Path, data: bytes) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for attempt in range(100):
        suffix = f"{stamp}" if attempt == 0 else f"{stamp}-{attempt}"
        target = path.with_name(f"{path.name}.before-repair-{suffix}")
        try:
            write_synced(target, data, exclusive=True)
        except FileExistsError:
            continue
        return target
    raise StoreError(f"cannot find a free name for a copy of {path}")


def _replace(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".repair-tmp")
    write_synced(temporary, data, exclusive=False)
    os.replace(temporary, path)
    fsync_dir(path.parent)
