"""The terminal UI tells the person once when a reply asked for more tool calls than
``tools.max_calls_per_reply`` (a toast, and a row in ``/warnings``; ``dsh.agent.call_cap``)."""

from __future__ import annotations

from typing import Any

import pytest

import dsh.tui.app_warnings
from tests.tui.conftest import Rig, settle, submit
from tests.tui.test_pilot import text_of
from tests.tui.test_warnings import run_with_toasts, toasts

SAID = (
    "warning: the model's reply asked for 5 tool calls: the first 2 ran, the other 3 were not "
    "run (tools.max_calls_per_reply = 2)"
)


def test_a_reply_past_the_limit_shows_one_toast_and_its_calls_are_answered(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)
    (rig.workspace / "a.txt").write_text("hello\n")
    calls = [{"name": "read_file", "arguments": {"path": "a.txt", "n": n}} for n in range(5)]
    app = rig.app(
        [{"toolCalls": calls}, {"text": "read it"}], agent_config={"max_calls_per_reply": 2}
    )

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        await settle(pilot, lambda: "read it" in text_of(app) and not app.running)
        await settle(pilot, lambda: bool(toasts(app)))
        assert toasts(app) == [("warning", SAID)]
        assert text_of(app).count("TOO_MANY_CALLS") >= 1

    run_with_toasts(app, body)
