"""Processes that hold a session's writer lock as a dsh writer does (the flock taken, their pid
written), or only look like they do (a live pid in the file, no flock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.pwrite(fd, f"{os.getpid()}\\ndsh run\\n".encode(), 0)
print("held", flush=True)
sys.stdin.read()
"""


class FlockHolder:
    """A process holding the writer lock at ``path`` until ``release`` (cleanly: the file
    emptied, as a writer's close leaves it) or ``crash`` (killed: its pid stays, its flock goes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "held\n"  # the flock is taken

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self) -> None:
        self.path.write_bytes(b"")
        self.crash()

    def crash(self) -> None:
        self.process.kill()
        self.process.wait()
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.close()
