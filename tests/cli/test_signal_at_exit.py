"""A stop signal that arrives after the command returned, while the interpreter waits for a
thread at exit (a second SIGTERM from a supervisor, ``uv run`` passing one on), ends dsh at
once with the first stop's status and no ``KeyboardInterrupt`` traceback (an audit saw one
printed from ``threading._shutdown``). Real processes: the real ``main`` runs ``dsh run``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HELD_AT_EXIT = textwrap.dedent(
    """
    import sys, threading
    from dsh.cli.main import main

    held = threading.Event()
    threading.Thread(target=held.wait, name="held-at-exit").start()  # not a daemon
    sys.argv = ["dsh", "run", "--script", sys.argv[1], "hi"]
    try:
        main()
    finally:
        print("returned", flush=True)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_while_exiting_ends_dsh_quietly(tmp_path: Path, signum: int):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "answer"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    child = subprocess.Popen(
        [sys.executable, "-c", HELD_AT_EXIT, str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        lines = []
        while (line := child.stdout.readline()) and line != "returned\n":
            lines.append(line)
        assert line == "returned\n", lines
        child.send_signal(signum)  # main returned; the interpreter waits for the held thread
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert lines[0] == "answer\n"
    assert child.returncode == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
