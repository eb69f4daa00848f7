"""A program run under dsh's keeper (:mod:`dsh.tools.keeper`), seen from dsh.

One keeper per dsh process (per pid: a forked child that runs tools gets its own), started at
the first ``bash`` call or MCP server start and kept until dsh exits; the ``bash`` tool
(:mod:`dsh.tools.kept_shell`) and the MCP servers (:mod:`dsh.tools.mcp.kept_stdio`) share it.
One per process, not per registry or workspace, because what it guards is the process's life:
the *lifeline*, a pipe whose only write end dsh holds, closes when dsh exits in any way (a
return, a signal, ``kill -9``), and then the keeper and every call keeper kill everything every
call started. At a normal exit an ``atexit`` hook closes it and waits for the keeper.

A call costs no interpreter start and no fork on its way: dsh sends one message with the call's
descriptors over a Unix socket (the *calls* socket) on which a call keeper, forked by the keeper
beforehand, waits idle; that one takes the call and the keeper forks the next meanwhile
(messages to the keeper itself go over another socket, the *link*). The call's arguments and
environment go through a pipe to the call keeper alone (the keepers' own environment is empty);
its reports (``keeper``, ``started``/``failed``, ``exited``) come back on a status pipe that only
the call keeper holds, so that pipe's end of file is the call keeper's exit: every process of
the call is gone then (or was left running, when dsh no longer waited for it). A byte on the
call's control pipe stops it.

A keeper killed from outside stops no call (each call keeper watches the lifeline itself); the
next call starts a new keeper, and :class:`KeeperUnavailable` says so when one cannot be started.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from dsh.tools.keeper import encode_spec

KEEPER_PROGRAM = Path(__file__).with_name("keeper.py")
STOP_SECONDS = 5.0
"""How long a stopped call keeper may take to kill its processes before the keeper kills it
and its subtree."""
EXIT_WAIT_SECONDS = 5.0
"""How long an exiting dsh waits for the keeper to have killed everything."""
NO_SIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)


class KeeperLost(RuntimeError):
    """The call keeper ended without saying how the program ended (it was killed from outside)."""


class KeeperUnavailable(RuntimeError):
    """No keeper could be started (or reached) to run a program."""


class KeeperLink:
    """This process's lifeline, its keeper and the sockets to it and its idle call keeper."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = 0
        self._lifeline = (-1, -1)
        self._link: socket.socket | None = None
        self._calls: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._retired: list[subprocess.Popen[bytes]] = []
        self._hooked = False
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    @property
    def pid(self) -> int:
        """The running keeper's pid (0: none yet)."""
        with self._lock:
            return self._process.pid if self._process and self._owner == os.getpid() else 0

    def send(self, message: bytes, fds: Sequence[int] = ()) -> None:
        """Send ``message`` (and ``fds``) to the keeper, a ``call`` to its idle call keeper,
        starting a keeper when there is none or it died. Raises :class:`KeeperUnavailable` when
        none can be started or reached."""
        with self._lock:
            if self._owner != os.getpid():
                self._lifeline = os.pipe()  # neither end is inherited by anything else
                self._owner = os.getpid()
                if not self._hooked:
                    atexit.register(self.stop_all)
                    self._hooked = True
            error: OSError | None = None
            for _ in range(2):
                if self._link is None or self._process is None or self._process.poll() is not None:
                    self._start()
                target = self._calls if message == b"call" else self._link
                assert target is not None
                try:
                    socket.send_fds(target, [message], list(fds), NO_SIGNAL)
                    return
                except OSError as exc:  # it died or is dying: retire it, start another
                    error = exc
                    self._retire()
            raise KeeperUnavailable(f"the process keeper does not take calls: {error}")

    def _start(self) -> None:
        self._retire()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        calls, their_calls = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        passed = (self._lifeline[0], theirs.fileno(), their_calls.fileno())
        try:
            program = [sys.executable, "-I", "-S", str(KEEPER_PROGRAM)]
            self._process = subprocess.Popen(
                [*program, *map(str, passed)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={},
                pass_fds=passed,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            ours.close()
            calls.close()
            raise KeeperUnavailable(
                f"cannot start the process keeper ({sys.executable} {KEEPER_PROGRAM}): {exc}"
            ) from exc
        finally:
            theirs.close()
            their_calls.close()
        self._link, self._calls = ours, calls

    def _retire(self) -> None:
        """Drop the current keeper (reaped now if it has exited, else at a later start); its
        idle call keeper exits as its calls socket ends."""
        for link in (self._link, self._calls):
            if link is not None:
                link.close()
        self._link = self._calls = None
        if self._process is not None:
            self._retired.append(self._process)
            self._process = None
        self._retired = [proc for proc in self._retired if proc.poll() is None]

    def _forget(self) -> None:
        """In a forked child: close the parent's lifeline (its keeper must see the parent's
        exit, not wait for the child's) and sockets; the parent's keeper is not the child's."""
        if self._owner:
            for fd in self._lifeline:
                with contextlib.suppress(OSError):
                    os.close(fd)
        for link in (self._link, self._calls):
            if link is not None:
                with contextlib.suppress(OSError):
                    link.close()
        self._lock = threading.Lock()
        self._owner = 0
        self._link = self._calls = None
        self._process = None
        self._retired = []

    def stop_all(self, timeout: float = EXIT_WAIT_SECONDS) -> None:
        """Close the lifeline, so the keeper and every call keeper kill what their calls
        started, and wait (at most ``timeout``) for the keeper to be done. The next call makes a
        new lifeline and keeper."""
        with self._lock:
            if self._owner != os.getpid():
                return
            for fd in self._lifeline:
                os.close(fd)
            self._owner = 0
            process = self._process
            self._retire()
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)


KEEPER = KeeperLink()


class KeptProcess:
    """One call: the program's pid and exit, and the ways to end it."""

    def __init__(self, status_read: int, control: int) -> None:
        self._status_file = os.fdopen(status_read, "rb", buffering=0)
        self._status = asyncio.StreamReader()
        self._transport: asyncio.BaseTransport | None = None
        self._control = control
        self._released = False
        self.keeper_pid = 0
        """The call keeper's pid, once it said it."""
        self.pid = 0
        """The program's pid, once it runs."""

    @classmethod
    async def start(
        cls,
        argv: list[str],
        *,
        cwd: Path,
        environment: Mapping[str, str],
        stdio: tuple[int, int, int],
        service: bool = False,
    ) -> KeptProcess:
        """Start ``argv`` under the keeper in ``cwd`` with exactly ``environment``, its stdin,
        stdout and stderr duplicated from ``stdio`` (the caller still closes its own). A
        *service* is killed with everything it started when it exits; otherwise what it
        leaves behind runs on."""
        spec = encode_spec(argv, dict(environment), service=service)  # or nothing starts
        directory = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY)
        spec_read, spec_write = os.pipe()
        status_read, status_write = os.pipe()
        control_read, control_write = os.pipe()
        theirs = (spec_read, status_write, control_read, directory)  # dsh closes its copies
        try:
            KEEPER.send(b"call", [*stdio, *theirs])
        except BaseException:
            for fd in (spec_write, status_read, control_write):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        _send(spec_write, spec)  # closes it
        kept = cls(status_read, control_write)
        try:
            loop = asyncio.get_running_loop()
            protocol = asyncio.StreamReaderProtocol(kept._status)
            kept._transport, _ = await loop.connect_read_pipe(lambda: protocol, kept._status_file)
        except BaseException:
            kept.signal_stop()
            kept.release()
            raise
        return kept

    async def _report(self) -> tuple[str, int]:
        """The call keeper's next report; ``KeeperLost`` at the end of them."""
        while line := await self._status.readline():
            word, _, value = line.decode("ascii", "replace").strip().partition(" ")
            if word == "keeper":
                self.keeper_pid = int(value)
            elif word in ("started", "exited", "failed") and value.lstrip("-").isdigit():
                return word, int(value)
        if self.keeper_pid:
            raise KeeperLost("the call's keeper process was killed before its program ended")
        raise KeeperLost("the process keeper ended before it started the program")

    async def wait_started(self) -> int:
        """The program's pid once it runs; ``OSError`` when it could not be run."""
        while not self.pid:
            word, value = await self._report()
            if word == "started":
                self.pid = value
            elif word == "failed":
                raise OSError(value, os.strerror(value))
        return self.pid

    async def wait(self) -> int:
        """The program's exit code once it has exited (negative: the signal that killed it).
        Raises ``OSError`` when it could not be run, ``KeeperLost`` when its keeper died."""
        await self.wait_started()
        while True:
            word, value = await self._report()
            if word == "exited":
                return value

    def signal_stop(self) -> None:
        """Ask the call keeper to kill everything the call started (it exits once done)."""
        if self._control >= 0:
            with contextlib.suppress(OSError):  # it is gone, or it has its byte already
                os.write(self._control, b"x")

    async def stop(self) -> bool:
        """Kill everything the call started and wait for its keeper to be done; a call keeper
        that takes longer than :data:`STOP_SECONDS` is killed with its subtree by the keeper
        (then False: it may not be done)."""
        self.signal_stop()
        try:
            await asyncio.wait_for(self.stopped(), STOP_SECONDS)
        except TimeoutError:
            if self.keeper_pid:
                with contextlib.suppress(KeeperUnavailable):
                    KEEPER.send(b"kill %d" % self.keeper_pid)
            return False
        return True

    async def stopped(self) -> None:
        """Return once the call keeper has exited (its status pipe ended)."""
        while await self._status.read(4096):
            pass

    def release(self) -> None:
        """dsh no longer waits for the call: close its pipes (what it left may run on)."""
        if self._released:
            return
        self._released = True
        if self._transport is not None:
            self._transport.close()  # and the file under it
        else:
            self._status_file.close()
        os.close(self._control)
        self._control = -1


def _send(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` and close it: at once what the pipe takes, the rest
    from a thread."""
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            view = view[os.write(fd, view) :]
    except BlockingIOError:
        os.set_blocking(fd, True)
        threading.Thread(target=_send_rest, args=(fd, view), name="dsh-spec", daemon=True).start()
        return
    except BrokenPipeError:
        pass  # the call keeper is gone; the status pipe says so
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)


def _send_rest(fd: int, view: memoryview) -> None:
    try:
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass  # the call keeper is gone; the status pipe says so
    finally:
        os.close(fd)
