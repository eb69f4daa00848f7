"""dsh events → a log in the TypeScript harness's format (``sessions export --format upstream``).

The inverse of :mod:`dsh.interop.to_dsh` for the features both harnesses share: a version-0
header with ``delegationDepth``, ``role: "user"`` tool results, content-block summaries,
``{start, end}`` ranges, upstream stream chunks (``request/error`` becomes a ``finish`` chunk
carrying the failure) and packed chunk rows. Opaque events an import kept are written back as
they were. What upstream cannot express is counted in the returned notes: the recallable
checkpoint class (``kind``), ``passId``, ``inputRange``, ``degraded``, and dsh-only events
(``compaction/plan``, ``session/settings``), which are written with ``ignorable: true`` so the
upstream reader keeps loading.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from dsh.events import (
    CompactionStartEvent,
    Event,
    OpaqueEvent,
    encode_event,
    encode_json,
    event_type_of,
)
from dsh.interop.packing import iter_pack
from dsh.interop.to_dsh import DSH_ONLY_TYPES, FOREIGN_MARK, RENAMED_PREFIX
from dsh.store import SessionHeader

Json = dict[str, Any]

_CHUNK_TYPES = {
    "text": "text-delta",
    "reasoning": "reasoning-delta",
    "tool-call": "tool-call-delta",
}


def upstream_header(header: SessionHeader) -> Json:
    out: Json = {
        "type": "session",
        "version": 0,
        "id": header.id,
        "cwd": header.cwd,
        "createdAt": header.created_at,
        "delegationDepth": 0,
    }
    if header.parent_session is not None:
        out["parentSession"] = header.parent_session
        if header.seed_length is not None:
            out["seedLength"] = header.seed_length
    return out


def export_upstream(header: SessionHeader, events: Sequence[Event]) -> tuple[bytes, Counter[str]]:
    """The upstream JSONL bytes of a session and the notes on what could not be expressed."""
    notes: Counter[str] = Counter()
    return b"".join(upstream_lines(header, events, notes)), notes


def upstream_lines(
    header: SessionHeader, events: Sequence[Event], notes: Counter[str]
) -> Iterator[bytes]:
    """:func:`export_upstream`'s bytes a line at a time (each ending with a newline), written
    as the events are converted; what cannot be expressed is counted in ``notes`` meanwhile
    (complete once the lines are)."""
    command_ids = {
        e.data.compaction_id: e.data.source_command_id
        for e in events
        if isinstance(e, CompactionStartEvent) and e.data.source_command_id is not None
    }
    yield encode_json(upstream_header(header)) + b"\n"
    rows = (_event(e, notes, command_ids) for e in events)
    for row in iter_pack(rows):
        yield encode_json(row) + b"\n"


def _event(event: Event, notes: Counter[str], command_ids: dict[str, str]) -> Json:
    out: Json = json.loads(encode_event(event))
    kind = event_type_of(event)
    if isinstance(event, OpaqueEvent):
        if out.pop(FOREIGN_MARK, None) is True:
            out.pop("ignorable", None)
        if kind.startswith(RENAMED_PREFIX):
            out["type"] = kind[len(RENAMED_PREFIX) :]
        return out
    data: Json = out["data"]
    if kind in DSH_ONLY_TYPES:
        notes[f"{kind} has no upstream counterpart: written with ignorable: true"] += 1
        out["ignorable"] = True
    elif kind == "llm/retry":
        notes["llm/retry written in dsh's shape with ignorable: true"] += 1
    elif kind == "request/error":
        failure = {k: data[k] for k in ("code", "message", "retryable")}
        chunk = {"type": "finish", "reason": {"kind": "error", "failure": failure}}
        out = {**out, "type": "assistant/chunk"}
        out["data"] = {"turn": data["turn"], "step": data["step"], "chunk": chunk}
    elif kind == "assistant/chunk":
        delta = dict(data["chunk"])
        data["chunk"] = {"type": _CHUNK_TYPES[delta.pop("type")], **delta}
    elif kind in ("user/message", "assistant/message", "tool/result"):
        message = data if kind == "user/message" else data["message"]
        _message(message, role="user" if kind == "tool/result" else None)
    elif kind == "request/header":
        config = data["header"]["config"]
        config.update(config.pop("params", None) or {})
    elif kind.startswith("compaction/"):
        _compaction(kind, data, notes, command_ids)
    return out


def _message(message: Json, *, role: str | None) -> None:
    if role is not None:
        message["role"] = role
    source = message.get("source", {})
    if source.get("kind") == "plugin" and source.get("plugin") == "agent-instructions":
        message["source"] = {"kind": "agent-instructions"}


def _compaction(kind: str, data: Json, notes: Counter[str], command_ids: dict[str, str]) -> None:
    compaction_id = str(data.get("compactionId"))
    for key in ("passId", "kind", "inputRange", "degraded"):
        if key in data:
            del data[key]
            notes[f"{kind}.{key} has no upstream field: dropped"] += 1
    if "shadowedRange" in data:
        start, end = data["shadowedRange"]
        data["shadowedRange"] = {"start": start, "end": end}
    for key in ("summary", "rawOutput"):
        if key in data:
            data[key] = [{"type": "text", "text": data[key]}]
    if kind in ("compaction/summary", "compaction/end") and compaction_id in command_ids:
        data["sourceCommandId"] = command_ids[compaction_id]
