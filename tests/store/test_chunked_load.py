"""A JSONL log loads a chunk at a time (so the peak is about the events, not the file twice):
whatever the chunk size, the same events, torn tail, warnings and errors as one whole read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import LogCorruptError
from dsh.events import decode_event_lines, encode_event
from dsh.store import JsonlStore, jsonl
from dsh.store.integrity import unseal_body
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def varied_session(store: JsonlStore) -> str:
    """Lines from ~100 bytes to ~20 KB, so small chunks cut lines anywhere, long ones too."""
    with new_session(store) as session:
        for i in range(6):
            append_chat_turn(session, f"q{i}", "é" * (i * 7))
            append_tool_turn(session, f"t{i}", calls=[("read_file", "{}", "x" * (3**i * 25))])
    return session.id


def whole_read(path: Path) -> list[bytes]:
    """The events as one read of the whole file decodes them (the load before chunks)."""
    data = path.read_bytes()
    start, end = data.index(b"\n") + 1, data.rfind(b"\n") + 1
    body = unseal_body(data, start, end, first_line=2, where="")
    events = decode_event_lines(body, line_count=data.count(b"\n", start, end), first_line=2)
    return [encode_event(e) for e in events]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunk=st.integers(1, 30_000), torn=st.binary(max_size=50).filter(lambda b: b"\n" not in b))
def test_any_chunk_size_loads_the_same_events_and_torn_tail(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
    torn: bytes,
) -> None:
    store = JsonlStore(tmp_path_factory.mktemp("home"))
    sid = varied_session(store)
    path = store.log_path(sid)
    expected = whole_read(path)
    path.write_bytes(path.read_bytes() + torn)
    monkeypatch.setattr(jsonl, "READ_CHUNK", chunk)
    log = store.open(sid)
    assert [encode_event(e) for e in log.events] == expected
    assert len(log.warnings) == (1 if torn else 0)
    if torn:
        assert f"({len(torn)} bytes)" in log.warnings[0]


@pytest.mark.parametrize("chunk", [1, 97, 4096, 1 << 20])
def test_a_bad_line_is_named_whatever_the_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    store = JsonlStore(tmp_path)
    sid = varied_session(store)
    path = store.log_path(sid)
    lines = path.read_bytes().split(b"\n")
    lines[30] = lines[30].replace(b'"seq":29', b'"seq":"x"', 1)  # line 31, seal kept
    lines[40] = b"{not json"  # a second, later fault: the first one is reported
    path.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(jsonl, "READ_CHUNK", chunk)
    with pytest.raises(LogCorruptError, match=r"line 31: ") as caught:
        store.open(sid)
    assert caught.value.line == 31


def test_a_file_without_a_complete_header_is_refused(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    sid = varied_session(store)
    path = store.log_path(sid)
    path.write_bytes(path.read_bytes().split(b"\n")[0][:40])
    with pytest.raises(LogCorruptError, match="line 1: missing session header"):
        store.open(sid)
