"""A tolerant reader of the TypeScript harness's ``session.jsonl``: bytes → dsh events.

It accepts what that harness writes (docs/interop.md): a version-0 header with
``delegationDepth`` and an optional ``cwd``; packed chunk rows; its stream chunks, tool-result
roles, block summaries and ``{start, end}`` ranges; every event type of its vocabulary. The
result is checked with dsh's own codec and surface fold before anything is stored, so a log that
converts is a log dsh could have written. Any problem raises :class:`UpstreamFormatError` naming
the line, and nothing has been written by then.

It also reads a *dsh* log (version 1: ``dsh sessions export --format jsonl``, or a store's own
``session.jsonl`` with its CRC seals, each checked), which needs no conversion: its events are
decoded and folded the same way, its undo records dropped and its route dropped by the importer,
so a dsh log from elsewhere is exactly as trusted as a foreign one (docs/interop.md).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dsh.errors import DshError, EventError, LogCorruptError, json_problem
from dsh.events import (
    CompactionSummaryEvent,
    Event,
    OpaqueEvent,
    UserMessageEvent,
    decode_event_line,
    encode_json,
    event_type_of,
    is_checkpoint_event,
    validate_event_shape,
)
from dsh.interop.packing import PACKED_ROW_TYPES, PackedRowError, expand_row
from dsh.interop.to_dsh import SOFT_TYPES, SURFACE_TYPES, MappingError, opaque, to_dsh
from dsh.store.base import FORMAT_VERSION, decode_header
from dsh.store.integrity import check_line
from dsh.surface.projection import SurfaceProjection

UPSTREAM_VERSION = 0
LATEST_CREATED_AT = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z in epoch milliseconds: the last creation time a session list can
show (a later one made ``dsh sessions list`` fail for every session)."""
_LINE_BREAKING = ("\n", "\r", "\x00")
"""Characters a recorded workspace may not hold: a session list and a report show it on one
line, and no directory can be named with a NUL."""


UNDO_META = "undo"
"""The tool-result meta key of a file tool's undo record (``dsh.tools.undo_record.UNDO_META``,
which this package may not import)."""


class UpstreamFormatError(DshError):
    """A TypeScript-harness log that cannot be imported (the message names the line)."""


@dataclass
class UpstreamHeader:
    id: str
    created_at: int
    cwd: str | None
    extras: dict[str, Any]
    """Header fields dsh's header has no place for (origin, delegationDepth, agentPreset…)."""


@dataclass
class Conversion:
    """The converted log and what the conversion did."""

    header: UpstreamHeader
    events: list[Event]
    lines: int
    converted: Counter[str] = field(default_factory=Counter)
    """dsh events written, by type."""
    kept_opaque: Counter[str] = field(default_factory=Counter)
    """Upstream events kept as opaque ignorable events, by (stored) type."""
    notes: Counter[str] = field(default_factory=Counter)
    """Every lossy or renaming step, counted."""
    warnings: list[str] = field(default_factory=list)
    dsh_log: bool = False
    """True when the log was a dsh log (version 1), read without conversion."""


def _fail(name: str, line: int, message: str) -> UpstreamFormatError:
    return UpstreamFormatError(f"{name}: line {line}: {message}")


def _check_text(data: bytes, name: str) -> None:
    """Refuse a file that is not UTF-8 text (an image, a database, a compressed log) at its
    first such byte, rather than as JSON it never was or as an empty file."""
    bad = data.find(b"\x00")  # valid UTF-8, and not text
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        line = data.count(b"\n", 0, bad) + 1
        raise _fail(
            name,
            line,
            f"not a text file (byte 0x{data[bad]:02x} at offset {bad:,}): a session log is "
            "UTF-8 JSON lines",
        )


def _raw_lines(data: bytes, name: str, warnings: list[str]) -> list[tuple[int, bytes]]:
    """(line number, bytes) of every non-empty line. A torn last line (no newline) is kept if
    it is whole JSON, else dropped with a warning, unless it is the only line: then the file
    is not a log at all."""
    raw_lines = data.split(b"\n")
    torn = raw_lines.pop() if raw_lines else b""
    lines = [(number, raw) for number, raw in enumerate(raw_lines, start=1) if raw.strip()]
    if torn.strip():
        try:
            _json(torn)
            lines.append((len(raw_lines) + 1, torn))
        except msgspec.DecodeError as exc:
            if not lines:
                problem = json_problem(exc, torn)
                raise _fail(name, len(raw_lines) + 1, f"not valid JSON ({problem})") from exc
            warnings.append(
                f"dropped a torn last line ({len(torn)} bytes) left by an interrupted write"
            )
    return lines


