"""A tolerant reader of the TypeScript harness's ``session.jsonl``: bytes → dsh events.

It accepts what that harness writes (docs/interop.md): a version-0 header with
``delegationDepth`` and an optional ``cwd``; packed chunk rows; its stream chunks, tool-result
roles, block summaries and ``{start, end}`` ranges; every event type of its vocabulary. The
result is checked with dsh's own codec and surface fold before anything is stored, so a log that
converts is a log dsh could have written. Any problem raises :class:`UpstreamFormatError` naming
the line, and nothing has been written by then.
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


def _fail(name: str, line: int, message: str) -> UpstreamFormatError:
    return UpstreamFormatError(f"{name}: line {line}: {message}")


def _parse_lines(data: bytes, name: str, warnings: list[str]) -> list[tuple[int, Any]]:
    """(line number, JSON value) of every non-empty line; a torn last line is dropped."""
    raw_lines = data.split(b"\n")
    torn = raw_lines.pop() if raw_lines else b""
    parsed = []
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            parsed.append((number, _json(raw)))
        except msgspec.DecodeError as exc:
            raise _fail(name, number, f"not valid JSON ({json_problem(exc, raw)})") from exc
    if torn.strip():
        try:
            parsed.append((len(raw_lines) + 1, _json(torn)))
        except msgspec.DecodeError:
            warnings.append(
                f"dropped a torn last line ({len(torn)} bytes) left by an interrupted write"
            )
    return parsed


_json = msgspec.json.Decoder().decode
"""Strict JSON: no NaN or infinities, so whatever converts is lossless."""


def _header(value: Any, name: str) -> UpstreamHeader:
    if not isinstance(value, dict) or value.get("type") != "session":
        raise _fail(name, 1, "missing the session header (type 'session')")
    if value.get("version") != UPSTREAM_VERSION:
        raise _fail(
            name,
            1,
            f"session format version {value.get('version')!r} is not the TypeScript harness's "
            f"({UPSTREAM_VERSION}); a dsh log needs no import",
        )
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
        k: v for k, v in value.items() if k not in ("type", "version", "id", "cwd", "createdAt")
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
    """Convert a TypeScript-harness log; raises UpstreamFormatError naming the line."""
    warnings: list[str] = []
    parsed = _parse_lines(data, name, warnings)
    if not parsed:
        raise _fail(name, 1, "empty file (no session header)")
    header = _header(parsed[0][1], name)
    records = expand_rows(parsed[1:], name)
    result = Conversion(header=header, events=[], lines=parsed[-1][0], warnings=warnings)
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
    try:
        mapped, is_opaque = to_dsh(record, notes)
    except MappingError as exc:
        raise _fail(name, line, f"seq {record.get('seq')} ({record['type']}): {exc}") from exc
    if mapped.get("type") == "tool/result":
        _drop_undo(mapped.get("data"), notes)
    try:
        event = _decode(mapped, line)
    except (LogCorruptError, EventError) as exc:
        if record["type"] not in SOFT_TYPES:
            raise _fail(name, line, _strip_line(str(exc), line)) from exc
        notes = Counter({f"{record['type']} of another shape kept opaque": 1})
        event, is_opaque = _decode(opaque(record, renamed=True), line), True
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
