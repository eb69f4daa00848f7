"""``dsh run`` prints a failed turn's error as every face shows it (``dsh.errors.error_line``):
one line, a terminal escape in a server's message as its escape (never sent to the terminal),
at most ``ERROR_LINE_CHARS`` characters; the session's log keeps the whole message.

A real ``dsh run`` process against a stand-in model server on 127.0.0.1 that refuses the call
with a long message holding terminal escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.errors import ERROR_LINE_CHARS, error_line
from dsh.store import JsonlStore
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_error

MESSAGE = "\x1b]0;owned\x07\x1b[2J the model\nrefused " + "and on " * 300


def test_a_failed_turns_error_is_one_escaped_bounded_line_and_logged_whole(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    server.queue(json_error(400, {"error": {"message": MESSAGE, "type": "invalid_request"}}))
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    dsh = str(Path(sys.executable).with_name("dsh"))
    route = ["--provider", "openai-compatible", "--base-url", server.url + "/v1", "--model", "q"]
    done = subprocess.run(
        [dsh, "run", *route, "hi"],
        env=env, cwd=tmp_path, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    err = done.stderr.decode()
    assert b"\x1b" not in done.stderr
    (failed,) = [line for line in err.splitlines() if "turn 1 failed" in line]
    store = JsonlStore(home)
    (session_id,) = [header.id for header in store.list()]
    lines = store.log_path(session_id).read_text().splitlines()[1:]
    (end,) = [json.loads(line) for line in lines if json.loads(line)["type"] == "turn/end"]
    logged = end["data"]["reason"]["error"]
    assert logged.endswith(MESSAGE)  # the log keeps it whole
    assert failed == f"dsh: error: turn 1 failed: {error_line(logged)}"
    said = failed.removeprefix("dsh: error: turn 1 failed: ")
    assert len(said) == ERROR_LINE_CHARS and said.endswith("…")
    assert "\\x1b]0;owned\\x07\\x1b[2J the model refused and on" in said
