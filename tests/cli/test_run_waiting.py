"""``dsh run`` on a terminal says "waiting for the model (N s)" while a local server is still
in prefill (a stand-in server on 127.0.0.1 whose first chunk is held back), then erases it.

The server releases the first chunk only after the notice was read from the terminal, so the
test waits on the behaviour itself, not on a clock."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, openai_text

NOTICE = b"waiting for the model ("


def _read_until(fd: int, wanted: bytes, *, limit: float = 60.0) -> bytes:
    seen = b""
    give_up = time.monotonic() + limit
    while wanted not in seen:
        assert time.monotonic() < give_up, f"never saw {wanted!r} in {seen!r}"
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed its end
                break
    return seen


def _read_rest(fd: int) -> bytes:
    """Everything left on the terminal once the child has exited."""
    seen = b""
    while select.select([fd], [], [], 0.5)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child's end is closed: nothing more
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_a_slow_first_chunk_shows_the_waiting_notice_on_a_terminal(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
):
    release = threading.Event()
    reply = openai_text("prefill done")
    server.queue(Canned(reply.status, reply.headers, reply.parts, hold=release))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    master, slave = pty.openpty()
    dsh = str(Path(sys.executable).with_name("dsh"))
    route = ["--provider", "openai-compatible", "--base-url", server.url + "/v1", "--model", "q"]
    child = subprocess.Popen(
        [dsh, "run", *route, "a long prompt"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    try:
        before = _read_until(master, NOTICE + b"1 s)")
        release.set()
        out, _ = child.communicate(timeout=60)
        after = _read_rest(master)
    finally:
        release.set()
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert child.returncode == 0
    assert out.decode().splitlines()[0] == "prefill done"  # stdout stays clean
    assert NOTICE not in out
    assert server.bodies[0]["max_tokens"] == 4096  # and the local route's output is bounded
    terminal = before + after
    assert terminal.rfind(b"\r\x1b[K") > terminal.rfind(NOTICE)  # erased once the reply came
