"""Ctrl-C (SIGINT) exits 130 (128 + SIGINT), as SIGTERM exits 143, so a script can tell a
run the person stopped from one that failed: ``dsh run`` after it cancelled the turn cleanly
(the log balanced, the session kept), any other command after its own way of stopping. The real
console script, as a subprocess with SIGINT's default action (as in a terminal)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.conftest import DSH
from tests.helpers import run_session_id


def with_default_sigint() -> None:
    """In the child: SIGINT as a terminal leaves it (the test runner's may be ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(path: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def signalled(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    ready: Callable[[subprocess.Popen[str]], None],
    signum: int = signal.SIGINT,
) -> tuple[int, str, str]:
    """The real ``dsh ARGS`` (SIGINT at its default action), sent ``signum`` once
    ``ready(child)`` returns: (exit status, stdout, stderr)."""
    child = subprocess.Popen(
        [DSH, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=with_default_sigint,
    )
    try:
        ready(child)
        child.send_signal(signum)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    return child.returncode, out, err


def test_ctrl_c_during_run_cancels_the_turn_and_exits_130(tmp_path, env):
    started = tmp_path / "started"
    script = tmp_path / "s.json"
    command = f"touch {started}; sleep 60"
    script.write_text(
        json.dumps([{"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}])
    )
    status, _, err = signalled(
        ["run", "--yes", "--script", str(script), "wait for it"],
        env=env,
        cwd=tmp_path,
        ready=lambda child: wait_for(started, child),
    )

    session_id = run_session_id(err)
    assert status == 130, err
    assert f"stopped by SIGINT; continue with --session {session_id}" in err
    assert "Traceback" not in err
    events = Session.open(JsonlStore(Path(env["DSH_HOME"])), session_id).events
    ends = [e.data.reason.kind for e in events if type(e).__name__ == "TurnEndEvent"]
    assert ends == ["aborted"]  # cancelled and closed by the run itself, not left open


def test_ctrl_c_during_a_command_without_a_turn_says_interrupted_and_exits_130(tmp_path, env):
    """``dsh mcp list`` waiting for a server that never answers its handshake."""
    started = tmp_path / "started"
    home = Path(env["DSH_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(
        f'[mcp.servers.silent]\ncommand = ["sh", "-c", "touch {started}; sleep 60"]\n'
        "startup_timeout_s = 100\n"
    )
    status, _, err = signalled(
        ["mcp", "list"], env=env, cwd=tmp_path, ready=lambda child: wait_for(started, child)
    )

    assert status == 130, err
    assert err.strip() == "dsh: interrupted"
