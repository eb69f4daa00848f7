"""A closed terminal (SIGHUP) or a ``kill`` (SIGTERM) quits the real TUI like ctrl+q: the running
turn is cancelled, the text streamed so far is logged, the terminal is given back, and dsh exits
with 128 + the signal after saying how to resume. A stand-in server on 127.0.0.1 streams part of
a reply and holds the rest. Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from tests.cli.test_run_terminated import PARTIAL, queue_held_partial
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer
from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal, idle

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_quits_the_tui_keeping_what_was_streamed(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    signum: signal.Signals,
):
    never = queue_held_partial(server)
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    route = f"--provider openai-compatible --base-url {server.url}/v1 --model q"
    command = f"{DSH} {route}; echo dsh-exited-$?; sleep 30"
    term.start(command, workspace, env)
    try:
        term.wait_for(lambda s: "enter send" in s and idle(s), "the composer's key hint")
        term.tmux("send-keys", "-t", "dsh", "-l", "read the notes")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(lambda s: PARTIAL in s, "the streamed text")
        shell = term.tmux("display-message", "-p", "-t", "dsh", "#{pane_pid}").strip()
        children = subprocess.run(
            ["pgrep", "-P", shell], capture_output=True, text=True, check=True
        ).stdout.split()
        (dsh_pid,) = children
        os.kill(int(dsh_pid), signum)
        screen = term.wait_for(
            lambda s: f"dsh-exited-{128 + signum}" in s, f"dsh leaving with {128 + signum}"
        )
    finally:
        never.set()
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    store = JsonlStore(home)
    (header,) = store.list()
    assert f"resume with: dsh --resume {header.id}" in screen
    events = [json.loads(line) for line in store.log_path(header.id).read_text().splitlines()[1:]]
    kept = [e for e in events if e["type"] == "assistant/message"]
    assert len(kept) == 1 and kept[0]["data"]["interrupted"] is True
    assert kept[0]["data"]["message"]["content"][0]["text"] == PARTIAL
    (end,) = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert end["kind"] == "aborted"
    assert end["error"].startswith(f"cancelled by {signum.name} (")  # not "by the user"
