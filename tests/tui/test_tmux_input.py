"""The real ``dsh`` in a real terminal (tmux) reading what it is sent: a paste holding colour
codes arrives whole and is sent as typed (each ESC as ``\\x1b``), 185 KB of it too, and one
that is not UTF-8 shows its bytes as escapes; keys typed before the UI has drawn reach the
composer, spaces and enter included; a flood of keystrokes does not keep SIGTERM from ending
dsh. Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dsh.events import UserMessageEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.tui.test_terminal_gone import _alive
from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal, answered, idle

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

COLOURED = "line 0: h\u00e9llo \t tab \x1b[31m red\nline 1: x \x1b[31m red\nline 2: y\n"
MANY = "".join(f"line {n}: h\u00e9llo \t tab \x1b[31m red, and some more\n" for n in range(3800))
"""About 185 KB: as sent, just under the 200,000 characters a prompt may hold (room.py)."""


def as_sent(pasted: str) -> str:
    """What the composer sends for ``pasted``: each ESC as its escape, the last break dropped."""
    return pasted.replace("\x1b", "\\x1b").rstrip("\n")


def start(tmp_path: Path, script: list[dict[str, str]]) -> Terminal:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "script.json").write_text(json.dumps(script))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    status = tmp_path / "exit-status"  # a file: keys left in the pane may scroll the echo away
    command = (
        f"{DSH} --script {tmp_path / 'script.json'}; s=$?; echo $s > {status}; "
        "echo dsh-exited-$s; sleep 30"
    )
    term.start(command, workspace, env)
    return term


def prompts_sent(tmp_path: Path) -> list[str]:
    store = JsonlStore(tmp_path / "home")
    (header,) = store.list()
    with Session.open(store, header.id) as session:
        return [e.data.text() for e in session.events if isinstance(e, UserMessageEvent)]


def paste(term: Terminal, tmp_path: Path, text: str) -> None:
    """Paste ``text`` as a terminal does (bracketed: tmux's ``paste-buffer -p``)."""
    source = tmp_path / "paste.txt"
    source.write_text(text)
    term.tmux("load-buffer", "-b", "p", str(source))
    term.tmux("paste-buffer", "-p", "-b", "p", "-t", "dsh")


def test_a_paste_with_colour_codes_arrives_whole_and_is_sent_as_pasted(tmp_path: Path):
    term = start(tmp_path, [{"text": "Got three lines."}, {"text": "Got five thousand."}])
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        paste(term, tmp_path, COLOURED)
        term.wait_for(
            lambda s: "tab \\x1b[31m red" in s and "line 2: y" in s, "the whole paste, shown"
        )
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("Got three lines."), "the answer, its turn over")

        paste(term, tmp_path, MANY)  # 185 KB: Textual's parser took about an hour over 244 KB
        # tmux sends its line breaks as CR: folded all the same (it used to fill the composer)
        term.wait_for(lambda s: "[pasted 3800 lines]" in s, "the long paste, folded")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("Got five thousand."), "the second answer, its turn over")

        (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 au lait")  # not UTF-8
        term.tmux("load-buffer", "-b", "l", str(tmp_path / "latin1.txt"))
        term.tmux("paste-buffer", "-p", "-b", "l", "-t", "dsh")  # it used to end dsh
        term.wait_for(lambda s: "caf\\xe9 au lait" in s, "the byte shown as its escape")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    assert prompts_sent(tmp_path) == [as_sent(COLOURED), as_sent(MANY)]


def test_keys_typed_before_the_first_draw_reach_the_composer_and_enter_sends(
    tmp_path: Path,
):
    term = start(tmp_path, [{"text": "Reading everything."}])
    try:
        term.tmux("send-keys", "-t", "dsh", "-l", "a b c read everything please")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        assert "enter send" not in term.screen()  # typed ahead: the UI was not up yet
        term.wait_for(answered("Reading everything."), "the answer, its turn over")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    assert prompts_sent(tmp_path) == ["a b c read everything please"]


def test_sigterm_ends_dsh_during_a_flood_of_keystrokes(tmp_path: Path):
    term = start(tmp_path, [{"text": "First."}])
    dsh_pid = None
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        source = tmp_path / "flood.txt"
        source.write_text(" ".join(f"word{n}" for n in range(20_000)))  # 128 KB, one line
        term.tmux("load-buffer", "-b", "f", str(source))
        term.tmux("paste-buffer", "-b", "f", "-t", "dsh")  # no -p: a keystroke each
        term.wait_for(lambda s: "word0 word1 word2" in s, "the flood being read")
        pane = term.tmux("display-message", "-p", "-t", "dsh", "#{pane_pid}").strip()
        children = subprocess.run(["pgrep", "-P", pane], capture_output=True, text=True)
        dsh_pid = int(children.stdout.split()[0])
        os.kill(dsh_pid, signal.SIGTERM)
        # it used to take every key first, ever slower as the draft grew: many minutes. The
        # status is read from a file: the flood's keys left in the pane go on to the shell
        # once dsh has left, and their echo can scroll "dsh-exited-143" off the screen
        status = tmp_path / "exit-status"
        deadline = time.monotonic() + 60
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status.read_text().strip() == "143"
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
        if dsh_pid is not None and _alive(dsh_pid):  # it ignored SIGTERM and SIGHUP
            os.kill(dsh_pid, signal.SIGKILL)
