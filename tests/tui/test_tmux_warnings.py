"""The real ``dsh`` in a real terminal (tmux) with a real MCP server that crashes: the restart's
warning, raised on the MCP thread mid-session, shows as a toast and in ``/warnings``, and no
``dsh: warning:`` line is ever written to the terminal the UI draws on. Skipped without tmux
or the ``mcp`` extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui.test_tmux_e2e import DSH, TMUX, Terminal, answered

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

SERVER = Path(__file__).parents[1] / "mcp" / "mcp_test_server.py"
SCRIPT = [
    {"toolCalls": [{"name": "mcp__t__crash", "arguments": {}}]},
    {"text": "It crashed."},
    {"toolCalls": [{"name": "mcp__t__add", "arguments": {"a": 1, "b": 2}}]},
    {"text": "Sum done."},
]


def test_an_mcp_restart_warning_is_a_toast_and_never_a_line_over_the_ui(tmp_path: Path):
    pytest.importorskip("mcp")
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(
        '[tools]\napproval = "auto"\n\n[mcp.servers.t]\n'
        f"command = {json.dumps([sys.executable, str(SERVER)])}\nstartup_timeout_s = 300\n"
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    raw = tmp_path / "terminal.raw"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(home), TERM="xterm-256color")
    term = Terminal(tmp_path / "tmux.sock")
    command = f"{DSH} --script {script}; echo dsh-exited-$?; sleep 30"
    term.tmux(
        "new-session", "-d", "-s", "dsh", "-x", "120", "-y", "40", "-c", str(workspace),
        *[f"-e{k}={v}" for k, v in env.items() if k in ("DSH_HOME", "TERM", "PATH", "HOME")],
        command,
    )  # fmt: skip
    term.tmux("pipe-pane", "-t", "dsh", f"cat >> {raw}")  # every byte the terminal is sent
    try:
        term.wait_for(lambda s: "enter send" in s, "the composer's key hint", timeout=300)
        term.tmux("send-keys", "-t", "dsh", "-l", "crash it")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(answered("It crashed."), "the answer after the crash", timeout=120)
        term.tmux("send-keys", "-t", "dsh", "-l", "add")
        term.tmux("send-keys", "-t", "dsh", "Enter")  # the call restarts the server: a warning
        toast = "warning: MCP server t crashed"
        term.wait_for(lambda s: toast in s and "Sum done." in s, "the toast", timeout=120)

        term.tmux("send-keys", "-t", "dsh", "-l", "/warnings")
        term.tmux("send-keys", "-t", "dsh", "Enter")
        term.wait_for(
            lambda s: "Warnings and errors since the UI started:" in s, "the /warnings list"
        )
        term.tmux("send-keys", "-t", "dsh", "C-q")
        term.wait_for(lambda s: "dsh-exited-0" in s, "dsh leaving with status 0")
    finally:
        subprocess.run([*term.base, "kill-server"], capture_output=True, check=False)
    assert b"dsh: warning:" not in raw.read_bytes()
