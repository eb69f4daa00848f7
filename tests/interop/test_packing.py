"""Packed chunk rows: expansion gives consecutive seqs with the stored deltas and times, and
packing is its exact inverse (property tests)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.interop import packing
from dsh.interop.packing import MIN_PACKED_RUN, PackedRowError, expand_row, iter_pack, pack

KINDS = ("text-delta", "reasoning-delta", "tool-call-delta")


@st.composite
def chunk_logs(draw) -> list[dict]:
    """Upstream events from seq 0: runs of deltas (mixed blocks) with other events between."""
    events: list[dict] = []
    time = draw(st.integers(0, 10**6))
    for _ in range(draw(st.integers(0, 12))):
        time += draw(st.integers(0, 50))
        if draw(st.booleans()):
            events.append({"type": "step/start", "seq": len(events), "time": time, "data": {}})
            continue
        kind = draw(st.sampled_from(KINDS))
        chunk: dict = {"type": kind}
        if draw(st.booleans()):
            chunk["index"] = draw(st.integers(0, 2))
        if kind == "tool-call-delta":
            chunk["id"] = draw(st.sampled_from(["c1", "c2"]))
            if draw(st.booleans()):
                chunk["name"] = "bash"
        for _ in range(draw(st.integers(1, 6))):
            time += draw(st.integers(0, 20))
            delta = draw(st.text(max_size=4))
            events.append(
                {
                    "type": "assistant/chunk",
                    "seq": len(events),
                    "time": time,
                    "data": {"turn": 1, "step": 1, "chunk": {**chunk, "delta": delta}},
                }
            )
    return events


def unpack(rows: list[dict]) -> list[dict]:
    out: list[dict] = []
    for row in rows:
        out.extend(expand_row(row) if "seq0" in row else [row])
    return out


@given(chunk_logs())
def test_pack_then_expand_is_the_identity(events):
    assert unpack(pack(events)) == events


def _pack_whole(events: list[dict]) -> list[dict]:
    """``pack`` as it was written for a whole list (indices, runs found by looking ahead)."""
    rows: list[dict] = []
    i = 0
    while i < len(events):
        key = packing._run_key(events[i])
        j = i + 1
        while (
            key is not None
            and j < len(events)
            and packing._run_key(events[j]) == key
            and events[j]["seq"] == events[j - 1]["seq"] + 1
        ):
            j += 1
        if key is None or j - i < MIN_PACKED_RUN:
            rows.extend(events[i:j])
        else:
            rows.append(packing._packed_row(events[i:j], key))
        i = j
    return rows


@given(chunk_logs())
def test_packing_a_stream_gives_the_rows_of_packing_the_whole_list(events):
    assert list(iter_pack(iter(events))) == _pack_whole(events) == pack(events)


@given(chunk_logs())
def test_packed_rows_cover_runs_of_three_or_more_and_expand_to_contiguous_seqs(events):
    rows = pack(events)
    for row in rows:
        if "seq0" not in row:
            continue
        expanded = expand_row(row)
        assert len(expanded) >= MIN_PACKED_RUN
        assert [e["seq"] for e in expanded] == list(range(row["seq0"], row["seq0"] + len(expanded)))
        deltas = row["data"].get("texts") or row["data"]["args"]
        assert [e["data"]["chunk"]["delta"] for e in expanded] == deltas
        times = [e["time"] for e in expanded]
        assert [b - a for a, b in itertools.pairwise(times)] == row["data"]["dt"][1:]
    assert [e["seq"] for e in unpack(rows)] == list(range(len(events)))


@given(
    st.lists(st.text(max_size=3), min_size=1, max_size=8),
    st.data(),
)
def test_any_valid_row_expands_to_consecutive_seqs_preserving_deltas(texts, data):
    gaps = data.draw(st.lists(st.integers(0, 1000), min_size=len(texts), max_size=len(texts)))
    seq0, time0 = data.draw(st.integers(0, 10**6)), data.draw(st.integers(0, 10**9))
    row = {
        "type": "text-chunks",
        "seq0": seq0,
        "time0": time0,
        "data": {"turn": 2, "step": 3, "index": 0, "dt": gaps, "texts": texts},
    }
    expanded = expand_row(row)
    assert [e["seq"] for e in expanded] == list(range(seq0, seq0 + len(texts)))
    assert [e["data"]["chunk"]["delta"] for e in expanded] == texts
    times = [time0, *(e["time"] for e in expanded)]
    assert [b - a for a, b in itertools.pairwise(times)] == gaps
    assert all(e["data"]["turn"] == 2 and e["data"]["step"] == 3 for e in expanded)


def test_a_dt_one_shorter_than_the_deltas_puts_the_first_at_time0():
    row = {
        "type": "reasoning-chunks",
        "seq0": 4,
        "time0": 100,
        "data": {"turn": 1, "step": 1, "dt": [5, 7], "texts": ["a", "b", "c"]},
    }
    assert [e["time"] for e in expand_row(row)] == [100, 105, 112]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"turn": 1, "step": 1, "dt": [0], "texts": []}, "non-empty list"),
        ({"turn": 1, "step": 1, "dt": [0, 1, 2, 3], "texts": ["a"]}, "one time delta per chunk"),
        ({"turn": "1", "step": 1, "dt": [0], "texts": ["a"]}, "data.turn"),
        ({"turn": 1, "step": 1, "dt": [-5], "texts": ["a"]}, "negative time"),
    ],
)
def test_a_malformed_row_is_refused_with_the_field_named(data, message):
    with pytest.raises(PackedRowError, match=message):
        expand_row({"type": "text-chunks", "seq0": 0, "time0": 1, "data": data})


def test_a_tool_call_row_needs_an_id():
    row = {"type": "tool-call-chunks", "seq0": 0, "time0": 1, "data": {"turn": 1, "step": 1}}
    row["data"].update({"dt": [0], "args": ["{}"]})
    with pytest.raises(PackedRowError, match=r"data\.id"):
        expand_row(row)
