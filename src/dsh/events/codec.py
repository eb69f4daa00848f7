"""Lossless JSON codec for events, and the per-event rules that need no other event.

``encode_event`` is the only way an event becomes bytes and ``decode_events`` the only way bytes
become events, so memory equals storage: whatever was appended reads back equal, and re-saving a
loaded log gives the same bytes. Free-form fields (``meta``, request params, tool schemas) are
checked at append time for values JSON cannot carry losslessly (NaN, infinities, non-string keys,
non-JSON objects).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec

from dsh.errors import (
    EventValidationError,
    LogCorruptError,
    UnknownEventTypeError,
    json_problem,
)
from dsh.events.messages import ToolResultBlock
from dsh.events.types import (
    EVENT_CLASS_BY_TYPE,
    AssistantMessageEvent,
    Event,
    KnownEvent,
    OpaqueEvent,
    RequestHeaderEvent,
    ToolResultEvent,
    UserMessageEvent,
)

_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(KnownEvent)
_generic_decoder = msgspec.json.Decoder()


# ---- encoding -------------------------------------------------------------------------------


def encode_event(event: Event) -> bytes:
    """The canonical JSON bytes of an event (no trailing newline)."""
    if isinstance(event, OpaqueEvent):
        return event.raw
    try:
        return _encoder.encode(event)
    except (UnicodeEncodeError, msgspec.EncodeError, OverflowError, TypeError) as exc:
        raise EventValidationError(
            f"event seq {event.seq} ({_type_of(event)}) is not lossless JSON: {exc}", seq=event.seq
        ) from exc


def encode_json(value: Any) -> bytes:
    """Canonical compact JSON of a plain value (used for tool schemas and headers)."""
    return _encoder.encode(value)


def check_json_value(value: Any, where: str) -> None:
    """Refuse values JSON cannot carry losslessly; ``where`` names the field in the error."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if item is None or isinstance(item, bool | int | str):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise EventValidationError(f"{path} is {item!r}, which JSON cannot represent")
            continue
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise EventValidationError(f"{path} has a non-string key {key!r}")
                stack.append((sub, f"{path}.{key}"))
            continue
        if isinstance(item, list | tuple):
            stack.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item))
            continue
        raise EventValidationError(f"{path} holds a {type(item).__name__}, which is not JSON")


# ---- per-event rules ------------------------------------------------------------------------


def validate_event_shape(event: Event) -> None:
    """Rules one event must satisfy on its own (docs/architecture.md, "The session log" and "The
    surface"); the fold checks the rest."""
    if isinstance(event, OpaqueEvent):
        return
    seq = event.seq
    if seq < 0 or event.time < 0:
        raise EventValidationError(f"event seq {seq}: seq and time must be non-negative", seq=seq)
    if isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolResultEvent):
        _validate_surface_event(event)
        if isinstance(event, ToolResultEvent) and event.data.meta is not None:
            check_json_value(event.data.meta, f"seq {seq} meta")
    elif isinstance(event, RequestHeaderEvent):
        header = event.data.header
        if header.config.params is not None:
            check_json_value(header.config.params, f"seq {seq} header.config.params")
        if header.tools is not None:
            check_json_value(list(header.tools), f"seq {seq} header.tools")


