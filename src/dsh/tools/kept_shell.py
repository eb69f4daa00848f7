"""A ``bash -c`` command run under its keeper (:mod:`dsh.tools.keeper`), seen from dsh.

Each command gets a keeper process between dsh and the shell; on Linux it is a child subreaper,
so every process the command starts (a ``setsid`` or double-forked daemon included) stays in
the keeper's subtree. What happens to them:

- the call ends when the shell has exited and its output is read to the end; what the command
  left running in the background (its output redirected) keeps running, and the keeper reaps it;
- ``stop`` (a timeout, a cancelled call) kills everything the command started;
- when dsh exits, everything every command started is killed: the keepers watch a *lifeline*,
  a pipe whose only write end dsh holds, so any exit — a return, a signal, ``kill -9`` —
  closes it. At a normal exit an ``atexit`` hook closes it and waits for the keepers.

The keeper runs with an empty environment and the command's own (scrubbed) environment reaches
only the shell, through a pipe: reading ``/proc/$PPID/environ`` in a command shows no key.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from dsh.tools.keeper import encode_spec

KEEPER_PROGRAM = Path(__file__).with_name("keeper.py")
STOP_SECONDS = 5.0
"""How long a stopped keeper may take to kill its processes before dsh kills it and the
shell's group itself."""
EXIT_WAIT_SECONDS = 5.0
"""How long an exiting dsh waits for the keepers to have killed everything."""


class KeeperLost(RuntimeError):
    """The keeper ended without saying how the shell ended (it was killed from outside)."""


class Keepers:
    """This process's lifeline and every keeper not yet reaped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = 0
        self._lifeline = (-1, -1)
        self._live: set[subprocess.Popen[bytes]] = set()
        self._hooked = False
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def lifeline(self) -> int:
        """The read end every keeper watches (made on first use, and after ``stop_all``)."""
        with self._lock:
            if self._owner != os.getpid():
                self._lifeline = os.pipe()  # neither end is inherited by anything else
                self._live = set()
                self._owner = os.getpid()
                if not self._hooked:
                    atexit.register(self.stop_all)
                    self._hooked = True
            return self._lifeline[0]

    def _forget(self) -> None:
        """In a forked child: close the parent's lifeline (its keepers must see the parent's
        exit, not wait for the child's) and its keepers, which are not the child's."""
        if self._owner:
            for fd in self._lifeline:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._lock = threading.Lock()
        self._owner = 0
        self._live = set()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._live.add(proc)

    def release(self, proc: subprocess.Popen[bytes]) -> None:
        """``proc``'s call is over: reap it now, or in a thread once its background is gone."""
        if proc.poll() is not None:
            with self._lock:
                self._live.discard(proc)
            return
        threading.Thread(target=self._reap, args=(proc,), name="dsh-keeper", daemon=True).start()

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        with self._lock:
            self._live.discard(proc)

    def live(self) -> list[int]:
        """The pids of the keepers not yet reaped."""
        with self._lock:
            return [proc.pid for proc in self._live]

    def stop_all(self, timeout: float = EXIT_WAIT_SECONDS) -> None:
        """Close the lifeline, so every keeper kills what its command started, and wait (at
        most ``timeout`` in all) for them to be done. The next command makes a new one."""
        with self._lock:
            if self._owner != os.getpid():
                return
            for fd in self._lifeline:
                os.close(fd)
            self._owner = 0
            live = list(self._live)
        deadline = time.monotonic() + timeout
        for proc in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(deadline - time.monotonic(), 0))


KEEPERS = Keepers()


class KeptShell:
    """One command: its combined output, the shell's exit, and the ways to end it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self.output = asyncio.StreamReader()
        self._status = asyncio.StreamReader()
        self._transports: list[asyncio.BaseTransport] = []
        self._released = False
        self.shell_pid = 0

    @classmethod
    async def start(cls, command: str, *, cwd: Path, environment: Mapping[str, str]) -> KeptShell:
        """Start ``bash -c command`` in ``cwd`` with exactly ``environment``, stdin closed."""
        spec = encode_spec(command, dict(environment))  # what cannot be encoded starts nothing
        lifeline = KEEPERS.lifeline()
        spec_read, spec_write = os.pipe()
        status_read, status_write = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(KEEPER_PROGRAM), str(lifeline), str(status_write)],
                stdin=spec_read,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env={},
                pass_fds=(lifeline, status_write),
                start_new_session=True,
            )
        except BaseException:
            os.close(spec_write)
            os.close(status_read)
            raise
        finally:
            os.close(spec_read)
            os.close(status_write)
        KEEPERS.add(proc)
        shell = cls(proc)
        sending = False
        try:
            await shell._connect(os.fdopen(status_read, "rb", buffering=0))
            sending = True
            await asyncio.to_thread(_send, spec_write, spec)  # closes it, even if cancelled
        except BaseException:
            if not sending:
                os.close(spec_write)
            shell.signal_stop()
            shell.release()
            raise
        return shell

    async def _connect(self, status: object) -> None:
        loop = asyncio.get_running_loop()
        assert self._proc.stdout is not None
        for stream, pipe in ((self.output, self._proc.stdout), (self._status, status)):
            transport, _ = await loop.connect_read_pipe(_protocol(stream), pipe)
            self._transports.append(transport)

    async def wait_shell(self) -> int:
        """The shell's exit code once it has exited (negative: the signal that killed it).
        Raises ``OSError`` when bash could not be run, ``KeeperLost`` when the keeper died."""
        while line := await self._status.readline():
            word, _, value = line.decode("ascii", "replace").strip().partition(" ")
            if word == "started":
                self.shell_pid = int(value)
            elif word == "exited":
                return int(value)
            elif word == "failed":
                number = int(value)
                raise OSError(number, os.strerror(number), "bash")
        raise KeeperLost("the command's keeper process was killed before the command ended")

    def kill_shell_group(self) -> None:
        """SIGKILL the shell's process group (not what left it)."""
        if self.shell_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.shell_pid, signal.SIGKILL)

    def signal_stop(self) -> None:
        """Ask the keeper to kill everything the command started (it exits once done)."""
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(signal.SIGTERM)  # a no-op once the keeper was reaped

    async def stop(self) -> None:
        """Kill everything the command started and wait for the keeper to be done; a keeper
        that takes longer than :data:`STOP_SECONDS` is killed, with the shell's group."""
        self.signal_stop()
        try:
            await asyncio.wait_for(self.stopped(), STOP_SECONDS)
        except TimeoutError:
            self._proc.kill()
            self.kill_shell_group()

    async def stopped(self) -> None:
        """Return once the keeper has exited (and was reaped)."""
        delay = 0.005
        while self._proc.poll() is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def release(self) -> None:
        """The call is over: close the pipes; the keeper lives on while its background does."""
        if self._released:
            return
        self._released = True
        for transport in self._transports:
            transport.close()
        KEEPERS.release(self._proc)


def _protocol(stream: asyncio.StreamReader) -> Callable[[], asyncio.StreamReaderProtocol]:
    return lambda: asyncio.StreamReaderProtocol(stream)


def _send(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass  # the keeper is gone; the status pipe says so
    finally:
        os.close(fd)
