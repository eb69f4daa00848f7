"""dsh's one keeper process: every ``bash`` call is a call keeper it forks, taken by the call
while it waits idle, a keeper killed from outside stops no call and is replaced at the next one
(its idle call keeper dies with it), and one that cannot start is an error."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from dsh.tools import kept_process
from dsh.tools.base import ToolContext
from dsh.tools.kept_process import KEEPER, KeeperUnavailable
from dsh.tools.shell import BashTool
from tests.tools.test_kept_shell import ESCAPE
from tests.tools.test_shell import alive, bash, gone_soon, read_pid

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and subreapers")

ANCESTRY = (
    "for p in $PPID $(awk '/^PPid:/{print $2}' /proc/$PPID/status); do "
    "echo \"$p $(cat /proc/$p/comm) $(awk '/^PPid:/{print $2}' /proc/$p/status)\"; done"
)
"""The command's parent and grandparent: ``PID COMM PARENT`` each."""


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def idle_call_keepers(keeper: int) -> list[int]:
    """The call keepers of ``keeper`` waiting for a call: those holding a socket (the one calls
    come on; one with a call has closed it)."""
    found = []
    for pid in children_of(keeper):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() != "dsh-call":
                continue
            fds = Path(f"/proc/{pid}/fd")
            if any(os.readlink(fds / fd).startswith("socket:") for fd in os.listdir(fds)):
                found.append(pid)
    return found


def the_idle_call_keeper(keeper: int, seconds: float = 10.0) -> int:
    """The one idle call keeper of ``keeper``, once it has forked it; never more than one."""
    deadline = time.monotonic() + seconds
    while True:
        idle = idle_call_keepers(keeper)
        assert len(idle) <= 1, f"more than one idle call keeper: {idle}"
        if idle:
            return idle[0]
        assert time.monotonic() < deadline, f"keeper {keeper} has no idle call keeper"
        time.sleep(0.02)


@linux
def test_every_call_is_a_call_keeper_forked_by_one_keeper_under_dsh(ctx: ToolContext) -> None:
    first, second = (bash(ctx, ANCESTRY).text.split("\n")[:2] for _ in range(2))
    call_keepers = []
    for call_keeper, keeper in (first, second):
        pid, comm, parent = call_keeper.split()
        assert comm == "dsh-call" and int(parent) == KEEPER.pid
        call_keepers.append(int(pid))
        pid, comm, parent = keeper.split()
        assert (int(pid), comm, int(parent)) == (KEEPER.pid, "dsh-keeper", os.getpid())
    assert call_keepers[0] != call_keepers[1]  # one per call, the keeper the same
    assert os.listdir(f"/proc/{KEEPER.pid}/task") == [str(KEEPER.pid)]  # one thread: forks safely


@linux
def test_a_keeper_killed_from_outside_stops_no_call_and_the_next_call_starts_another(
    ctx: ToolContext, workspace: Path
) -> None:
    bash(ctx, "true")
    killed = KEEPER.pid
    running = ESCAPE + "echo $$ > shell.pid; while [ ! -e go ]; do sleep 0.05; done; echo finished"

    async def scenario() -> str:
        task = asyncio.create_task(BashTool().run({"command": running}, ctx))
        await asyncio.to_thread(read_pid, workspace / "shell.pid")
        os.kill(killed, signal.SIGKILL)
        assert await asyncio.to_thread(gone_soon, killed)
        (workspace / "go").touch()
        return (await task).text

    daemon = 0
    try:
        assert asyncio.run(scenario()) == "finished\n"  # the call went on without the keeper
        daemon = read_pid(workspace / "escaped.pid")
        assert alive(daemon)  # and what it left runs on, under its call keeper
        out = bash(ctx, "echo again")
        assert out.text == "again\n" and KEEPER.pid not in (0, killed)
        KEEPER.stop_all()  # dsh's exit: the orphaned call keeper still sees the lifeline close
        assert gone_soon(daemon)
    finally:
        if daemon:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, signal.SIGKILL)


