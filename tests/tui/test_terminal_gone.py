"""When its terminal goes away (a closed window, ``tmux kill-session``, a dropped ssh) the UI
quits and the process ends, instead of hanging forever on writes to a terminal that is gone."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import pty
import shlex
import signal
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

import pytest
from textual.app import App
from textual.drivers._writer_thread import WriterThread
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver

from dsh.store import JsonlStore
from dsh.tui.terminal_driver import HangupSafeDriver, TerminalStream, hangup_safe, read_terminal
from tests.tui.conftest import Rig
from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal, answered, idle


class GoneTerminal:
    """A terminal whose other end has closed: every write and flush fails with EIO."""

    def __init__(self) -> None:
        self.attempts = 0

    def write(self, text: str) -> int:
        self.attempts += 1
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        self.attempts += 1
        raise OSError(errno.EIO, "Input/output error")

    def fileno(self) -> int:
        return 2

    def isatty(self) -> bool:
        return True


def test_textuals_writer_keeps_taking_writes_after_the_terminal_is_gone():
    # Textual's writer thread queues at most 30 writes; the first failed write used to end the
    # thread, and the 31st write then waited forever on the full queue
    gone = GoneTerminal()
    writer = WriterThread(TerminalStream(gone))  # type: ignore[arg-type]
    writer.start()
    finished = threading.Event()

    def shut_down() -> None:
        for n in range(200):
            writer.write(f"frame {n}")
        writer.stop()
        finished.set()

    threading.Thread(target=shut_down, daemon=True).start()
    assert finished.wait(timeout=60), "the writes blocked on a dead writer thread"
    assert gone.attempts == 1  # nothing more is tried once the terminal is known gone


def test_a_terminal_stream_passes_writes_through_while_the_terminal_is_there(tmp_path: Path):
    with (tmp_path / "out").open("w") as file:
        stream = TerminalStream(file)
        assert stream.write("hello") == 5
        stream.flush()
        assert not stream.gone
        assert stream.fileno() == file.fileno()
    assert (tmp_path / "out").read_text() == "hello"


def test_the_ui_runs_on_the_hangup_safe_driver(rig: Rig):
    assert hangup_safe(LinuxDriver) is HangupSafeDriver
    assert hangup_safe(HeadlessDriver) is HeadlessDriver  # tests, TEXTUAL_DRIVER: untouched
    assert rig.app([]).driver_class is HangupSafeDriver


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_closing_the_terminal_ends_dsh_and_frees_its_session(tmp_path: Path):
    _close_the_terminal_of(DSH, tmp_path)


BLOCKING_SIGHUP = (
    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP}); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_a_closed_terminal_ends_dsh_even_when_no_hangup_signal_reaches_it(tmp_path: Path):
    # dsh starts with SIGHUP blocked, so only its read of the terminal can tell that it is gone
    # (it waited forever on its event loop before, with no terminal, holding its session)
    wrapper = f"{sys.executable} -c {shlex.quote(BLOCKING_SIGHUP)} {DSH}"
    _close_the_terminal_of(wrapper, tmp_path)


def test_a_read_of_a_closed_terminal_says_it_is_gone():
    leader, follower = pty.openpty()
    tty.setraw(follower)  # as the UI reads it: bytes as they come, not lines
    os.write(leader, b"typed")
    assert read_terminal(follower) == b"typed"
    os.close(leader)
    assert read_terminal(follower) == b""  # EIO, where a pipe would say end-of-file
    os.close(follower)


def _close_the_terminal_of(command: str, tmp_path: Path) -> None:
    """Run ``command --script …`` in tmux, send a prompt, kill the terminal; the process ends
    and leaves its session free, its turn closed."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "First answer."}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    term.start(f"{command} --script {script}", workspace, env)
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        term.tmux("send-keys", "-t", "dsh", "-l", "hello there")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("First answer."), "the answer, its turn over")
        pane = int(term.tmux("display-message", "-p", "-t", "dsh", "#{pane_pid}").strip())
        dsh_pid = _the_dsh_process(pane)
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    deadline = time.monotonic() + 60  # a deadline for a hang, not a timing assertion
    try:
        while _alive(dsh_pid):
            assert time.monotonic() < deadline, f"dsh (pid {dsh_pid}) outlived its terminal"
            time.sleep(0.1)
    finally:
        if _alive(dsh_pid):  # no orphan left behind for the rest of the run
            os.kill(dsh_pid, signal.SIGKILL)
    (header,) = JsonlStore(home).list()
    # the session is not held by a leftover process: another writer can take it
    with JsonlStore(home).open(header.id, writable=True) as log:
        assert not log.warnings  # and it closed its turn itself: nothing to repair
    # its stop had a watchdog (armed: the directory is there) that had nothing to do
    assert (home / "logs").is_dir() and not list((home / "logs").iterdir())


def _the_dsh_process(pane: int) -> int:
    """The pane's own process when it is dsh (tmux's shell ran it in its place), else the
    pane's child that is (a shell that did not replace itself)."""
    if "dsh" in Path(f"/proc/{pane}/cmdline").read_bytes().decode(errors="replace"):
        return pane
    children = subprocess.run(["pgrep", "-P", str(pane)], capture_output=True, text=True).stdout
    return int(children.split()[0])


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie the test's own tmux left unreaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_sigcont_without_a_suspend_does_not_restart_the_ui(monkeypatch: pytest.MonkeyPatch):
    # a closed terminal sends SIGCONT with its SIGHUP: Textual restarted the application mode
    # on it, a second input thread the shutdown never joined, which held dsh at exit
    previous = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    restarts: list[str] = []

    async def signalled() -> None:  # a driver is made on the app's running loop
        driver = HangupSafeDriver(App())
        monkeypatch.setattr(driver, "start_application_mode", lambda: restarts.append("start"))
        driver._sigcont_application(signal.SIGCONT, None)
        assert restarts == []
        driver._must_signal_resume = True  # ctrl+z suspended it: fg resumes it
        driver._sigcont_application(signal.SIGCONT, None)
        assert restarts == ["start"]

    try:
        asyncio.run(signalled())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