def _parse(raw: bytes, line: int, name: str) -> Any:
    try:
        return _json(raw)
    except msgspec.DecodeError as exc:
        raise _fail(name, line, f"not valid JSON ({json_problem(exc, raw)})") from exc


_json = msgspec.json.Decoder().decode
"""Strict JSON: no NaN or infinities, so whatever converts is lossless."""


def _header(value: Any, name: str, line: int = 1) -> UpstreamHeader:
    if not isinstance(value, dict) or value.get("type") != "session":
        raise _fail(name, line, "missing the session header (type 'session')")
    version = value.get("version")
    if version not in (UPSTREAM_VERSION, FORMAT_VERSION) or isinstance(version, bool):
        raise _fail(
            name,
            line,
            f"session format version {version!r} is neither the TypeScript harness's "
            f"({UPSTREAM_VERSION}) nor dsh's ({FORMAT_VERSION})"
            + (": a newer dsh wrote it" if isinstance(version, int) and version > 1 else ""),
        )
    if version == FORMAT_VERSION:  # dsh's own header: its codec checks every field
        try:
            decode_header(encode_json(value), where="")
        except LogCorruptError as exc:
            raise _fail(name, line, f"not a valid dsh session header ({exc.__cause__})") from exc
    ident, created, cwd = value.get("id"), value.get("createdAt"), value.get("cwd")
    if not isinstance(ident, str) or not ident:
        raise _fail(name, 1, "the session header has no id")
    if (
        not isinstance(created, int)
        or isinstance(created, bool)
        or not 0 <= created <= LATEST_CREATED_AT
    ):
        raise _fail(
            name,
            1,
            f"the session header's createdAt is not epoch milliseconds up to year 9999: "
            f"{created!r}",
        )
    if cwd is not None and not isinstance(cwd, str):
        raise _fail(name, 1, f"the session header's cwd is not text: {cwd!r}")
    if cwd and not os.path.isabs(cwd):  # an empty cwd is read as none (the current directory)
        raise _fail(name, 1, f"the session header's cwd is not an absolute path: {cwd!r}")
    if cwd and any(char in cwd for char in _LINE_BREAKING):
        raise _fail(name, 1, f"the session header's cwd holds a line break or NUL: {cwd!r}")
    extras = {
        k: v
        for k, v in value.items()
        if k not in ("type", "version", "id", "cwd", "createdAt", "crc")
    }
    return UpstreamHeader(id=ident, created_at=created, cwd=cwd, extras=extras)


def expand_rows(parsed: list[tuple[int, Any]], name: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, upstream event) per seq: packed rows expanded, seqs checked to be 0, 1, 2, …"""
    out: list[tuple[int, dict[str, Any]]] = []
    for line, value in parsed:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise _fail(name, line, "not an event object")
        if value["type"] in PACKED_ROW_TYPES:
            try:
                events = expand_row(value)
            except PackedRowError as exc:
                raise _fail(name, line, str(exc)) from exc
        else:
            events = [value]
        for event in events:
            if event.get("seq") != len(out):
                raise _fail(
                    name,
                    line,
                    f"expected seq {len(out)} but found seq {event.get('seq')!r} "
                    "(a gap or reordering in the log)",
                )
            out.append((line, event))
    return out


def read_upstream(data: bytes, *, name: str) -> Conversion:
    """Convert a TypeScript-harness log, or check a dsh log; raises UpstreamFormatError naming
    the line."""
    _check_text(data, name)
    warnings: list[str] = []
    lines = _raw_lines(data, name, warnings)
    if not lines:
        raise _fail(name, 1, "empty file (no session header)")
    first, raw = lines[0]
    value = _parse(_unsealed(raw, first, name), first, name)
    header = _header(value, name, first)
    result = Conversion(header=header, events=[], lines=lines[-1][0], warnings=warnings)
    if value["version"] == FORMAT_VERSION:
        result.dsh_log = True
        records = _dsh_records(lines[1:], name)
    else:
        records = expand_rows([(n, _parse(raw, n, name)) for n, raw in lines[1:]], name)
    surface = SurfaceProjection()
    for line, record in records:
        event = _convert(record, line, name, result)
        if event_type_of(event) in SURFACE_TYPES:
            try:
                surface.apply(event)
                if is_checkpoint_event(event):
                    _check_summaries(result.events, event, surface.replacements[-1].shadowed_seqs)
            except EventError as exc:
                raise _fail(name, line, str(exc)) from exc
        result.events.append(event)
    return result


def _unsealed(raw: bytes, line: int, name: str) -> bytes:
    """A dsh store line without its CRC seal, checked (a line without one is returned as is)."""
    try:
        return check_line(raw, number=line, where="")
    except LogCorruptError as exc:
        raise _fail(name, line, _strip_line(str(exc), line)) from exc


def _dsh_records(lines: list[tuple[int, bytes]], name: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, event dict) of a dsh log's events: seals checked and removed, seqs 0, 1, 2, …"""
    out: list[tuple[int, dict[str, Any]]] = []
    for line, raw in lines:
        value = _parse(_unsealed(raw, line, name), line, name)
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise _fail(name, line, "not an event object")
        if value.get("seq") != len(out):
            raise _fail(
                name,
                line,
                f"expected seq {len(out)} but found seq {value.get('seq')!r} "
                "(a gap or reordering in the log)",
            )
        out.append((line, value))
    return out


