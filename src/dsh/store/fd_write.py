"""Writing all of a buffer to a file descriptor.

``os.write`` may write less than it is given (a signal, a pipe or a disk that takes part);
every writer of a file dsh keeps (the logs, the derived files under the dsh home, a tool's
atomic write) goes on from where the short write stopped, through this one loop.
"""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write every byte of ``data`` to ``fd``, however many calls it takes (an ``OSError``
    propagates, with what was written before it left written)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
