"""An MCP server's program over stdio, run under dsh's keeper (:mod:`dsh.tools.kept_process`).

The SDK's ``stdio_client`` starts the program itself, in a process group of its own, and at the
end signals that group: what the server started in a session of its own (a ``setsid`` daemon)
outlived it and dsh. :func:`kept_stdio_client` is the same transport (the streams of
``SessionMessage`` a ``ClientSession`` reads and writes, newline-delimited JSON-RPC on the
program's stdin and stdout, its stderr to ``errlog``) with the program started as a *service*
under the keeper: its call keeper kills everything it started when the program exits, when dsh
stops it, and when dsh exits however it exits.

Shutdown follows the SDK's (and the MCP specification's) order, each wait bounded: the messages
already accepted are flushed, the program's stdin is closed, it has :data:`EXIT_GRACE_S` to
exit, then its process group gets SIGTERM and as long again, then everything left is killed;
the transport ends once the call keeper is done, so nothing of the server runs after it.

The SDK is imported inside :func:`kept_stdio_client`, when a server starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any

import anyio

from dsh.tools.kept_process import KeeperLost, KeptProcess

EXIT_GRACE_S = 2.0
"""How long the program has to exit once its stdin is closed, and again after SIGTERM."""
FLUSH_S = 0.5
"""How long the messages already accepted have to reach the program at shutdown."""


@contextlib.asynccontextmanager
async def kept_stdio_client(
    command: list[str], *, environment: Mapping[str, str], cwd: Path, errlog: IO[str]
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` under the keeper; yield the session's read and write streams. Raises
    ``OSError`` when the program cannot be run (``FileNotFoundError``: not found)."""
    from mcp.client.stdio import get_default_environment

    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    try:
        process = await KeptProcess.start(
            command,
            cwd=cwd,
            environment=get_default_environment() | dict(environment),  # as the SDK's
            stdio=(stdin_read, stdout_write, errlog.fileno()),
            service=True,
        )
    except BaseException:
        _close(stdin_write, stdout_read)
        raise
    finally:
        _close(stdin_read, stdout_write)
    pipes = _Pipes(stdin_write, stdout_read)
    try:
        await process.wait_started()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pipes.read_messages)
            tasks.start_soon(pipes.write_messages)
            try:
                yield pipes.session_read, pipes.session_write
            finally:
                with anyio.CancelScope(shield=True):
                    await pipes.shut(process)
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.stop()  # at once when it is done already
        process.release()
        pipes.close()


class _Pipes:
    """The program's stdin and stdout, and the streams the session uses over them."""

    def __init__(self, stdin: int, stdout: int) -> None:
        from mcp.shared.message import SessionMessage

        os.set_blocking(stdin, False)
        os.set_blocking(stdout, False)
        self.stdin: int | None = stdin
        self.stdout: int | None = stdout
        self._to_session, self.session_read = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](0)
        self.session_write, self._from_session = anyio.create_memory_object_stream[SessionMessage](
            0
        )
        self._written = anyio.Event()

    async def read_messages(self) -> None:
        """Pass each line of the program's output on to the session, as a message (or the
        error parsing it); when the session is gone, read on and drop them (a server blocked
        writing could not exit). The session hears of the end of the output."""
        import mcp_types
        from mcp.shared.message import SessionMessage

        assert self.stdout is not None
        pending = b""
        async with self._to_session:
            while chunk := await _read(self.stdout):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    try:
                        parsed = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                        message: SessionMessage | Exception = SessionMessage(parsed)
                    except ValueError as exc:
                        message = exc
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await self._to_session.send(message)

    async def write_messages(self) -> None:
        """Write each message of the session to the program's stdin, a line each; when that
        fails, end the session's reading too (a request must not wait for an answer)."""
        assert self.stdin is not None
        try:
            async with self._from_session:
                async for message in self._from_session:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await _write(self.stdin, line.encode() + b"\n")
        except OSError:
            await self._to_session.aclose()
        finally:
            self._written.set()

    async def shut(self, process: KeptProcess) -> None:
        """Stop the traffic, flush, close stdin, and give the program its graces to exit."""
        self.session_read.close()
        self.session_write.close()
        with anyio.move_on_after(FLUSH_S):
            await self._written.wait()
        self._close_stdin()
        if not await _exited(process):  # then the group is its own still
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            await _exited(process)

    def _close_stdin(self) -> None:
        if self.stdin is not None:
            anyio.notify_closing(self.stdin)
            os.close(self.stdin)
            self.stdin = None

    def close(self) -> None:
        self._close_stdin()
        if self.stdout is not None:
            anyio.notify_closing(self.stdout)
            os.close(self.stdout)
            self.stdout = None


async def _exited(process: KeptProcess) -> bool:
    """Whether the program exits within :data:`EXIT_GRACE_S` (or its keeper is gone)."""
    with anyio.move_on_after(EXIT_GRACE_S):
        with contextlib.suppress(KeeperLost):
            await process.wait()
        return True
    return False


async def _read(fd: int) -> bytes:
    """The next bytes of the pipe ``fd`` (non-blocking), empty at its end."""
    while True:
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            await anyio.wait_readable(fd)


async def _write(fd: int, data: bytes) -> None:
    """All of ``data`` to the pipe ``fd`` (non-blocking)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)
