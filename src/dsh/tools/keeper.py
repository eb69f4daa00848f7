"""The keeper of the processes dsh runs for its tools, and the Linux process calls it shares.

dsh runs this file as a program once per dsh process, at its first ``bash`` call or MCP server
start (``python -I -S keeper.py LIFELINE LINK CALLS``, standard library only, an empty
environment, in ``/``; :mod:`dsh.tools.kept_process`). It lives until dsh exits and is named
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from types import FrameType
    from typing import Any
else:  # the C module under ``signal``, without its enums: the keeper imports little
    import _signal as signal

PR_SET_NAME = 15
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RESET_SIGNALS = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
"""Restored to their defaults in the program (Python ignores SIGPIPE and SIGXFSZ)."""
CALL_FDS = 7
"""Descriptors of a ``call`` message: stdin, stdout, stderr, spec, status, control, cwd."""
KEEP, SERVICE = b"keep", b"service"
"""What a call keeper does when its program exits: keep what it left, or kill it."""


_PRCTL: list[Any] = []
"""libc's ``prctl``, looked up once (a forked call keeper finds it ready)."""


def prctl(option: int, value: int | bytes) -> bool:
    """``prctl(option, value)`` on Linux; False where it is not available or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    if not _PRCTL:
        import ctypes

        try:
            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (OSError, AttributeError):
            return False
    return bool(_PRCTL[0](option, value, 0, 0, 0) == 0)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (read from ``/proc``; empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    parents = [root]
    while parents:
        below = children.get(parents.pop(), [])
        found.extend(below)
        parents.extend(below)
    return found


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


class Subtree:
    """What a keeper and a call keeper share: signals woken into a ``select``, reaping, and
    killing everything below."""

    def __init__(self, name: bytes) -> None:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        prctl(PR_SET_NAME, name)
        self.stopping = False
        self.wake, self.wake_write = os.pipe()
        os.set_blocking(self.wake, False)
        os.set_blocking(self.wake_write, False)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        for number in STOP_SIGNALS:
            signal.signal(number, self._stop)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)  # wakes the select

    def _stop(self, number: int, frame: FrameType | None) -> None:
        self.stopping = True

    def reap(self) -> bool:
        """Reap every child that exited (``exited`` hears of each); False when none is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            self.exited(pid, status)

    def exited(self, pid: int, status: int) -> None:
        """A child was reaped."""

    def drain_wake(self) -> None:
        try:
            while os.read(self.wake, 512):
                pass
        except BlockingIOError:
            pass

    def kill_all(self, group: int = 0) -> None:
        """SIGKILL the whole subtree (and the process ``group`` while it is set), round after
        round (a process may fork meanwhile, and a dying one's children come here), until no
        child is left."""
        while True:
            for pid in descendants(os.getpid()):
                _kill(pid)
            if group:  # all there is to find without /proc
                try:  # noqa: SIM105 - no contextlib: the keeper imports little
                    os.killpg(group, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                group = self.group()
            try:
                os.waitpid(-1, 0)  # one child was killed and is gone: look again
            except ChildProcessError:
                return
            if not self.reap():
                return

    def group(self) -> int:
        """The process group still to kill without ``/proc`` (0: none)."""
        return 0


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
            signal.set_wakeup_fd(-1)  # the call keeper makes its own
            for fd in (self.wake, self.wake_write, self.taken, self.alive_write):
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
                _kill(below)
            _kill(pid)

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
    """``name`` found as ``execvp`` finds it, on the program's own ``PATH``."""
    if b"/" in name:
        return name
    denied = False
    for directory in environment.get(b"PATH", os.defpath.encode()).split(b":"):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            denied = True
    number = errno.EACCES if denied else errno.ENOENT
    raise OSError(number, os.strerror(number))


def _kill(pid: int) -> None:
    try:  # noqa: SIM105
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
