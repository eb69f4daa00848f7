"""The real ``dsh --resume ID --cwd DIR`` in a real terminal (tmux) on a session a crashed
process left behind (a torn last line, a turn never closed): the repairs of the open that logs
the new workspace (before the UI starts) show inside the UI, a toast each and rows in
``/warnings``, and never as ``dsh: warning:`` lines under the UI. Skipped without tmux."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from dsh.store.jsonl import TORN_NAME
from dsh.surface import Session
from tests.helpers import append_chat_turn, leave_lock_of_a_killed_writer
from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal, idle

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

TORN = b'{"type":"user/mess'
CLOSED = "closed turn left open by a crashed process (2 repair events)"


def bare(text: str) -> str:
    """``text`` without white space: a row the transcript wrapped reads as one."""
    return "".join(text.split())


def test_the_repairs_of_a_resume_with_cwd_show_inside_the_ui(tmp_path: Path) -> None:
    home, old, workspace = tmp_path / "home", tmp_path / "old", tmp_path / "ws"
    old.mkdir()
    workspace.mkdir()
    store = JsonlStore(home)
    with Session.create(store, cwd=str(old)) as session:
        append_chat_turn(session, "first question", "first answer")
        append_chat_turn(session, "second question", "second answer")
    path = store.log_path(session.id)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1] + TORN)  # turn/end lost, torn
    leave_lock_of_a_killed_writer(store, session.id)  # by a killed writer
    torn = f"{path}: dropped a torn last line ({len(TORN)} bytes) left by an interrupted write"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "unused"}]))
    raw = tmp_path / "terminal.raw"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    command = (
        f"{DSH} --resume {session.id} --cwd {workspace} --script {script};"
        " echo dsh-exited-$?; sleep 30"
    )
    term.start(command, workspace, env)
    term.tmux("pipe-pane", "-t", "dsh", f"cat >> {raw}")  # every byte the terminal is sent
    try:
        term.wait_for(lambda s: "second answer" in s and idle(s), "the resumed session")
        term.wait_for(lambda s: "warning: closed turn left open" in s, "the repair's toast")
        term.tmux("send-keys", "-t", "dsh", "-l", "/warnings")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        listed = [bare(f"warning: {text}") for text in (torn, CLOSED)]
        term.wait_for(
            lambda s: (
                "Warnings and errors since the UI started:" in s
                and all(text in bare(s) for text in listed)
            ),
            "the /warnings list",
        )
        term.tmux("send-keys", "-t", "dsh", "C-q")
        term.wait_for(lambda s: "dsh-exited-0" in s, "dsh leaving with status 0")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    printed = raw.read_bytes()
    assert f"dsh: warning: {torn}".encode() not in printed
    assert f"dsh: warning: {CLOSED}".encode() not in printed
    assert (path.parent / TORN_NAME).read_bytes().startswith(TORN)  # moved aside: the log whole