def _validate_surface_event(
    event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent,
) -> None:
    seq = event.seq
    kind = _type_of(event)
    sources = event.source_event_seqs
    if sources is not None:
        if len(set(sources)) != len(sources):
            raise EventValidationError(f"event seq {seq} ({kind}): sourceEventSeqs repeat", seq=seq)
        if any(s < 0 or s >= seq for s in sources):
            raise EventValidationError(
                f"event seq {seq} ({kind}): sourceEventSeqs must be earlier seqs", seq=seq
            )
        if not sources and not isinstance(event, AssistantMessageEvent):
            raise EventValidationError(
                f"event seq {seq} ({kind}): sourceEventSeqs may be empty only on assistant/message",
                seq=seq,
            )
    if isinstance(event, UserMessageEvent):
        role = event.data.role
        if role != "user":
            raise EventValidationError(f"event seq {seq}: user/message has role {role!r}", seq=seq)
    elif isinstance(event, AssistantMessageEvent):
        role = event.data.message.role
        if role != "assistant":
            raise EventValidationError(
                f"event seq {seq}: assistant/message has role {role!r}", seq=seq
            )
    else:
        message = event.data.message
        if (
            message.role != "tool"
            or len(message.content) != 1
            or not isinstance(message.content[0], ToolResultBlock)
        ):
            raise EventValidationError(
                f"event seq {seq}: tool/result must be a role 'tool' message with exactly one "
                "tool-result block",
                seq=seq,
            )


# ---- decoding -------------------------------------------------------------------------------


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects.

    Decoding a log allocates millions of small objects; each allocation burst triggers full GC
    passes that find nothing (decoded JSON cannot form cycles). Pausing it halves load time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_events(
    lines: Sequence[bytes], *, first_line: int = 1, first_seq: int = 0
) -> list[Event]:
    """Decode stored event lines (no newlines) in order; the first must be seq ``first_seq``
    (0: a whole log; more: the rest of one, read on from a known position).

    Fast path: one typed decode per line, with no error bookkeeping (joining the lines into one
    JSON array would copy the whole log once more, and would accept a line holding two events).
    If any line is off, they are decoded again with :func:`decode_event_line` so the error names
    the exact line and seq. Unknown types marked ``ignorable`` become :class:`OpaqueEvent`; other
    unknown types refuse the load.
    """
    events = decode_events_unchecked(lines, first_line=first_line)
    _validate_loaded(events, first_line, first_seq)
    return events


def decode_events_unchecked(lines: Sequence[bytes], *, first_line: int) -> list[Event]:
    """The decoding of :func:`decode_events` alone (a line that does not decode raises, naming
    it), without the checks of the log's rules: a log decoded a batch of lines at a time passes
    its whole list to :func:`check_events` once every batch is decoded, which gives the events
    and errors of one :func:`decode_events` over all the lines."""
    decode = _event_decoder.decode
    try:
        with gc_paused():
            return [decode(raw) for raw in lines]
    except msgspec.DecodeError:
        return [decode_event_line(raw, line=first_line + i) for i, raw in enumerate(lines)]


def check_events(events: list[Event], *, first_line: int, first_seq: int = 0) -> None:
    """The checks :func:`decode_events` makes of the decoded events (seqs from ``first_seq``,
    one more each; the surface rules), raising at the first event that fails one."""
    _validate_loaded(events, first_line, first_seq)


def _validate_loaded(events: list[Event], first_line: int, first_seq: int = 0) -> None:
    """Seqs must be ``first_seq``, then one more each (a gap refuses the load); decoded JSON is
    lossless by construction, so beyond that only the surface rules need checking here. Most
    surface events pass them at a glance (no ``sourceEventSeqs``, or a result's one earlier
    seq, its call; the role their type needs; a result's one tool-result block); only the others
    are checked rule by rule, which names the fault."""
    for seq, event in enumerate(events, first_seq):
        if event.seq != seq:
            check_contiguous(events, first_line=first_line, first_seq=first_seq)  # raises
        if type(event) is UserMessageEvent:
            if event.source_event_seqs is None and event.data.role == "user":
                continue
        elif type(event) is AssistantMessageEvent:
            if event.source_event_seqs is None and event.data.message.role == "assistant":
                continue
        elif type(event) is ToolResultEvent:
            message = event.data.message
            sources = event.source_event_seqs
            if (
                (sources is None or (len(sources) == 1 and 0 <= sources[0] < seq))
                and message.role == "tool"
                and len(message.content) == 1
                and type(message.content[0]) is ToolResultBlock
            ):
                continue
        else:
            continue
        try:
            _validate_surface_event(event)
        except EventValidationError as exc:
            line = first_line + seq - first_seq
            raise LogCorruptError(f"line {line}: {exc}", line=line, seq=event.seq) from exc


