"""esc or ctrl+c stops a running ``!cmd`` as a cancel stops the model's command (it did nothing
until the command ended, up to the bash tool's 120 s timeout): everything the command started is
killed, and what it printed until then is its output, marked as stopped, in the note and in the
next prompt alike."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dsh.tui.shell_command import STOPPED
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of

COMMAND = "echo $$ > pid; echo started; sleep 60; echo finished"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("key", ["ctrl+c", "escape"])
def test_a_key_stops_a_running_shell_command(rig: Rig, key: str):
    app = rig.app([{"text": "I see it was stopped."}])
    pid_file: Path = rig.workspace / "pid"

    async def body(pilot: Any) -> None:
        await submit(pilot, f"!{COMMAND}")
        await settle(pilot, lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        pid = int(pid_file.read_text())
        hint = str(app.query_one("#hint").render())
        assert "esc cancels it" in hint and "the turn" not in hint  # a command, not a turn
        await pilot.press(key)
        await settle(pilot, lambda: not app.running and STOPPED in text_of(app))
        assert f"  started\n  {STOPPED}" in text_of(app) and "  finished\n" not in text_of(app)
        await settle(pilot, lambda: not alive(pid))  # killed, not left to run on
        await run_prompt(pilot, "what happened?")
        sent = rig.provider.requests[-1].messages[-1].text()
        assert "started\n" + STOPPED in sent

    run(app, body)
