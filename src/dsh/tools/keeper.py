"""The keeper of one shell command's processes, and the Linux process calls dsh shares with it.

dsh runs this file as a program (``python -I -S keeper.py LIFELINE STATUS``, standard library
only) for every ``bash`` call (:mod:`dsh.tools.kept_shell`). The keeper reads its command and
the command's environment from stdin (``<length>\\n`` then the command and ``NAME=value``
entries, NUL-separated: nothing of it shows in ``ps`` beyond the command, and the keeper's own
environment stays empty), starts ``bash -c COMMAND`` in a new session with that environment,
writes ``started PID`` and, once the shell has exited, ``exited CODE`` (``failed ERRNO`` when
bash could not be run) on the STATUS descriptor.

On Linux it is a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the command
starts, a ``setsid`` or double-forked daemon included, stays in its subtree instead of moving
to init, and it reaps each one that exits. It lives as long as any of them does, then exits.
On SIGTERM, SIGHUP or SIGINT, or when LIFELINE reaches end of file (dsh holds the only write
end, so that is dsh exiting, however it exits, ``kill -9`` included), it kills its whole
subtree with SIGKILL (found under ``/proc``), reaps it and exits. Elsewhere it can only kill
the shell's process group, and only while the shell runs.
"""

from __future__ import annotations

import os
import select
import sys

# Every command waits for the keeper to start, so it imports little: not typing, and not the
# signal module's enums (about half its start) but the C module under them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from types import FrameType
    from typing import NoReturn
else:
    import _signal as signal

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RESET_SIGNALS = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
"""Restored to their defaults in the shell (Python ignores SIGPIPE and SIGXFSZ)."""


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` on Linux; False where it is not available or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


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


def encode_spec(command: str, environment: dict[str, str]) -> bytes:
    """What dsh writes to a keeper's stdin: the length, then command and variables."""
    parts = [command.encode("utf-8", "surrogateescape")]
    for name, value in environment.items():
        parts.append(f"{name}={value}".encode("utf-8", "surrogateescape"))
    payload = b"\0".join(parts)
    return b"%d\n" % len(payload) + payload


def decode_spec(data: bytes) -> tuple[bytes, dict[bytes, bytes]] | None:
    """The command and environment of ``data``; None when it is cut short (dsh was stopped
    while writing it: the command must not run in part)."""
    length, newline, payload = data.partition(b"\n")
    if not newline or not length.isdigit() or int(length) != len(payload):
        return None
    command, *variables = payload.split(b"\0")
    environment = dict(v.split(b"=", 1) for v in variables if b"=" in v)
    return command, environment


class Keeper:
    """Starts the shell, reports on it, reaps and finally kills what it started."""

    def __init__(self, lifeline: int, status: int) -> None:
        self.lifeline = lifeline
        self.status = status
        self.stopping = False
        self.shell = 0
        self.shell_done = False

    def run(self, command: bytes, environment: dict[bytes, bytes]) -> int:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        for number in STOP_SIGNALS:
            signal.signal(number, self._stop)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)  # wakes the select below
        self.shell = os.fork()
        if self.shell == 0:
            self._exec_shell(command, environment)
        self._report(b"started %d" % self.shell)
        _reopen_null(1, os.O_WRONLY)  # only the command's processes hold its output open
        _reopen_null(2, os.O_WRONLY)
        while self._reap() and not self.stopping:
            ready, _, _ = select.select([self.lifeline, wake_read], [], [])
            if self.lifeline in ready and not os.read(self.lifeline, 1):
                self.stopping = True  # dsh has exited
            if wake_read in ready:
                _drain(wake_read)
        if self.stopping:
            self._kill_all()
        return 0

    def _exec_shell(self, command: bytes, environment: dict[bytes, bytes]) -> NoReturn:
        """In the forked child: become the shell, in a session of its own."""
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for number in RESET_SIGNALS:
                signal.signal(number, signal.SIG_DFL)
            os.execvpe(b"bash", [b"bash", b"-c", command], environment)
        except OSError as exc:
            try:  # noqa: SIM105 - no contextlib: the keeper starts per command, imports little
                os.write(self.status, b"failed %d\n" % (exc.errno or 0))
            except OSError:
                pass
        finally:
            os._exit(127)

    def _stop(self, number: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _report(self, line: bytes) -> None:
        try:
            os.write(self.status, line + b"\n")
        except OSError:  # dsh is gone
            self.stopping = True

    def _reap(self) -> bool:
        """Reap every child that exited (reporting the shell's exit); False when none is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.shell:
                self.shell_done = True
                self._report(b"exited %d" % os.waitstatus_to_exitcode(status))

    def _kill_all(self) -> None:
        """SIGKILL the whole subtree, round after round (a process may fork meanwhile, and a
        dying one's children come to the keeper), until no child is left."""
        while True:
            for pid in descendants(os.getpid()):
                try:  # noqa: SIM105
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not self.shell_done:  # all there is to find without /proc (once the shell is
                # gone, its group's number may come back as someone else's)
                try:  # noqa: SIM105
                    os.killpg(self.shell, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                os.waitpid(-1, 0)  # one child was killed and is gone: look again
            except ChildProcessError:
                return
            if not self._reap():
                return


def _reopen_null(fd: int, flags: int) -> None:
    null = os.open(os.devnull, flags)
    os.dup2(null, fd)
    os.close(null)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    lifeline, status = int(argv[1]), int(argv[2])
    os.set_inheritable(lifeline, False)  # the shell gets neither
    os.set_inheritable(status, False)
    spec = decode_spec(_read_all(0))
    if spec is None:
        return 1
    _reopen_null(0, os.O_RDONLY)
    return Keeper(lifeline, status).run(*spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
