"""A ``write_file`` killed at any moment (SIGKILL: no ``except`` or ``finally`` runs) leaves the
file with its complete old bytes or its complete new bytes, never a mix, never cut short
(``dsh.tools.atomic_write``); what it leaves beside the file is its own temporary file, which the
next process's write of the same file removes. The kills are real: a child process writes
through the real tool and is killed, at each step of the write in turn, and from outside at
random moments while it writes a large file over and over."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsh.tools.atomic_write import TEMP_MARK

WRITE = """
import asyncio, os, signal, sys
from pathlib import Path
from dsh.tools.base import ToolContext
from dsh.tools.files import WriteFileTool

workspace, name, content = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
at, nth = (sys.argv[4], int(sys.argv[5])) if len(sys.argv) > 5 else (None, 0)
seen = 0


def in_workspace(first):
    if isinstance(first, int):
        return os.readlink(f"/proc/self/fd/{first}").startswith(str(workspace))
    return "TEMP_MARK" in os.fsdecode(first)


def killing(real):
    def call(first, *args, **kwargs):  # only the write's own calls count
        global seen
        if in_workspace(first):
            seen += 1
            if seen == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(first, *args, **kwargs)
    return call


if at:
    setattr(os, at, killing(getattr(os, at)))
ctx = ToolContext(workspace=workspace, session_id="s", call_id="c")
print(asyncio.run(WriteFileTool().run({"path": name, "content": content}, ctx)).text)
""".replace("TEMP_MARK", TEMP_MARK)

OLD, NEW = "old line\n" * 100, "new line\n" * 100


def write_in_child(
    workspace: Path, content: str, *kill_at: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-P", "-c", WRITE, str(workspace.resolve()), "f.txt", content]
    return subprocess.run([*command, *kill_at], capture_output=True, text=True, check=False)


def leftovers(workspace: Path) -> list[str]:
    return sorted(name for name in os.listdir(workspace) if name != "f.txt")


@pytest.mark.parametrize(
    ("at", "nth", "left"),
    [
        ("write", 1, OLD),  # the temporary file made, nothing in it yet
        ("fsync", 1, OLD),  # the new bytes written, not yet synced
        ("replace", 1, OLD),  # synced, not yet renamed
        ("fsync", 2, NEW),  # renamed, the directory not yet synced
    ],
    ids=["before-the-bytes", "before-their-fsync", "before-the-rename", "before-the-dir-fsync"],
)
def test_a_write_killed_at_each_step_leaves_the_old_or_the_new_file_whole(
    workspace: Path, at: str, nth: int, left: str
) -> None:
    (workspace / "f.txt").write_text(OLD)
    child = write_in_child(workspace, NEW, at, str(nth))
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
    assert (workspace / "f.txt").read_text() == left
    found = leftovers(workspace)
    if left == OLD:  # the killed write's own temporary file, and nothing else
        assert len(found) == 1 and found[0].startswith(f".f.txt{TEMP_MARK}"), found
    else:
        assert found == []

    again = write_in_child(workspace, "third\n")
    assert again.returncode == 0, again.stderr
    assert (workspace / "f.txt").read_text() == "third\n"
    assert leftovers(workspace) == []  # the next process's write removed it


KILLS = 20
BIG = 4 * 1024 * 1024

LOOP = """
import asyncio, sys
from pathlib import Path
from dsh.tools.base import ToolContext
from dsh.tools.files import WriteFileTool

workspace, size = Path(sys.argv[1]), int(sys.argv[2])
contents = [(letter * 99 + "\\n") * (size // 100) for letter in "AB"]
ctx = ToolContext(workspace=workspace, session_id="s", call_id="c")
turn = 1 if (workspace / "f.txt").read_text()[:1] == "A" else 0
while True:  # A, B, A, ... until killed
    asyncio.run(WriteFileTool().run({"path": "f.txt", "content": contents[turn]}, ctx))
    print("wrote", flush=True)
    turn = 1 - turn
"""


def test_a_large_write_killed_at_random_moments_always_leaves_a_whole_file(
    workspace: Path,
) -> None:
    whole = {letter: (letter * 99 + "\n") * (BIG // 100) for letter in "AB"}
    target = workspace / "f.txt"
    target.write_text(whole["A"])
    command = [sys.executable, "-P", "-c", LOOP, str(workspace.resolve()), str(BIG)]
    chance = random.Random(os.getpid())
    seen_left: set[str] = set()
    for _ in range(KILLS):
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline() == "wrote\n"  # the loop is running
        started = time.monotonic()
        assert child.stdout.readline() == "wrote\n"
        one_write = time.monotonic() - started
        time.sleep(chance.uniform(0, one_write))  # somewhere in the next write
        child.kill()
        child.wait()
        child.stdout.close()
        now = target.read_text()
        assert now in (whole["A"], whole["B"]), f"{len(now)} bytes, starting {now[:10]!r}"
        seen_left.update(leftovers(workspace))
    assert all(name.startswith(f".f.txt{TEMP_MARK}") for name in seen_left), seen_left