def _check_summaries(
    events: list[Event], checkpoint: UserMessageEvent, replaced: tuple[int, ...]
) -> None:
    """The summaries a checkpoint cites must list exactly the nodes it replaced: recall reads a
    checkpoint's originals from its summary's ``shadowedSeqs``."""
    for seq in checkpoint.source_event_seqs or ():
        summary = events[seq]
        if isinstance(summary, CompactionSummaryEvent) and sorted(
            summary.data.shadowed_seqs
        ) != sorted(replaced):
            raise EventError(
                f"seq {checkpoint.seq} (user/message): the checkpoint replaces nodes "
                f"{list(replaced)}, but its compaction/summary seq {seq} lists shadowedSeqs "
                f"{list(summary.data.shadowed_seqs)}"
            )


def _convert(record: dict[str, Any], line: int, name: str, result: Conversion) -> Event:
    notes: Counter[str] = Counter()
    if result.dsh_log:  # dsh's own event: nothing to convert
        mapped, is_opaque = record, False
    else:
        try:
            mapped, is_opaque = to_dsh(record, notes)
        except MappingError as exc:
            raise _fail(name, line, f"seq {record.get('seq')} ({record['type']}): {exc}") from exc
    if mapped.get("type") == "tool/result":
        _drop_undo(mapped.get("data"), notes)
    try:
        event = _decode(mapped, line)
    except (LogCorruptError, EventError) as exc:
        if result.dsh_log or record["type"] not in SOFT_TYPES:
            raise _fail(name, line, _strip_line(str(exc), line)) from exc
        notes = Counter({f"{record['type']} of another shape kept opaque": 1})
        event, is_opaque = _decode(opaque(record, renamed=True), line), True
    if result.dsh_log:
        is_opaque = isinstance(event, OpaqueEvent)
    result.notes.update(notes)
    kind = event_type_of(event)
    (result.kept_opaque if is_opaque else result.converted)[kind] += 1
    assert is_opaque == isinstance(event, OpaqueEvent)
    return event


def _drop_undo(data: Any, notes: Counter[str]) -> None:
    """Drop a tool result's undo record (``meta.undo``, ``dsh.tools.undo_record``), counting it:
    ``dsh undo`` acts on the paths and contents a record names, and an imported log chose them
    all, its workspace (``cwd``) included, so no record of it is believed (a file under a
    ``cwd`` of ``/home/you`` would do: ``~/.bashrc``). Its turns' changes cannot be undone."""
    meta = data.get("meta") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or meta.get(UNDO_META) is None:
        return
    del meta[UNDO_META]
    notes["dropped undo record (an imported log's file changes cannot be undone)"] += 1


def _decode(mapped: dict[str, Any], line: int) -> Event:
    event = decode_event_line(encode_json(mapped), line=line)
    validate_event_shape(event)
    return event


def _strip_line(message: str, line: int) -> str:
    prefix = f"line {line}"
    return message[len(prefix) :].lstrip(": ") if message.startswith(prefix) else message
