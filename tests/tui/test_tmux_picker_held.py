"""``dsh --resume``'s picker in a real terminal (tmux) while a second process holds a session for
writing: the session is marked busy and refused in place, naming that process, and dsh stays in
the picker (it used to go on, and exit as the UI found the lock taken). A lock taken after the
picker's look and before the UI opens the session ends in one line and exit code 1, never a
traceback. Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, writer_in_child_process
from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

RACING = """
import subprocess, sys
import dsh.cli.tui as cli_tui
from dsh.cli.main import main

home, pid_file = sys.argv.pop(1), sys.argv.pop(1)
checked = cli_tui._cannot_open


def racing(store, session_id, *rest):
    # the picker looked (nobody held it) and the checks passed: now another process takes it
    why = checked(store, session_id, *rest)
    code = (
        "import sys, time; from pathlib import Path; from dsh.store import JsonlStore; "
        f"store = JsonlStore(Path({home!r})); sys.argv = ['dsh', 'web']; "
        f"log = store.open({session_id!r}, writable=True); print('ready', flush=True); "
        "time.sleep(120)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    with open(pid_file, "w") as out:
        out.write(str(child.pid))
    assert child.stdout.readline().strip() == "ready"
    return why


cli_tui._cannot_open = racing
sys.argv[0] = "dsh"
main()
"""
"""``dsh``, with another process taking the chosen session after the picker's checks passed: its
pid is written to the file named by the second argument (the store's home is the first)."""


def said_in_box(screen: str) -> str:
    """The picker's text with its border taken off and its wrapped lines joined by a space."""
    return " ".join(" ".join(line.strip(" █▊▎").split()) for line in screen.splitlines())


def stored(home: Path, workspace: Path) -> tuple[str, str]:
    store = JsonlStore(home)
    ids = []
    for question in ("the question the server goes on with", "a question left alone"):
        with Session.create(store, cwd=str(workspace)) as session:
            append_chat_turn(session, question, "an answer")
            ids.append(session.id)
    return ids[0], ids[1]


def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str], Terminal]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    return home, workspace, script, env, Terminal(tmp_path / "tmux.sock")


def test_a_session_another_process_holds_is_refused_in_the_picker_which_stays(tmp_path: Path):
    home, workspace, script, env, term = setup(tmp_path)
    held, _ = stored(home, workspace)
    with writer_in_child_process(home, "jsonl", held, ["dsh", "web"]) as pid:
        term.start(
            f"{DSH} --resume --script {script}; echo dsh-exited-$?; sleep 30", workspace, env
        )
        try:
            busy = "the question the server goes on with (busy)"
            term.wait_for(lambda s: busy in s and "Busy:" in s, "the picker, one session busy")
            term.tmux("send-keys", "-t", "dsh", "-l", held[-6:])
            term.tmux("send-keys", "-t", "dsh", "Enter")
            said = f"cannot be opened: it is open for writing by process {pid}"
            screen = term.wait_for(lambda s: said in said_in_box(s), "the refusal under the rows")
            assert "dsh-exited" not in screen
            assert (
                f"{said} (dsh web), which holds it until that server stops: go on in its page, "
                "or stop that `dsh web` (Ctrl-C where it runs) — choose another, or esc"
            ) in said_in_box(screen)
            term.tmux("send-keys", "-t", "dsh", "Escape")
            screen = term.wait_for(lambda s: "dsh-exited-0" in s, "dsh closing the picker")
            assert "no session chosen" in screen
        finally:
            term.tmux("kill-server")


def test_a_lock_taken_after_the_pickers_look_ends_in_one_line_not_a_traceback(tmp_path: Path):
    home, workspace, script, env, term = setup(tmp_path)
    _, chosen = stored(home, workspace)
    racing, pid_file = tmp_path / "racing.py", tmp_path / "holder.pid"
    racing.write_text(RACING)
    command = f"{sys.executable} {racing} {home} {pid_file} --resume --script {script}"
    term.start(f"{command}; echo dsh-exited-$?; sleep 30", workspace, env)
    try:
        term.wait_for(lambda s: "a question left alone" in s, "the picker")
        term.tmux("send-keys", "-t", "dsh", "-l", chosen[-6:])
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(lambda s: "dsh-exited-" in s, "dsh ending")
        screen = term.screen()
        pid = int(pid_file.read_text())
        lines = [line.strip() for line in screen.splitlines() if line.strip()]
        said = next(i for i, line in enumerate(lines) if line.startswith("dsh: error:"))
        assert lines[-1] == "dsh-exited-1"
        assert " ".join(lines[said:-1]) == (  # one line, wrapped by the terminal
            f"dsh: error: session {chosen} is already open for writing by process {pid} "
            "(dsh web), which holds it until that server stops: go on in its page, or stop "
            "that `dsh web` (Ctrl-C where it runs)"
        )
        assert "Traceback" not in screen
    finally:
        term.tmux("kill-server")
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 9)
