"""dsh's one keeper process: every ``bash`` call is a call keeper it forks, a keeper killed from
outside stops no call and is replaced at the next one, and one that cannot start is an error."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
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
