"""The real ``dsh web`` command in a process of its own, for the tests that need the CLI's own
wiring (its URL line, its Host check, its Ctrl-C)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+))/\?token=(\S+)")


@dataclass(frozen=True)
class DshWeb:
    base: str
    """``http://127.0.0.1:PORT``."""
    port: int
    token: str


@contextlib.contextmanager
def dsh_web_process(tmp_path: Path) -> Iterator[DshWeb]:
    """``dsh web --port 0 --no-open --provider scripted`` in ``tmp_path`` with its own home;
    stopped with Ctrl-C when the block ends, which must exit 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    code = "from dsh.cli.web import web; web()"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--no-open", "--provider", "scripted"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = URL_LINE.search(line)
        assert match, line
        base, port, token = match.groups()
        yield DshWeb(base, int(port), token)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
