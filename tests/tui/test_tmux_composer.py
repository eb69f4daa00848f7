"""The composer's ctrl+r and ctrl+g in a real terminal (tmux): an earlier run's prompt found by
searching, then edited in an "editor" that takes the terminal (the UI suspended) and reads a
line typed there; the UI comes back and sends the result. Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from dsh.config.prompt_history import PromptHistory
from dsh.events import UserMessageEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.tui.test_tmux_e2e import DSH, Terminal, answered, idle, pytestmark  # noqa: F401

EDITOR = """#!/bin/sh
for f; do :; done
echo EDITOR-READY
read answer
printf '\\n%s\\n' "$answer" >> "$f"
"""


def test_search_then_edit_in_an_editor_in_a_real_terminal(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    PromptHistory(home).append("an earlier run's prompt")
    PromptHistory(home).append("something else")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "First answer."}]))
    editor = tmp_path / "editor"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    command = f"EDITOR={editor} {DSH} --script {script}; echo dsh-exited-$?; sleep 30"
    term.start(command, workspace, env)
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        term.tmux("send-keys", "-t", "dsh", "C-r")
        term.tmux("send-keys", "-t", "dsh", "-l", "earlier")
        term.wait_for(lambda s: "history search: earlier" in s, "the search's border")
        term.tmux("send-keys", "-t", "dsh", "Enter")  # taken, not sent
        term.wait_for(
            lambda s: "an earlier run's prompt" in s and "history search" not in s,
            "the match in the composer",
        )
        term.tmux("send-keys", "-t", "dsh", "C-g")
        term.wait_for(lambda s: "EDITOR-READY" in s, "the editor holding the terminal")
        term.tmux("send-keys", "-t", "dsh", "-l", "typed in the editor")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(
            lambda s: "typed in the editor" in s and "enter send" in s, "the UI back, edited"
        )
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("First answer."), "the answer, its turn over")
        term.tmux("send-keys", "-t", "dsh", "C-q")
        term.wait_for(lambda s: "dsh-exited-0" in s, "dsh leaving with status 0")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)

    store = JsonlStore(home)
    (header,) = store.list()
    with Session.open(store, header.id) as session:
        sent = [e.data.text() for e in session.events if isinstance(e, UserMessageEvent)]
    assert sent == ["an earlier run's prompt\ntyped in the editor"]
    assert PromptHistory(home).load()[-1] == sent[0]
