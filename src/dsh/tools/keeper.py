"""The keeper of the processes dsh runs for its tools, and what dsh writes to a call keeper.

dsh runs this file as a program once per dsh process, at its first ``bash`` call or MCP server
start (``python -I -S keeper.py LIFELINE LINK CALLS``, an empty environment, in ``/``;
:mod:`dsh.tools.kept_process`). Of dsh it imports only :mod:`dsh.tools.subreaper` (what the
keeper and a call keeper share: reaping and killing their subtree) and
:mod:`dsh.tools.program_path` (a call's program is found in its ``PATH``'s absolute entries
only), and otherwise the standard library. It lives until dsh exits and is named
``dsh-keeper``. LINK and CALLS are Unix ``SOCK_SEQPACKET`` sockets whose other ends dsh holds.

Each *call* (one ``bash`` command, or one run of an MCP server) is a ``call`` message on CALLS
carrying seven descriptors: the program's stdin, stdout and stderr, then SPEC, STATUS and
CONTROL pipes and the working directory. The keeper does not read it: it keeps one *call keeper*
(``dsh-call``) forked (``os.fork``: no new interpreter) and idle, waiting on CALLS, and the idle
one takes the next call itself, so a call costs no fork and no hop through the keeper. Once it
has taken one it says so on the keeper's TAKEN pipe and the keeper forks the next idle one
(while the call runs, off its path). An idle call keeper exits when dsh closes CALLS, when
LIFELINE ends and when the keeper dies (the end of its ALIVE pipe, whose write end the keeper
alone holds); one is forked only once the keeper runs, that is at dsh's first call. Should a
fork fail, the keeper answers the waiting calls itself with ``failed ERRNO`` and tries again at
the next. A call keeper with a call:

- reads from SPEC the program's arguments and environment (``<length>\\n`` then NUL-separated
  parts, :func:`encode_spec`: nothing of it shows in ``ps`` beyond the arguments, the keepers'
  own environment stays empty, and a spec cut short runs nothing);
- is a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the program starts, a
  ``setsid`` or double-forked daemon included, stays in its subtree, so it is the call's;
- writes ``keeper PID`` (its own) on STATUS, starts the program in a new session in that
  directory and writes ``started PID`` or ``failed ERRNO`` (it could not be run), then
  ``exited CODE``;
- reaps every process of its subtree that exits, and lives as long as any does;
- kills its whole subtree with SIGKILL (found under ``/proc``), reaps it and exits when a byte
  comes on CONTROL (the call is stopped: a timeout, a cancel), on SIGTERM, SIGHUP or SIGINT, when
  LIFELINE reaches end of file (dsh holds the only write end, so that is dsh exiting, however it
  exits, ``kill -9`` included) and, for a *service* (an MCP server), when the program exits.
  End of file on CONTROL only means dsh no longer waits for the call.

The keeper itself is a subreaper too: what a killed call keeper leaves comes to it, and it kills
its whole subtree when LIFELINE closes. A ``kill PID`` message on LINK makes it kill a call
keeper that does not stop in time and that call's subtree (it knows the pid is its unreaped
child). It never starts a thread, so forking it is safe; a call keeper is independent of it
once it has its call (it watches LIFELINE itself), so a keeper killed from outside stops no
call.

Elsewhere than Linux there is no subreaper and no ``/proc``: a stopped call kills its program's
process group, and only while the program runs.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import sys

if not __package__:  # loaded from its file (the keeper program runs isolated): find dsh from it
    sys.path.append(os.path.abspath(__file__).rsplit(os.sep, 3)[0])  # after the standard library

from dsh.tools.program_path import absolute_entries
from dsh.tools.subreaper import RESET_SIGNALS, Subtree, descendants, sigkill

CALL_FDS = 7
"""Descriptors of a ``call`` message: stdin, stdout, stderr, spec, status, control, cwd."""
KEEP, SERVICE = b"keep", b"service"
"""What a call keeper does when its program exits: keep what it left, or kill it."""


def encode_spec(argv: list[str], environment: dict[str, str], *, service: bool = False) -> bytes:
    """What dsh writes to a call keeper's SPEC pipe: the length, then the mode, the argument
    count, the arguments and the variables. Raises ``ValueError`` for a NUL byte in any of them
    and ``UnicodeEncodeError`` for what UTF-8 cannot carry: such a call starts nothing."""
    texts = [*argv, *(f"{name}={value}" for name, value in environment.items())]
    parts = [SERVICE if service else KEEP, b"%d" % len(argv)]
    parts += [text.encode("utf-8", "surrogateescape") for text in texts]
    if any(b"\0" in part for part in parts):
        raise ValueError("embedded null byte")
    payload = b"\0".join(parts)
    return b"%d\n" % len(payload) + payload


def decode_spec(data: bytes) -> tuple[list[bytes], dict[bytes, bytes], bool] | None:
    """The arguments, environment and service flag of ``data``; None when it is cut short (dsh
    was stopped while writing it: the program must not run in part) or malformed."""
    length, newline, payload = data.partition(b"\n")
    if not newline or not length.isdigit() or int(length) != len(payload):
        return None
    mode, count, *parts = payload.split(b"\0")
    if mode not in (KEEP, SERVICE) or not count.isdigit() or not 0 < int(count) <= len(parts):
        return None
    argv, variables = parts[: int(count)], parts[int(count) :]
    environment = dict(v.split(b"=", 1) for v in variables if b"=" in v)
    return argv, environment, mode == SERVICE


class CallKeeper(Subtree):
    """Waits for a call, then starts its program, reports on it, reaps and finally kills what it
    started."""

    def __init__(self, lifeline: int) -> None:
        super().__init__(b"dsh-call")
        self.lifeline = lifeline
        self.status = -1
        self.control = -1
        self.program = 0
        self.program_done = False
        self.service = False

    def wait_for_call(self, calls: socket.socket, alive: int, taken: int) -> list[int] | None:
        """The descriptors of the call taken from ``calls`` (said on ``taken``, and all three
        closed); None when there will be none: dsh closed ``calls``, LIFELINE or ``alive`` (the
        keeper) ended, or a signal stops it."""
        watched = [calls.fileno(), self.lifeline, alive, self.wake]
        while not self.stopping:
            ready, _, _ = select.select(watched, [], [])
            if calls.fileno() in ready:  # before the ends: a call sent is a call to run
                fds = receive_call(calls)
                if fds is None:
                    return None  # dsh closed its end
                if fds:
                    calls.close()  # the next call is the next idle call keeper's
                    os.close(alive)
                    _write(taken, b"%d\n" % os.getpid())
                    os.close(taken)
                    return fds
            if self.lifeline in ready and not os.read(self.lifeline, 1):
                return None  # dsh has exited
            if alive in ready:
                return None  # only the end comes: the keeper has died
            if self.wake in ready:
                self.drain_wake()
        return None

    def run(self, fds: list[int]) -> int:
        *stdio, spec, self.status, self.control, cwd = fds
        self._report(b"keeper %d" % os.getpid())
        try:
            self.program = self._begin(_read_all(spec), stdio, cwd)
        finally:
            for fd in (*stdio, cwd):
                os.close(fd)  # only the program's processes hold its input and output open
        if not self.program:
            return 1
        self._report(b"started %d" % self.program)
        watched = [self.lifeline, self.control, self.wake]
        while self.reap() and not self.stopping:
            ready, _, _ = select.select(watched, [], [])
            if self.lifeline in ready and not os.read(self.lifeline, 1):
                self.stopping = True  # dsh has exited
            if self.control in ready:
                if os.read(self.control, 1):
                    self.stopping = True  # dsh stops the call
                else:
                    watched.remove(self.control)  # dsh no longer waits for the call
            if self.wake in ready:
                self.drain_wake()
        if self.stopping:
            self.kill_all(self.group())
        return 0

    def _begin(self, spec: bytes, stdio: list[int], cwd: int) -> int:
        """The program's pid once it runs; 0 when it did not start: its spec was cut short, the
        call was stopped first, or it could not be run (reported)."""
        decoded = decode_spec(spec)
        if decoded is None:
            return 0
        argv, environment, self.service = decoded
        if select.select([self.control], [], [], 0)[0] and os.read(self.control, 1):
            return 0
        try:
            os.fchdir(cwd)
            return self._start(argv, environment, stdio)
        except OSError as exc:
            self._report(b"failed %d" % (exc.errno or 0))
            return 0

    def _start(self, argv: list[bytes], environment: dict[bytes, bytes], stdio: list[int]) -> int:
        """Spawn the program in a session of its own (``posix_spawn``: no copy of the call
        keeper); its pid, or ``OSError`` when it could not be run."""
        return os.posix_spawn(
            _program_path(argv[0], environment),
            argv,
            environment,
            file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(stdio)],
            setsid=True,
            setsigdef=RESET_SIGNALS,
        )

    def _report(self, line: bytes) -> None:
        try:
            os.write(self.status, line + b"\n")
        except OSError:  # dsh is gone
            self.stopping = True

    def exited(self, pid: int, status: int) -> None:
        if pid == self.program:
            self.program_done = True
            self._report(b"exited %d" % os.waitstatus_to_exitcode(status))
            if self.service:
                self.stopping = True  # a server's leftovers go with it

    def group(self) -> int:
        return 0 if self.program_done else self.program  # then its number may be reused


class Keeper(Subtree):
    """Keeps a call keeper idle for the next call, reaps them, and kills all at dsh's exit."""

    def __init__(self, lifeline: int, link: socket.socket, calls: socket.socket) -> None:
        super().__init__(b"dsh-keeper")
        self.lifeline = lifeline
        self.link = link
        self.call_link = calls
        self.calls: set[int] = set()  # every call keeper not reaped yet, the idle one too
        self.idle = 0
        self.fork_error = 0
        self.taken, self.taken_write = os.pipe()
        os.set_blocking(self.taken, False)
        self.alive, self.alive_write = os.pipe()

    def serve(self) -> int:
        accepting = True
        while True:
            left = self.reap()
            if self.stopping:
                self.kill_all()
                return 0
            if not accepting and not left:
                return 0  # dsh closed its end and every call is over
            if accepting and not self.idle:
                self._fork_idle()
            watched: list[int | socket.socket] = [self.lifeline, self.wake, self.taken]
            if accepting:
                watched += [self.link] + ([] if self.idle else [self.call_link])
            ready, _, _ = select.select(watched, [], [])
            if self.lifeline in ready and not os.read(self.lifeline, 1):
                self.stopping = True  # dsh has exited
            if self.wake in ready:
                self.drain_wake()
            if self.taken in ready:
                self._taken()
            if self.link in ready and not self.stopping:
                accepting = self._receive()
            if self.call_link in ready and not self.stopping and accepting:
                accepting = self._refuse_call()

    def _receive(self) -> bool:
        """Handle one message on LINK (descriptors sent with it are dropped); False at its end."""
        try:
            message = self.link.recv(64)
        except OSError:
            return False
        if message.startswith(b"kill ") and message[5:].isdigit():
            self._kill_call(int(message[5:]))
        return bool(message)

    def _fork_idle(self) -> None:
        """Fork the call keeper that takes the next call (``fork_error`` when none could be)."""
        try:
            pid = os.fork()
        except OSError as exc:
            self.fork_error = exc.errno or errno.EAGAIN
            return
        if pid:
            self.calls.add(pid)
            self.idle = pid
            return
        code = 1
        try:
            self.link.close()
            self.release_wakeup()  # the call keeper makes its own
            for fd in (self.taken, self.alive_write):
                os.close(fd)
            call = CallKeeper(self.lifeline)
            fds = call.wait_for_call(self.call_link, self.alive, self.taken_write)
            code = call.run(fds) if fds else 0
        finally:
            os._exit(code)

    def _taken(self) -> None:
        """Hear which call keepers took a call: the idle one among them is idle no more."""
        try:
            pids = os.read(self.taken, 4096).split()
        except BlockingIOError:
            return
        if b"%d" % self.idle in pids:
            self.idle = 0

    def _refuse_call(self) -> bool:
        """No call keeper could be forked: answer the next call with that error. False when
        dsh closed CALLS."""
        fds = receive_call(self.call_link)
        if fds is None:
            return False
        if fds:
            _write(fds[4], b"failed %d\n" % self.fork_error)
            for fd in fds:
                os.close(fd)
        return True

    def _kill_call(self, pid: int) -> None:
        """SIGKILL call keeper ``pid`` (only while it is an unreaped child) and its subtree."""
        if pid in self.calls:
            for below in descendants(pid):
                sigkill(below)
            sigkill(pid)

    def exited(self, pid: int, status: int) -> None:
        self.calls.discard(pid)
        if pid == self.idle:
            self.idle = 0  # killed from outside, or CALLS ended: the next round forks another


