"""CRC32 seals on JSONL lines: a flipped byte refuses the load naming the line; old logs load."""

from __future__ import annotations

import zlib
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.errors import DshError, LogCorruptError
from dsh.events import encode_event
from dsh.store import JsonlStore, integrity
from dsh.store.base import encode_header
from dsh.store.integrity import (
    check_line,
    seal,
    sealed_lines,
    unseal,
    unseal_body,
    unseal_counted,
)
from dsh.store.salvage import salvage_session
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def closed_session(store: JsonlStore) -> str:
    with new_session(store) as session:
        append_chat_turn(session)
        append_tool_turn(session)
        append_chat_turn(session)
    return session.id


def canonical(store: JsonlStore, session_id: str) -> list[bytes]:
    with store.open(session_id) as log:
        return [encode_header(log.header)] + [encode_event(e) for e in log.events]


def test_every_stored_line_is_its_canonical_json_sealed_with_its_crc32(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    stored = store.log_path(session_id).read_bytes().split(b"\n")[:-1]
    lines = canonical(store, session_id)
    assert stored == [seal(line) for line in lines]
    assert stored[3].endswith(b',"crc":"%08x"}' % zlib.crc32(lines[3]))


_json_objects = st.dictionaries(
    st.text(max_size=8), st.text(max_size=40) | st.integers(), max_size=4
).map(msgspec.json.encode)


@given(st.lists(_json_objects, max_size=6))
def test_a_batch_is_sealed_as_each_line_is_and_unseals_to_the_canonical_lines(
    lines: list[bytes],
) -> None:
    batch = sealed_lines(lines)
    assert batch == b"".join(seal(line) + b"\n" for line in lines)
    assert unseal_body(batch, 0, len(batch), first_line=1, where="") == b"".join(
        line + b"\n" for line in lines
    )


def test_a_changed_byte_in_an_event_refuses_the_load_naming_the_line(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    path = store.log_path(session_id)
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"seq":3', b'"seq":3 ', 1)  # still valid JSON, same event
    at = lines[5].index(b'"time":') + 8
    lines[5] = lines[5][:at] + bytes([lines[5][at] ^ 1]) + lines[5][at + 1 :]  # a time digit
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(LogCorruptError, match=r"session.jsonl: line 5: checksum mismatch") as e:
        store.open(session_id)
    assert e.value.line == 5


def test_a_changed_header_refuses_the_load_and_lists_the_session_as_unreadable(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    path = store.log_path(session_id)
    path.write_bytes(path.read_bytes().replace(b'"cwd":"/work/project"', b'"cwd":"/work/projecT"'))
    with pytest.raises(LogCorruptError, match="line 1: checksum mismatch"):
        store.open(session_id)
    (unreadable,) = store.unreadable()
    assert unreadable.line == 1 and "checksum mismatch" in unreadable.reason


def test_a_damaged_seal_that_no_longer_reads_as_a_seal_is_still_refused(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    path = store.log_path(session_id)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b',"crc":"', b',"crs":"')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(LogCorruptError, match=r"line 4 .*unknown field `crs`"):
        store.open(session_id)


def test_a_log_without_seals_loads_and_later_appends_are_sealed(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    path = store.log_path(session_id)
    old = canonical(store, session_id)
    path.write_bytes(b"".join(line + b"\n" for line in old))  # as dsh wrote before seals
    assert canonical(store, session_id) == old
    with store.open(session_id, writable=True) as log:
        session = Session(log)
        append_chat_turn(session)
    stored = path.read_bytes().split(b"\n")[:-1]
    assert stored[: len(old)] == old
    assert len(stored) > len(old)
    assert all(line == seal(unseal(line)[0]) for line in stored[len(old) :])
    assert canonical(store, session_id)[: len(old)] == old


def test_salvage_treats_a_checksum_mismatch_like_a_corrupt_line(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    session_id = closed_session(store)
    path = store.log_path(session_id)
    lines = path.read_bytes().split(b"\n")
    lines[6] = lines[6].replace(b'"time":', b'"time":1', 1)
    path.write_bytes(b"\n".join(lines))
    report = salvage_session(store, session_id)
    assert report.kept_lines == 6 and report.first_bad_line == 7
    assert report.reason is not None and "line 7: checksum mismatch" in report.reason
    assert canonical(store, session_id) == [unseal(line)[0] for line in lines[:6]]


def test_unseal_body_equals_checking_line_by_line() -> None:
    lines = [b'{"a":1}', b'{"b":"x"}', b'{"c":[1,2]}']
    sealed = b"".join(seal(line) + b"\n" for line in lines)
    body = unseal_body(sealed, 0, len(sealed), first_line=1, where="")
    assert body == b"".join(line + b"\n" for line in lines)
    assert [check_line(raw, number=1, where="") for raw in sealed.split(b"\n")[:-1]] == lines
    assert [check_line(raw, number=1, where="") for raw in lines] == lines  # unsealed: as is


_FLIP_LOG: dict[str, object] = {}


def _flip_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[JsonlStore, str, bytes]:
    if not _FLIP_LOG:
        store = JsonlStore(tmp_path_factory.mktemp("flips"))
        session_id = closed_session(store)
        _FLIP_LOG.update(store=store, id=session_id, data=store.log_path(session_id).read_bytes())
    return _FLIP_LOG["store"], _FLIP_LOG["id"], _FLIP_LOG["data"]  # type: ignore[return-value]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(position=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_no_single_bit_flip_loads_with_changed_content(
    tmp_path_factory: pytest.TempPathFactory, position: float, bit: int
) -> None:
    store, session_id, data = _flip_fixture(tmp_path_factory)
    path = store.log_path(session_id)
    original = [unseal(line)[0] for line in data.split(b"\n")[:-1]]
    at = int(position * len(data))
    path.write_bytes(data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1 :])
    try:
        loaded = canonical(store, session_id)
    except DshError:
        return  # refused: fine
    finally:
        path.write_bytes(data)
    assert loaded == original[: len(loaded)]


def _line_by_line(body: bytes) -> bytes | str:
    """What checking ``body`` one line at a time gives: the unsealed body, or the error."""
    try:
        return integrity._unseal_lines(body, 0, len(body), 1, "")
    except LogCorruptError as exc:
        return str(exc)


def _unsealed(body: bytes) -> bytes | str:
    try:
        unsealed, count = unseal_counted(body, 0, len(body), first_line=1, where="")
    except LogCorruptError as exc:
        return str(exc)
    assert count == body.count(b"\n")  # the lines of the body, however they were found
    assert unseal_body(body, 0, len(body), first_line=1, where="") == unsealed
    return unsealed


def _damaged(line: bytes, how: str) -> bytes:
    sealed = seal(line)
    if how == "sealed":
        return sealed
    if how == "unsealed":
        return line
    if how == "blank":
        return b""
    if how == "upper":  # a seal whose digits are not lowercase hex: not a seal
        return sealed[:-10] + sealed[-10:-2].upper() + b'"}'
    if how == "only seal":  # nothing before the seal
        return sealed[len(line) - 1 :]
    digit = sealed[-3:-2]
    return sealed[:-3] + (b"0" if digit != b"0" else b"1") + b'"}'  # a CRC that does not match


@given(
    st.lists(
        st.tuples(
            _json_objects,
            st.sampled_from(["sealed", "unsealed", "blank", "upper", "only seal", "crc"]),
        ),
        max_size=8,
    )
)
def test_unsealing_a_body_at_once_equals_checking_it_line_by_line(
    lines: list[tuple[bytes, str]],
) -> None:
    body = b"".join(_damaged(line, how) + b"\n" for line, how in lines)
    assert _unsealed(body) == _line_by_line(body)


def test_a_fully_sealed_body_is_unsealed_without_a_pass_per_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = [b'{"a":1}', b'{"b":"x,\\"crc\\":\\"00000000\\"}"}', b'{"c":[1,2]}']
    body = sealed_lines(lines)

    def per_line(*args: object) -> bytes:
        raise AssertionError("checked line by line")

    monkeypatch.setattr(integrity, "_unseal_lines", per_line)
    assert unseal_body(body, 0, len(body), first_line=1, where="") == b"".join(
        line + b"\n" for line in lines
    )
    assert unseal_counted(b"x" + body, 1, len(body) + 1, first_line=1, where="") == (
        b"".join(line + b"\n" for line in lines),
        3,
    )


def test_a_seal_whose_crc_spans_an_unsealed_line_before_it_is_refused() -> None:
    """The one CRC of two lines (an unsealed one, then one sealed over both) must not pass for
    the seal of the second: each line is checked against its own seal."""
    first, second = b'{"a":1}', b'{"b":2}'
    spanning = b'%s,"crc":"%08x"}' % (second[:-1], zlib.crc32(first + b"\n" + second))
    body = first + b"\n" + spanning + b"\n"
    assert _unsealed(body) == _line_by_line(body)
    assert "line 2: checksum mismatch" in str(_unsealed(body))
