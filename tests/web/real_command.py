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
from dataclasses import dataclass, field
from pathlib import Path

DSH = str(Path(sys.executable).with_name("dsh"))
"""The ``dsh`` console script: its warnings print as ``dsh: warning: …`` lines on stderr."""
URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+))/\?token=(\S+)")


@dataclass(frozen=True)
class DshWeb:
    base: str
    """``http://127.0.0.1:PORT``."""
    port: int
    token: str
    stderr: list[str] = field(default_factory=list)
    """What the process wrote on stderr, one item, once the block ended and it exited."""


@contextlib.contextmanager
def dsh_web_process(
    tmp_path: Path, flags: tuple[str, ...] = ("--provider", "scripted")
) -> Iterator[DshWeb]:
    """The ``dsh`` console script's ``dsh web --port 0 --no-open FLAGS`` in ``tmp_path``, with
    its own home and no API key in its environment; stopped with Ctrl-C when the block ends,
    which must exit 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    env["DSH_HOME"] = str(tmp_path / "home")
    process = subprocess.Popen(
        [DSH, "web", "--port", "0", "--no-open", *flags],
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
        web = DshWeb(base, int(port), token)
        yield web
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    web.stderr.append(stderr)
    assert process.returncode == 0, stderr
