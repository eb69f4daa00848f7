from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from dsh.tools.base import OutputSoFar, ToolContext, ToolOutput
from dsh.tools.shell import BashTool, CappedOutput


def bash(ctx: ToolContext, command: str, timeout: int | None = None) -> ToolOutput:
    args: dict[str, object] = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    result: ToolOutput = asyncio.run(BashTool().run(args, ctx))
    return result


def alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie (a container's init may not reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def gone_soon(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def read_pid(path: Path, seconds: float = 5.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(path.read_text().strip())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_bash_success_returns_output(ctx: ToolContext) -> None:
    out = bash(ctx, "echo hello")
    assert out.text == "hello\n"
    assert not out.is_error


def test_bash_nonzero_exit_code_is_error_with_merged_output(ctx: ToolContext) -> None:
    out = bash(ctx, "echo out; echo err >&2; exit 3")
    assert out.is_error
    assert "out" in out.text and "err" in out.text
    assert out.text.endswith("[exit code 3]")


def test_bash_killed_by_signal_is_reported(ctx: ToolContext) -> None:
    out = bash(ctx, "kill -KILL $$")
    assert out.is_error
    assert "killed by signal SIGKILL" in out.text


def test_bash_cwd_is_the_workspace(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "marker.txt").write_text("")
    out = bash(ctx, "pwd; ls")
    assert out.text.splitlines() == [str(workspace.resolve()), "marker.txt"]


def test_bash_stdin_is_closed(ctx: ToolContext) -> None:
    out = bash(ctx, "cat; echo done", timeout=5)
    assert out.text == "done\n"


def test_bash_timeout_kills_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    start = time.monotonic()
    out = bash(ctx, "echo started; sleep 60 & echo $! > child.pid; wait", timeout=1)
    assert time.monotonic() - start < 10
    assert out.is_error
    assert out.code == "TIMEOUT"
    assert "timed out after 1 s" in out.text
    assert "started" in out.text
    assert gone_soon(read_pid(workspace / "child.pid"))


def test_bash_output_cap_keeps_head_and_tail(ctx: ToolContext) -> None:
    out = bash(ctx, "printf HEAD; yes x | head -c 100000; printf TAIL")
    assert out.text.startswith("HEAD")
    assert out.text.endswith("TAIL")
    assert "… [70008 characters omitted] …" in out.text
    assert len(out.text) < 30_100


def test_capped_output_marker_and_multibyte_split() -> None:
    cap = CappedOutput(cap=10)
    data = "ab€" * 10  # € is three bytes in UTF-8; feed byte by byte to split it
    for byte in data.encode():
        cap.feed(bytes([byte]))
    cap.feed(b"", final=True)
    assert cap.text() == "ab€ab\n… [20 characters omitted] …\nb€ab€"


def test_capped_output_under_cap_is_unchanged() -> None:
    cap = CappedOutput(cap=10)
    cap.feed(b"short")
    assert cap.text() == "short"


def test_cancelling_the_task_kills_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(
            BashTool().run(
                {"command": "echo $$ > shell.pid; sleep 60 & echo $! > child.pid; wait"}, ctx
            )
        )
        await asyncio.to_thread(read_pid, workspace / "child.pid")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert task.cancelled()

    asyncio.run(scenario())
    assert gone_soon(read_pid(workspace / "shell.pid"))
    assert gone_soon(read_pid(workspace / "child.pid"))


def test_a_cancelled_command_leaves_what_it_printed_once_everything_is_killed(
    workspace: Path,
) -> None:
    """Cancellation still propagates; the output is read to its end (the pipe's rest too)."""
    so_far = OutputSoFar()
    ctx = ToolContext(workspace=workspace, session_id="s", call_id="c", output_so_far=so_far)
    command = "echo one; echo two >&2; sleep 60 & echo $! > child.pid; wait"

    async def scenario() -> None:
        task = asyncio.create_task(BashTool().run({"command": command}, ctx))
        await asyncio.to_thread(read_pid, workspace / "child.pid")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert task.cancelled()

    asyncio.run(scenario())
    assert so_far.text == "one\ntwo\n"
    assert gone_soon(read_pid(workspace / "child.pid"))


def test_background_process_holding_the_output_is_killed(ctx: ToolContext, workspace: Path) -> None:
    out = bash(ctx, "sleep 60 & echo $! > bg.pid; echo main done")
    assert not out.is_error
    assert "main done" in out.text
    assert "background processes" in out.text
    assert gone_soon(read_pid(workspace / "bg.pid"))


def test_background_process_with_redirected_output_keeps_running(
    ctx: ToolContext, workspace: Path
) -> None:
    out = bash(ctx, "sleep 60 > /dev/null 2>&1 & echo $! > bg.pid")
    pid = read_pid(workspace / "bg.pid")
    try:
        assert out.text == "(no output)"
        assert alive(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