def test_a_keeper_that_cannot_be_started_is_a_clear_error_and_a_later_call_works(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    KEEPER.stop_all()  # the next call needs a new keeper
    with monkeypatch.context() as patched:
        patched.setattr(kept_process.sys, "executable", str(tmp_path / "no-python"))
        with pytest.raises(KeeperUnavailable, match="cannot start the process keeper"):
            bash(ctx, "echo never")
    assert KEEPER.pid == 0
    assert bash(ctx, "echo works").text == "works\n"


@linux
def test_a_call_after_an_idle_wait_is_taken_by_the_call_keeper_forked_before_it(
    ctx: ToolContext,
) -> None:
    bash(ctx, "true")  # the keeper runs
    idle = the_idle_call_keeper(KEEPER.pid)
    assert os.listdir(f"/proc/{idle}/task") == [str(idle)] and not children_of(idle)
    out = bash(ctx, "echo $PPID")
    assert out.text == f"{idle}\n"  # it ran the call: no fork on the call's way
    assert the_idle_call_keeper(KEEPER.pid) != idle  # and the keeper forked the next one


@linux
def test_concurrent_calls_each_get_a_call_keeper_of_their_own_and_one_stays_idle(
    ctx: ToolContext, workspace: Path
) -> None:
    bash(ctx, "true")
    waiting = "echo $PPID > {n}.keeper; while [ ! -e go ]; do sleep 0.05; done; echo $PPID"

    async def scenario() -> list[str]:
        runs = [BashTool().run({"command": waiting.format(n=n)}, ctx) for n in range(3)]
        tasks = [asyncio.create_task(run) for run in runs]
        keepers = [
            await asyncio.to_thread(read_pid, workspace / f"{n}.keeper", 30) for n in range(3)
        ]
        assert len(set(keepers)) == 3
        assert all(parent_of(pid) == KEEPER.pid for pid in keepers)
        idle = await asyncio.to_thread(the_idle_call_keeper, KEEPER.pid)
        assert idle not in keepers  # while they all run, one more waits for the next call
        (workspace / "go").touch()
        return [(await task).text for task in tasks]

    texts = asyncio.run(scenario())
    assert texts == [(workspace / f"{n}.keeper").read_text() for n in range(3)]
    the_idle_call_keeper(KEEPER.pid)  # one, not one per call that ran


@linux
def test_the_idle_call_keeper_dies_with_the_keeper_killed_from_outside(ctx: ToolContext) -> None:
    bash(ctx, "true")
    keeper = KEEPER.pid
    idle = the_idle_call_keeper(keeper)
    os.kill(keeper, signal.SIGKILL)
    assert gone_soon(idle)
    assert bash(ctx, "echo again").text == "again\n"
    assert the_idle_call_keeper(KEEPER.pid) != idle


@linux
def test_the_idle_call_keeper_dies_when_dsh_exits(ctx: ToolContext) -> None:
    bash(ctx, "true")
    keeper = KEEPER.pid
    idle = the_idle_call_keeper(keeper)
    KEEPER.stop_all()  # what dsh's exit does
    assert gone_soon(idle) and gone_soon(keeper)


def test_a_call_when_no_call_keeper_can_be_forked_fails_with_the_fork_s_error(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    unforkable = tmp_path / "unforkable_keeper.py"
    unforkable.write_text(
        "import errno, os, sys\n"
        f"sys.path.insert(0, {str(kept_process.KEEPER_PROGRAM.parent)!r})\n"
        "import keeper\n"
        "def no_fork():\n"
        "    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))\n"
        "os.fork = no_fork\n"
        "sys.exit(keeper.main(sys.argv))\n"
    )
    KEEPER.stop_all()
    try:
        with monkeypatch.context() as patched:
            patched.setattr(kept_process, "KEEPER_PROGRAM", unforkable)
            for _ in range(2):  # each call is answered, the keeper lives on
                with pytest.raises(BlockingIOError, match="bash"):
                    bash(ctx, "echo never")
    finally:
        KEEPER.stop_all()
    assert bash(ctx, "echo works").text == "works\n"
