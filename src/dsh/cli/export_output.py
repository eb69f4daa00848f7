"""Where ``dsh sessions export`` writes: its bytes as they are made, never the whole export held.

The export comes as pieces (a Markdown section, a log line); ``write_export`` gathers them into
writes of about ``WRITE_BYTES`` and writes each as it fills, to standard output or to the file
``-o`` names. A file is whole or not there: the pieces go to a temporary file beside it
(``.NAME.XXXXXXXX.dsh-export``, made with ``O_EXCL``), which is given the permission bits the
file had (a new one: ``0o666`` less the umask, as ``open`` gives) and renamed over it once the
last piece is written; an error on the way (a full disk, a log that does not read further)
removes it and leaves the file as it was. A symlink is followed (its target is replaced, the
link kept, as writing through it did). What no rename can stand for — ``/dev/stdout``, a FIFO, a
device — and a file in a directory dsh may not create files in are written in place, as before.
Standard output's reader going away (``dsh sessions export ID | head``) ends the command quietly
(``dsh.cli.standard_streams``), whatever was written by then.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import click

WRITE_BYTES = 1 << 20
"""About this many bytes are gathered before each write."""


def gathered(pieces: Iterable[bytes], size: int | None = None) -> Iterator[bytes]:
    """``pieces`` joined into blocks of at least ``size`` bytes (``WRITE_BYTES``; the last one
    shorter): the same bytes in fewer writes."""
    size = WRITE_BYTES if size is None else size
    held: list[bytes] = []
    count = 0
    for piece in pieces:
        held.append(piece)
        count += len(piece)
        if count >= size:
            yield b"".join(held)
            held, count = [], 0
    if held:
        yield b"".join(held)


def write_export(pieces: Iterable[bytes], output: str | None) -> None:
    """Write ``pieces`` to standard output (``output`` None) or to the file ``output``, whole
    or not at all (the module's docstring)."""
    if output is None:
        for block in gathered(pieces):
            click.echo(block, nl=False)
        return
    try:
        _write_file(pieces, output)
    except OSError as exc:  # a full disk names no file by itself: name the one written
        exc.filename = output
        raise


def _write_file(pieces: Iterable[bytes], output: str) -> None:
    target = os.path.realpath(output)
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    if before is not None and not stat.S_ISREG(before.st_mode):  # /dev/stdout, a FIFO
        with open(target, "wb") as handle:
            _write_all(handle, pieces)
        return
    directory, name = os.path.split(target)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".dsh-export", dir=directory)
    except PermissionError:  # a writable file in a directory dsh may not create files in
        with open(target, "wb") as handle:
            _write_all(handle, pieces)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            _write_all(handle, pieces)
            os.fchmod(handle.fileno(), _mode(before))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _write_all(handle: BinaryIO, pieces: Iterable[bytes]) -> None:
    for block in gathered(pieces):
        handle.write(block)


def _mode(before: os.stat_result | None) -> int:
    """The permission bits the file had, or a new file's: ``0o666`` less the umask."""
    if before is not None:
        return stat.S_IMODE(before.st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