def receive_call(calls: socket.socket) -> list[int] | None:
    """The descriptors of the next ``call`` message on ``calls`` (a non-blocking socket): empty
    when there is none to take yet (or it was malformed, and dropped), None at its end."""
    flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
    try:
        message, fds, _, _ = socket.recv_fds(calls, 64, CALL_FDS, flags)
    except BlockingIOError:
        return []
    except OSError:
        return None
    for fd in fds:
        os.set_inheritable(fd, False)  # where MSG_CMSG_CLOEXEC is missing
    if not message and not fds:
        return None
    if message == b"call" and len(fds) == CALL_FDS:
        return fds
    for fd in fds:
        os.close(fd)
    return []


def _program_path(name: bytes, environment: dict[bytes, bytes]) -> bytes:
    """``name`` found as ``execvp`` finds it, on the program's own ``PATH``, but only in its
    absolute entries (:mod:`dsh.tools.program_path`: an empty or relative one would find the
    workspace's ``./bash``, where the call runs)."""
    if b"/" in name:
        return name
    denied = False
    for directory in absolute_entries(environment.get(b"PATH", os.defpath.encode())):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            denied = True
    number = errno.EACCES if denied else errno.ENOENT
    raise OSError(number, os.strerror(number))


def _write(fd: int, data: bytes) -> None:
    try:  # noqa: SIM105
        os.write(fd, data)
    except OSError:
        pass


def _read_all(fd: int) -> bytes:
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    lifeline, link, calls = int(argv[1]), int(argv[2]), int(argv[3])
    for fd in (lifeline, link, calls):
        os.set_inheritable(fd, False)  # no program gets any
    call_link = socket.socket(fileno=calls)
    call_link.setblocking(False)  # an idle call keeper never waits in a receive
    return Keeper(lifeline, socket.socket(fileno=link), call_link).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