def decode_event_lines(
    body: bytes | memoryview, *, line_count: int, first_line: int, first_seq: int = 0
) -> list[Event]:
    """Decode a JSONL body (complete lines, each ending in a newline) in one call.

    The fast path decodes the whole buffer at once; if that fails, or yields a different number
    of events than there are lines (a blank line, or two values on one line), the lines are
    decoded one by one so the error names the exact line.
    """
    try:
        with gc_paused():
            events: list[Event] = list(_event_decoder.decode_lines(body))
    except msgspec.DecodeError:
        events = []
    if len(events) != line_count:
        lines = bytes(body).split(b"\n")[:-1]
        return decode_events(lines, first_line=first_line, first_seq=first_seq)
    _validate_loaded(events, first_line, first_seq)
    return events


def decode_event_chunks(
    chunks: Iterable[tuple[bytes | memoryview, int]], *, first_line: int
) -> list[Event]:
    """Decode a JSONL body that arrives in consecutive pieces (each complete lines ending in a
    newline, with its line count): the events and errors of :func:`decode_event_lines` over the
    joined body, without ever holding that body whole (a large log loads in about the memory
    of its events)."""
    events: list[Event] = []
    line = first_line
    for body, count in chunks:
        try:
            with gc_paused():
                part: list[Event] = list(_event_decoder.decode_lines(body))
        except msgspec.DecodeError:
            part = []
        if len(part) != count:
            raws = bytes(body).split(b"\n")[:-1]
            part = [decode_event_line(raw, line=line + i) for i, raw in enumerate(raws)]
        events.extend(part)
        line += count
    _validate_loaded(events, first_line)
    return events


def decode_event_line(raw: bytes, *, line: int) -> Event:
    """Decode one stored line, naming the line (and seq when known) in any error."""
    if not raw.strip():
        raise LogCorruptError(f"line {line}: empty line", line=line)
    try:
        return _event_decoder.decode(raw)
    except msgspec.DecodeError as typed_error:
        try:
            generic = _generic_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            problem = json_problem(exc, raw)
            raise LogCorruptError(f"line {line}: not valid JSON ({problem})", line=line) from exc
        if not isinstance(generic, dict) or not isinstance(generic.get("type"), str):
            raise LogCorruptError(f"line {line}: not an event object", line=line) from typed_error
        seq = generic.get("seq")
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        event_type = generic["type"]
        if event_type not in EVENT_CLASS_BY_TYPE:
            if generic.get("ignorable") is True and seq is not None:
                time = generic.get("time")
                return OpaqueEvent(
                    type=event_type, seq=seq, time=time if isinstance(time, int) else 0, raw=raw
                )
            raise UnknownEventTypeError(event_type, seq=seq, line=line) from typed_error
        where = f"line {line}" + (f" (seq {seq}, {event_type})" if seq is not None else "")
        raise LogCorruptError(f"{where}: {typed_error}", line=line, seq=seq) from typed_error


def check_contiguous(events: Iterable[Event], *, first_line: int = 1, first_seq: int = 0) -> None:
    """Refuse a log whose seqs are not exactly 0, 1, 2, … (seq = position: docs/architecture.md,
    "The session log"), or, for the rest of a log, ``first_seq`` and on."""
    for position, event in enumerate(events, first_seq):
        if event.seq != position:
            line = first_line + position - first_seq
            raise LogCorruptError(
                f"line {line}: expected seq {position} but found seq {event.seq} "
                "(a gap or reordering in the log)",
                line=line,
                seq=event.seq,
            )


def _type_of(event: Event) -> str:
    if isinstance(event, OpaqueEvent):
        return event.type
    tag = event.__struct_config__.tag
    return tag if isinstance(tag, str) else "?"


def event_type_of(event: Event) -> str:
    """The ``type`` tag of an event."""
    return _type_of(event)
