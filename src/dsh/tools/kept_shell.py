"""A ``bash -c`` command run under dsh's keeper (:mod:`dsh.tools.kept_process`), seen from dsh.

The command's call keeper is a child subreaper on Linux, so every process the command starts (a
``setsid`` or double-forked daemon included) stays in its subtree. What happens to them:

- the call ends when the shell has exited and its output is read to the end; what the command
  left running in the background (its output redirected) keeps running, and its call keeper
  reaps it;
- ``stop`` (a timeout, a cancelled call) kills everything the command started;
- when dsh exits, everything every command started is killed (the lifeline, see
  :mod:`dsh.tools.kept_process`).

The keepers run with an empty environment and the command's own (scrubbed) environment reaches
only the shell, through a pipe: reading ``/proc/$PPID/environ`` in a command shows no key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path

from dsh.tools.kept_process import KeptProcess


class KeptShell:
    """One command: its combined output, the shell's exit, and the ways to end it."""

    def __init__(self, process: KeptProcess) -> None:
        self._process = process
        self.output = asyncio.StreamReader()
        self._transport: asyncio.BaseTransport | None = None

    @property
    def shell_pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(cls, command: str, *, cwd: Path, environment: Mapping[str, str]) -> KeptShell:
        """Start ``bash -c command`` in ``cwd`` with exactly ``environment``, stdin closed."""
        output_read, output_write = os.pipe()
        try:
            stdin = os.open(os.devnull, os.O_RDONLY)
            try:
                process = await KeptProcess.start(
                    ["bash", "-c", command],
                    cwd=cwd,
                    environment=environment,
                    stdio=(stdin, output_write, output_write),
                )
            finally:
                os.close(stdin)
        except BaseException:
            os.close(output_read)
            raise
        finally:
            os.close(output_write)  # only the command's processes hold the output open
        shell = cls(process)
        pipe = os.fdopen(output_read, "rb", buffering=0)
        try:
            loop = asyncio.get_running_loop()
            protocol = asyncio.StreamReaderProtocol(shell.output)
            shell._transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
        except BaseException:
            pipe.close()
            shell.signal_stop()
            shell.release()
            raise
        return shell

    async def wait_shell(self) -> int:
        """The shell's exit code once it has exited (negative: the signal that killed it).
        Raises ``OSError`` when bash could not be run, ``KeeperLost`` when its keeper died."""
        try:
            return await self._process.wait()
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, "bash") from None

    def kill_shell_group(self) -> None:
        """SIGKILL the shell's process group (not what left it)."""
        if self.shell_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.shell_pid, signal.SIGKILL)

    def signal_stop(self) -> None:
        """Ask the call keeper to kill everything the command started (it exits once done)."""
        self._process.signal_stop()

    async def stop(self) -> None:
        """Kill everything the command started and wait for its keeper to be done (one that
        takes too long is killed with its subtree, and the shell's group with it)."""
        if not await self._process.stop():
            self.kill_shell_group()

    async def stopped(self) -> None:
        """Return once the call keeper has exited."""
        await self._process.stopped()

    def release(self) -> None:
        """The call is over: close the pipes; the call keeper lives on while its background
        does."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        self._process.release()
