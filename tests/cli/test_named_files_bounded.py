"""A file named on the command line is read to a bound: ``/dev/zero`` given by mistake to
``dsh sessions import`` grew dsh to 24 GB until the kernel killed it (Ctrl-C gave a
``MemoryError`` traceback after 22 s). A device is refused in one line; a pipe (``<(cmd)``,
``/dev/stdin``) is read up to a limit; a regular file whole."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from pathlib import Path

import pytest

from dsh.config.small_file import UnreadableFile, read_named_file, read_stream_bounded
from tests.cli.conftest import DSH


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([DSH, *args], env=env, cwd=cwd, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "import", "/dev/zero"),
        ("run", "--script", "s.json", "--prompts-file", "/dev/zero"),
        ("bench", "run", "--scenario", "/dev/zero.jsonl"),
    ],
)
def test_a_device_named_on_the_command_line_is_refused_in_one_line(
    args: tuple[str, ...], tmp_path: Path, env: dict[str, str]
) -> None:
    (tmp_path / "s.json").write_text('[{"text": "ok"}]')
    if args[0] == "bench":
        os.symlink("/dev/zero", tmp_path / "zero.jsonl")
        args = ("bench", "run", "--scenario", "zero.jsonl", "--backend", "basic", "--jobs", "1")
    done = dsh(*args, env=env, cwd=tmp_path)
    assert done.returncode != 0
    text = done.stdout.decode() + done.stderr.decode()
    assert "a character device, not a" in text, text  # "file", or "regular file" (import)
    assert "Traceback" not in text and "MemoryError" not in text


def test_a_pipe_is_read_to_its_limit_and_no_further(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write(size: int) -> None:
        # BrokenPipeError: the reader stopped at its limit, as it should
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as fh:
            fh.write(b"x" * size)

    for size, refused in ((1000, False), (1001, True)):
        writer = threading.Thread(target=write, args=(size,))
        writer.start()
        try:
            if refused:
                with pytest.raises(UnreadableFile, match="more than 1,000 bytes read from a pipe"):
                    read_named_file(fifo, limit=1000)
            else:
                assert read_named_file(fifo, limit=1000) == b"x" * 1000
        finally:
            writer.join()


def test_a_regular_file_is_read_whole_past_the_pipe_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"y" * 5000)
    assert read_named_file(path, limit=1000) == b"y" * 5000


def test_standard_input_is_read_to_its_limit() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"z" * 2001)
    os.close(write_end)
    try:
        with pytest.raises(UnreadableFile, match="stdin: more than 2,000 bytes"):
            read_stream_bounded(read_end, "stdin", limit=2000)
    finally:
        os.close(read_end)


def test_a_prompts_files_byte_order_mark_is_not_part_of_the_first_prompt(
    tmp_path: Path, env: dict[str, str]
) -> None:
    (tmp_path / "s.json").write_text('[{"text": "ok"}]')
    (tmp_path / "prompts.txt").write_bytes("\ufeffbom prompt\n".encode())
    done = dsh(
        "run",
        "--script",
        "s.json",
        "--prompts-file",
        "prompts.txt",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    log = next(Path(env["DSH_HOME"]).glob("sessions/*/session.jsonl")).read_text()
    assert '"bom prompt"' in log and "\\ufeff" not in log and "\ufeff" not in log
