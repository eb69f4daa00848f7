"""Packed chunk rows of the TypeScript harness's JSONL storage, both ways.

Upstream stores a run of same-block stream deltas as one row instead of one event per delta::

    {"type": "text-chunks", "seq0": 12, "time0": 1767225600120,
     "data": {"turn": 1, "step": 1, "index": 0, "dt": [0, 4, 9], "texts": ["He", "ll", "o"]}}

``reasoning-chunks`` has the same shape; ``tool-call-chunks`` carries ``id``, an optional
``name`` and ``args[]`` instead of ``texts[]``. Row ``i`` stands for the ``assistant/chunk`` event
with seq ``seq0 + i`` and time ``time0 + dt[0] + … + dt[i]`` (so ``dt[i]`` is the gap to the
previous delta and ``dt[0]`` the gap to ``time0``; a ``dt`` one shorter than the deltas puts the
first delta at ``time0``). Tool-call rows give every delta the row's ``id`` and ``name``.

Both directions work on plain JSON dicts in upstream shape (``{"type": "text-delta", "index",
"delta"}`` chunks), so ``expand_row(pack(events))`` is the identity; a property test pins it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

PACKED_ROW_TYPES = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
_ROW_TYPE_BY_CHUNK = {chunk: row for row, chunk in PACKED_ROW_TYPES.items()}
MIN_PACKED_RUN = 3
"""Upstream packs runs of at least this many consecutive same-block deltas."""


class PackedRowError(ValueError):
    """A packed row that cannot be expanded (the message says which field is wrong)."""


def _int(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise PackedRowError(f"packed row field {name} must be an integer, not {value!r}")
    return value


def expand_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``assistant/chunk`` events (upstream shape) one packed row stands for."""
    chunk_type = PACKED_ROW_TYPES.get(row.get("type"))  # type: ignore[arg-type]
    if chunk_type is None:
        raise PackedRowError(f"not a packed chunk row: type {row.get('type')!r}")
    seq0 = _int(row.get("seq0"), "seq0")
    time0 = _int(row.get("time0"), "time0")
    data = row.get("data")
    if not isinstance(data, dict):
        raise PackedRowError("packed row has no data object")
    turn, step = _int(data.get("turn"), "data.turn"), _int(data.get("step"), "data.step")
    is_tool = chunk_type == "tool-call-delta"
    deltas = data.get("args" if is_tool else "texts")
    if not isinstance(deltas, list) or not deltas or not all(isinstance(d, str) for d in deltas):
        field = "args" if is_tool else "texts"
        raise PackedRowError(f"packed row data.{field} must be a non-empty list of strings")
    gaps = data.get("dt")
    if not isinstance(gaps, list) or len(gaps) not in (len(deltas), len(deltas) - 1):
        raise PackedRowError(
            f"packed row data.dt must list one time delta per chunk ({len(deltas)}), not {gaps!r}"
        )
    gaps = [_int(g, "data.dt[]") for g in gaps]
    if len(gaps) < len(deltas):
        gaps = [0, *gaps]
    extra: dict[str, Any] = {}
    if data.get("index") is not None:
        extra["index"] = _int(data["index"], "data.index")
    if is_tool:
        if not isinstance(data.get("id"), str):
            raise PackedRowError("packed tool-call row needs a string data.id")
        extra["id"] = data["id"]
        if data.get("name") is not None:
            extra["name"] = data["name"]
    events = []
    time = time0
    for i, (delta, gap) in enumerate(zip(deltas, gaps, strict=True)):
        time += gap
        if time < 0:
            raise PackedRowError(f"packed row chunk {i} would have a negative time")
        chunk = {"type": chunk_type, **extra, "delta": delta}
        events.append(
            {
                "type": "assistant/chunk",
                "seq": seq0 + i,
                "time": time,
                "data": {"turn": turn, "step": step, "chunk": chunk},
            }
        )
    return events


def _run_key(event: dict[str, Any]) -> tuple[Any, ...] | None:
    """Events with equal keys (and consecutive seqs) may share one packed row."""
    if event.get("type") != "assistant/chunk" or set(event) != {"type", "seq", "time", "data"}:
        return None
    data = event["data"]
    chunk = data.get("chunk")
    if set(data) != {"turn", "step", "chunk"} or not isinstance(chunk, dict):
        return None
    kind = chunk.get("type")
    if kind not in _ROW_TYPE_BY_CHUNK or not isinstance(chunk.get("delta"), str):
        return None
    allowed = {"type", "delta", "index"} | ({"id", "name"} if kind == "tool-call-delta" else set())
    if not set(chunk) <= allowed or (kind == "tool-call-delta" and "id" not in chunk):
        return None
    return (
        data["turn"],
        data["step"],
        kind,
        chunk.get("index"),
        chunk.get("id"),
        chunk.get("name"),
    )


def pack(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows to store: runs of ≥ 3 consecutive same-block deltas become one packed row each;
    every other event is kept as it is."""
    return list(iter_pack(events))


def iter_pack(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """:func:`pack` over a stream of events: each row as soon as the run it ends is known (one
    run of deltas held at a time)."""
    run: list[dict[str, Any]] = []
    run_key: tuple[Any, ...] | None = None
    for event in events:
        key = _run_key(event)
        if key is not None and key == run_key and event["seq"] == run[-1]["seq"] + 1:
            run.append(event)
            continue
        yield from _rows(run, run_key)
        run, run_key = [event], key
    yield from _rows(run, run_key)


def _rows(run: list[dict[str, Any]], key: tuple[Any, ...] | None) -> list[dict[str, Any]]:
    """A run's rows: one packed row, or its events as they are when it is too short to pack."""
    if key is None or len(run) < MIN_PACKED_RUN:
        return run
    return [_packed_row(run, key)]


def _packed_row(run: Sequence[dict[str, Any]], key: tuple[Any, ...]) -> dict[str, Any]:
    turn, step, kind, index, call_id, name = key
    times = [e["time"] for e in run]
    data: dict[str, Any] = {"turn": turn, "step": step}
    if index is not None:
        data["index"] = index
    if kind == "tool-call-delta":
        data["id"] = call_id
        if name is not None:
            data["name"] = name
    data["dt"] = [0] + [b - a for a, b in itertools.pairwise(times)]
    data["args" if kind == "tool-call-delta" else "texts"] = [
        e["data"]["chunk"]["delta"] for e in run
    ]
    return {
        "type": _ROW_TYPE_BY_CHUNK[kind],
        "seq0": run[0]["seq"],
        "time0": times[0],
        "data": data,
    }
