"""A running ``bash`` call's last lines reach the pages on the session's live stream as
``tail`` frames (keyed by its call's seq, masked, escapes dropped), a page joining mid-command
gets the current ones after its catch-up, and the tail ends (``[]``) once the result is logged;
no frame ever holds the secret the command printed. The real server, a real command gated by a
file the test writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import WebEnv, make_env
from tests.web.test_live import Served, idle

SECRET = "web-tail-secret-0123456789"
COMMAND = (
    f"echo one; printf '\\033[1mbold\\033[0m\\n'; echo key {SECRET[:8]}''{SECRET[8:]}; "
    "while [ ! -f go ]; do sleep 0.05; done; echo went"
)
PRINTED = ["one", "bold", "key [masked LIVETAIL_API_KEY]"]


def is_tail(frame: dict[str, Any], lines: list[str]) -> bool:
    return frame["kind"] == "tail" and frame["lines"] == lines


def test_a_running_command_shows_on_the_live_stream_and_ends_with_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVETAIL_API_KEY", SECRET)
    env: WebEnv = make_env(tmp_path)
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
        {"text": "ok"},
    ]
    served = Served(env)
    try:
        sid = served.new_session()
        first = served.live(sid)
        assert first.next()["kind"] == "hello"
        served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "print"})
        frames = first.until(lambda f: is_tail(f, PRINTED))
        (call,) = [
            f["event"] for f in frames if f["kind"] == "event" and f["event"]["type"] == "tool/call"
        ]
        assert frames[-1]["seq"] == call["seq"]
        joined = served.live(sid, after_seq=-1)  # a page opened mid-command
        assert joined.next()["kind"] == "hello"
        caught = joined.until(lambda f: f["kind"] == "tail")
        assert caught[-1] == {"kind": "tail", "seq": call["seq"], "lines": PRINTED}
        assert caught[-2]["kind"] == "event"  # after its catch-up
        (env.workspace / "go").write_text("")
        rest = first.until(idle)
        kinds = [(f["kind"], f.get("event", {}).get("type")) for f in rest]
        result_at = kinds.index(("event", "tool/result"))
        tails = [i for i, f in enumerate(rest) if f["kind"] == "tail"]
        assert rest[tails[-1]] == {"kind": "tail", "seq": call["seq"], "lines": []}
        assert tails[-1] > result_at  # gone once the result is logged, not before
        assert not any(SECRET in raw for raw in first.raw + joined.raw)
        joined.close()
        first.close()
    finally:
        served.close()
