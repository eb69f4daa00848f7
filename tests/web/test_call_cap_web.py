"""``dsh web`` tells the pages of a session once when a reply asked for more tool calls than
``tools.max_calls_per_reply`` (a ``warning`` frame of that session; ``dsh.agent.call_cap``),
over a real uvicorn server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from dsh.config import ToolSettings
from tests.web.conftest import make_env, wait_idle
from tests.web.test_live import Served


def test_a_reply_past_the_limit_warns_the_session_s_pages_once(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.settings = msgspec.structs.replace(
        env.settings, tools=ToolSettings(approval="auto", max_calls_per_reply=3)
    )
    calls = [{"name": "read_file", "arguments": {"path": "notes.txt", "n": n}} for n in range(7)]
    env.script = [{"toolCalls": calls}, {"text": "ok"}]
    served = Served(env)
    try:
        session = served.new_session()
        live = served.live(session)
        assert live.next()["warnings"] == []
        served.http.post(f"/api/sessions/{session}/prompt", json={"text": "hi"})

        def warning(frame: dict[str, Any]) -> bool:
            return frame["kind"] == "warning"

        said = live.until(warning, timeout=120)[-1]["warning"]
        assert (said["session"], said["count"]) == (session, 1)
        assert said["text"] == (
            "the model's reply asked for 7 tool calls: the first 3 ran, the other 4 were not "
            "run (tools.max_calls_per_reply = 3)"
        )
        wait_idle(served.http, session, timeout=120)
        lines = env.log_lines(session)
        assert sum(b'"code":"TOO_MANY_CALLS"' in line for line in lines) == 4
    finally:
        served.close()
