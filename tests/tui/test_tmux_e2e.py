"""The real ``dsh`` entry point in a real terminal (tmux), answered by a scripted model: type
a prompt, paste three lines (bracketed paste), see both sent whole, review a diff approval,
quit, see how to resume. Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh.events import UserMessageEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui.approval import KEYS_READY

TMUX = shutil.which("tmux")
DSH = str(Path(sys.executable).with_name("dsh"))
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

SCRIPT = [
    {"text": "First answer."},
    {"text": "Got the three lines."},
    {
        "toolCalls": [
            {
                "name": "edit_file",
                "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"},
            }
        ]
    },
    {"text": "Edited calc.py."},
]


STATUS = re.compile(
    r"· context [^·]*(?:· \$[\d.]+\+? )?(?:· [\d.]+[kM]? tok ?)?(?:· cache hits (?:\d+%|n/a))?"
    r"(?P<rest>.*)$",
    re.MULTILINE,
)
"""The status bar's line; after the context use, the spend (``$0.0005 · 3.3k tok``) and the
cache-hit ratio (the spend and the ratio left out on a narrow line) it names what runs
(``working…``, the waiting notice, ``compacting``…), if anything."""


def idle(screen: str) -> bool:
    """The status bar says nothing runs: the last turn is over, so the app takes a prompt.
    (It clears ``working…`` in the step that ends the turn's worker.)"""
    found = STATUS.search(screen)
    return found is not None and not found["rest"].strip()


def answered(text: str) -> Callable[[str], bool]:
    """``text`` is on screen and the turn that wrote it is over (a prompt sent while it still
    ran would be refused, and a capture may catch the screen before the status bar changes)."""
    return lambda screen: text in screen and idle(screen)


class Terminal:
    def __init__(self, socket: Path) -> None:
        self.base = [str(TMUX), "-S", str(socket)]

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, check=True, timeout=30
        )
        return done.stdout

    def start(self, command: str, workspace: Path, env: dict[str, str]) -> None:
        """Run ``command`` in a detached 110×40 session named ``dsh`` in ``workspace``."""
        self.tmux(
            "new-session", "-d", "-s", "dsh", "-x", "110", "-y", "40", "-c", str(workspace),
            *[f"-e{k}={v}" for k, v in env.items() if k in ("DSH_HOME", "TERM", "PATH", "HOME")],
            command,
        )  # fmt: skip

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "dsh")

    def wait_for(self, condition: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        """Poll the screen until ``condition`` holds (a deadline, not a timing assertion)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {what}; the screen was:\n{screen}")
            time.sleep(0.1)


def test_type_paste_review_a_diff_and_quit_in_a_real_terminal(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    command = f"{DSH} --script {script}; echo dsh-exited-$?; sleep 30"
    term.start(command, workspace, env)
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        term.tmux("send-keys", "-t", "dsh", "-l", "hello there")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("First answer."), "the first answer, its turn over")

        term.tmux("set-buffer", "-b", "p", "line one\nline two\nline three")
        term.tmux("paste-buffer", "-p", "-b", "p", "-t", "dsh")  # -p: bracketed paste
        term.wait_for(lambda s: "line three" in s, "the whole paste in the composer")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("Got the three lines."), "the second answer, its turn over")

        term.tmux("send-keys", "-t", "dsh", "-l", "fix add")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        # the whole modal, not the first rows of a frame the terminal is still drawing, and
        # taking keys (its wait for the typing to stop is over)
        diff = ("Allow edit_file", "-    return a - b", "+    return a + b", KEYS_READY)
        term.wait_for(lambda s: all(part in s for part in diff), "the edit approval's diff")
        term.tmux("send-keys", "-t", "dsh", "o")
        term.wait_for(answered("Edited calc.py."), "the answer after the edit, its turn over")
        assert "return a + b" in (workspace / "calc.py").read_text()

        term.tmux("send-keys", "-t", "dsh", "C-q")
        screen = term.wait_for(lambda s: "dsh-exited-0" in s, "dsh leaving with status 0")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)

    store = JsonlStore(home)
    (header,) = store.list()
    with Session.open(store, header.id) as session:
        sent = [e.data.text() for e in session.events if isinstance(e, UserMessageEvent)]
    assert sent == ["hello there", "line one\nline two\nline three", "fix add"]
    assert f"resume with: dsh --resume {header.id}" in screen
