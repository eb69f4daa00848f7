"""The ``bash`` tool's keeper: what a command leaves behind, and what it can see of its parent."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from dsh.tools.base import ToolContext
from dsh.tools.keeper import decode_spec, encode_spec
from dsh.tools.kept_process import KEEPER
from dsh.tools.shell import BashTool
from tests.tools.test_shell import alive, bash, gone_soon, read_pid

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux subreaper")

ESCAPE = "setsid sleep 600 > /dev/null 2>&1 & echo $! > escaped.pid; "
"""A process that leaves the command's process group and session."""


@linux
def test_a_timeout_kills_what_left_the_process_group_too(ctx: ToolContext, workspace: Path) -> None:
    out = bash(ctx, ESCAPE + "echo started; sleep 60", timeout=1)
    assert out.code == "TIMEOUT" and "started" in out.text
    assert gone_soon(read_pid(workspace / "escaped.pid"))


@linux
def test_cancelling_the_call_kills_what_left_the_process_group_too(
    ctx: ToolContext, workspace: Path
) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(BashTool().run({"command": ESCAPE + "sleep 60"}, ctx))
        await asyncio.to_thread(read_pid, workspace / "escaped.pid")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert gone_soon(read_pid(workspace / "escaped.pid"))


@linux
def test_background_processes_outlive_the_call_and_die_when_dsh_exits(
    ctx: ToolContext, workspace: Path
) -> None:
    out = bash(ctx, ESCAPE + "(sleep 600 > /dev/null 2>&1 & echo $! > daemon.pid)")
    assert not out.is_error, out.text
    pids = [read_pid(workspace / "escaped.pid"), read_pid(workspace / "daemon.pid")]
    try:
        assert all(alive(pid) for pid in pids)
        KEEPER.stop_all()  # what dsh's exit does (any exit closes the lifeline)
        assert not [pid for pid in pids if not gone_soon(pid)]
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@linux
def test_the_command_s_parent_holds_no_environment(ctx: ToolContext) -> None:
    out = bash(ctx, "cat /proc/$PPID/environ | wc -c; cat /proc/self/environ | tr '\\0' '\\n'")
    parent_size, *own = out.text.splitlines()
    assert parent_size == "0"
    assert "PAGER=cat" in own


def test_a_shell_that_cannot_be_found_is_an_os_error(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bash there
    with pytest.raises(FileNotFoundError, match="bash"):
        bash(ctx, "true")


def test_a_command_cut_short_on_its_way_to_the_keeper_never_runs() -> None:
    spec = encode_spec(["bash", "-c", "rm -rf build && make"], {"A": "1", "B": "x=y"})
    command = [b"bash", b"-c", b"rm -rf build && make"]
    assert decode_spec(spec) == (command, {b"A": b"1", b"B": b"x=y"}, False)
    assert [n for n in range(len(spec)) if decode_spec(spec[:n]) is not None] == []


def test_a_command_with_a_nul_byte_is_refused_and_no_part_of_it_runs(
    ctx: ToolContext, workspace: Path
) -> None:
    with pytest.raises(ValueError, match="null byte"):
        bash(ctx, "touch ran\x00; rm -rf important")
    assert not (workspace / "ran").exists()
