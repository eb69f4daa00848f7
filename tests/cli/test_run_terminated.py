"""SIGTERM and SIGHUP stop ``dsh run`` the way Ctrl-C does: the turn is cancelled cleanly, the
text streamed so far is logged, the session is closed, and the exit status is 128 + the signal.

A real ``dsh run`` process streams from a stand-in server on 127.0.0.1 that sends part of a
reply and then holds the rest; the test signals once the partial text reached the terminal."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.cli.test_run_waiting import _read_rest, _read_until
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream

PARTIAL = "Reading the notes first"


def queue_held_partial(server: FakeServer) -> threading.Event:  # noqa: F811
    """Queue a reply that streams ``PARTIAL`` and holds the rest until the event is set."""
    never = threading.Event()
    reply = openai_stream(oa_chunk(content=PARTIAL), oa_chunk(content=" and then"))
    server.queue(Canned(reply.status, reply.headers, reply.parts, hold=never, hold_before=1))
    return never


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_cancels_the_turn_and_keeps_what_was_streamed(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    signum: signal.Signals,
):
    never = queue_held_partial(server)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    master, slave = pty.openpty()
    dsh = str(Path(sys.executable).with_name("dsh"))
    route = ["--provider", "openai-compatible", "--base-url", server.url + "/v1", "--model", "q"]
    child = subprocess.Popen(
        [dsh, "run", *route, "first prompt", "second prompt"],
        env=env,
        cwd=tmp_path,
        stdout=slave,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    try:
        shown = _read_until(master, PARTIAL.encode())
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
        shown += _read_rest(master)
    finally:
        never.set()
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert child.returncode == 128 + signum, err
    assert f"{signum.name}: cancelling the turn" in err.decode()
    assert shown.endswith(PARTIAL.encode() + b"\r\n")  # the streamed line is ended
    store = JsonlStore(home)
    (session_id,) = [header.id for header in store.list()]
    assert f"continue with --session {session_id}" in err.decode()
    events = [json.loads(line) for line in store.log_path(session_id).read_text().splitlines()[1:]]
    kept = [e for e in events if e["type"] == "assistant/message"]
    assert len(kept) == 1 and kept[0]["data"]["interrupted"] is True
    assert kept[0]["data"]["message"]["content"][0]["text"] == PARTIAL
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted"]  # a cancelled turn; the second prompt never ran
    prompts = [e for e in events if e["type"] == "user/message"]
    assert len(prompts) == 1
    Session.open(store, session_id, writable=True).close()  # the lock was released
