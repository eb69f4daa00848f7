"""``write_all`` goes on after a short write until every byte is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsh.store.fd_write as fd_write


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=2000), most=st.integers(min_value=1, max_value=64))
def test_every_byte_is_written_whatever_each_write_takes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, most: int
) -> None:
    path = tmp_path_factory.mktemp("w") / "out"
    real_write = os.write
    calls = []

    def short_write(fd: int, chunk: bytes | memoryview) -> int:
        calls.append(len(chunk))
        return real_write(fd, bytes(chunk)[:most])

    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fd_write.os, "write", short_write)
            fd_write.write_all(fd, data)
    finally:
        os.close(fd)
    assert Path(path).read_bytes() == data
    assert len(calls) == -(-len(data) // most)  # no call for nothing, none wasted


def test_an_error_leaves_what_was_written_before_it(tmp_path: Path) -> None:
    path = tmp_path / "out"
    real_write = os.write
    taken = []

    def failing_second(fd: int, chunk: bytes | memoryview) -> int:
        if taken:
            raise OSError(28, "No space left on device")
        taken.append(1)
        return real_write(fd, bytes(chunk)[:4])

    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fd_write.os, "write", failing_second)
            with pytest.raises(OSError, match="No space"):
                fd_write.write_all(fd, b"0123456789")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"0123"
