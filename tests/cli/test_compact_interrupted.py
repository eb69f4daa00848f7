"""ctrl-c during ``dsh compact`` (a real process, a summary that never comes) still answers the
``command/run`` it logged, and leaves the session openable; SIGTERM and SIGHUP do the same and
exit with 128 + the signal, each saying so in the same one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_tool_turn
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer

DSH = str(Path(sys.executable).with_name("dsh"))


@pytest.mark.parametrize(
    ("signum", "sigint_ignored"),
    [
        (signal.SIGINT, False),
        (signal.SIGTERM, False),
        (signal.SIGHUP, False),
        # started with SIGINT ignored (``dsh … &`` in a script): each still stops it
        (signal.SIGTERM, True),
        (signal.SIGHUP, True),
        (signal.SIGINT, True),
    ],
)
def test_ctrl_c_during_dsh_compact_answers_its_command(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    signum: signal.Signals,
    sigint_ignored: bool,
):
    never = threading.Event()
    server.fixed["/v1/chat/completions"] = Canned(
        200, {"Content-Type": "text/event-stream"}, (b"data: [DONE]\n\n",), hold=never
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""
[provider]
name = "openai-compatible"
model = "big-model"
base_url = "{server.url}/v1"
context_window = 16000

[compaction]
backend = "basic"
summarizer = "slow-summary-model"
retain_tokens = 200
"""
    )
    store = JsonlStore(home)
    session = Session.create(store, cwd=tmp_path)
    for i in range(6):
        append_tool_turn(session, f"q{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    session_id = session.id
    session.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    child = subprocess.Popen(
        [DSH, "compact", session_id],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    try:
        log = store.log_path(session_id)
        deadline = time.monotonic() + 60
        while b'"compaction/start"' not in log.read_bytes():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "dsh compact never started its pass"
            time.sleep(0.05)
        while not [r for r in server.fixed_requests if r.method == "POST"]:
            assert time.monotonic() < deadline, "the summary was never asked for"
            time.sleep(0.05)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        never.set()
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signum, err  # 130 for Ctrl-C
    # one line, the same for every signal (SIGTERM printed nothing, Ctrl-C "dsh: interrupted")
    assert err.splitlines() == [
        f"dsh: warning: stopped by {signum.name}: compaction cancelled, nothing compacted in "
        f"session {session_id}"
    ]
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    run = next(e for e in events if e["type"] == "command/run")
    done = [e for e in events if e["type"] == "command/done"]
    assert [d["data"] for d in done] == [
        {"commandId": run["data"]["commandId"], "ok": False, "text": "Compaction cancelled."}
    ]
    end = [e for e in events if e["type"] == "compaction/end"]
    assert [e["data"]["error"] for e in end] == ["cancelled"]
    Session.open(store, session_id, writable=True).close()  # the lock was released
    if signum != signal.SIGINT:  # no one to ask again: the stop had a watchdog, not needed
        assert (home / "logs").is_dir() and not list((home / "logs").iterdir())


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
