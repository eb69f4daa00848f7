"""SIGTERM, and SIGHUP (``kill -HUP``, or the terminal ``dsh web`` runs in closing), shut a
real ``dsh web`` down gracefully, like Ctrl-C: the running turn is cancelled cleanly — the text
the model streamed so far logged as an interrupted reply, the turn ended — the writer lock is
released, and the exit status is 128 + the signal.

The turn streams from a stand-in model server on 127.0.0.1 that sends part of a reply and then
holds the rest; the test signals once the partial text reached a page's live stream."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.test_run_terminated import PARTIAL, queue_held_partial
from tests.cli.test_run_waiting import _read_rest
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer

DSH = str(Path(sys.executable).with_name("dsh"))
URL = re.compile(rb"dsh web: open (http://127\.0\.0\.1:(\d+))/\?token=([A-Za-z0-9_-]+)")
CONTROLLING_TERMINAL = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs a command as the session leader of the terminal on its stdin, as a shell's job is in
its terminal: closing the terminal sends it SIGHUP."""


def read_until(fd: int, pattern: re.Pattern[bytes], limit: float = 120.0) -> re.Match[bytes]:
    seen = b""
    give_up = time.monotonic() + limit
    while (found := pattern.search(seen)) is None:
        assert time.monotonic() < give_up, f"never saw {pattern.pattern!r} in {seen!r}"
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 4096)
            assert chunk, f"the output ended before {pattern.pattern!r}: {seen!r}"
            seen += chunk
    return found


def start_web(home: Path, workdir: Path, *, terminal: bool) -> tuple[subprocess.Popen[bytes], int]:
    """A real ``dsh web`` (on a terminal of its own, or with pipes); it and the fd its output
    is read from."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    command = [DSH, "web", "--port", "0", "--no-open"]
    if not terminal:
        child = subprocess.Popen(
            command, env=env, cwd=workdir, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert child.stdout is not None
        return child, child.stdout.fileno()
    master, slave = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", CONTROLLING_TERMINAL, *command],
        env=env, cwd=workdir, stdin=slave, stdout=slave, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    return child, master


def streamed(base: str, port: str, token: str, session_id: str) -> Any:
    """The session's live stream, as a page holds it."""
    return connect(
        f"ws://127.0.0.1:{port}/api/sessions/{session_id}/live",
        subprotocols=["dsh", f"dsh.token.{token}"],  # type: ignore[list-item]
        open_timeout=60,
    )


@pytest.mark.parametrize(
    ("signum", "how"),
    [
        (signal.SIGTERM, "kill"),
        (signal.SIGHUP, "kill"),
        (signal.SIGHUP, "terminal closed"),
    ],
)
def test_a_stop_signal_cancels_the_running_turn_and_keeps_what_was_streamed(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    signum: signal.Signals,
    how: str,
) -> None:
    never = queue_held_partial(server)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[provider]\nname = "openai-compatible"\nmodel = "q"\nbase_url = "{server.url}/v1"\n'
        "context_window = 16000\n"
    )
    terminal = how == "terminal closed"
    child, out = start_web(home, tmp_path, terminal=terminal)
    try:
        found = read_until(out, URL)
        base, port, token = (part.decode() for part in found.groups())
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=auth, timeout=60) as http:
            made = http.post("/api/sessions", json={"cwd": str(tmp_path)})
            assert made.status_code == 201, made.text
            session_id = made.json()["session"]["id"]
            with streamed(base, port, token, session_id) as live:
                started = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "go"})
                assert started.status_code == 202, started.text
                text = ""
                while PARTIAL not in text:  # the page has the partial reply
                    message = json.loads(live.recv(timeout=120))
                    if message["kind"] == "delta" and message["channel"] == "text":
                        text += message["text"]
                if terminal:
                    os.close(out)  # the terminal window closes: the kernel sends SIGHUP
                else:
                    child.send_signal(signum)
                child.wait(timeout=120)
    finally:
        never.set()
        if child.poll() is None:
            child.kill()
        if not terminal:
            _read_rest(out)
    assert child.returncode == 128 + signum
    if not terminal:
        assert child.stderr is not None
        err = child.stderr.read().decode()
        assert err.splitlines()[-1] == f"dsh web: stopped by {signum.name}", err
    store = JsonlStore(home)
    path = store.log_path(session_id)
    events = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    kept = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert len(kept) == 1 and kept[0]["interrupted"] is True
    assert kept[0]["message"]["content"][0]["text"] == PARTIAL
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted"]  # cancelled, not interrupted: the log is balanced
    assert [e["type"] for e in events][-3:] == ["assistant/message", "step/end", "turn/end"]
    Session.open(store, session_id, writable=True).close()  # the lock was released
