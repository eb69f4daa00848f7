"""A running ``bash`` card shows the last lines its command printed under ``running…``, as a
terminal shows them (escapes dropped), masked, each cut to the card's width; they go when the
result comes (``dsh.tui.running_cards``, ``dsh.agent.tool_progress``). A real command gated
by a file the test writes; the test waits for what it expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.tui import DshApp
from tests.tui.conftest import SIZE, Rig, settle, submit
from tests.tui.test_running_cards import card_says, run

SECRET = "tui-tail-secret-0123456789"
LONG = "L" * 300
COMMAND = (
    "echo one; printf '\\033[32mgreen\\033[0m\\n'; "
    f"echo key {SECRET[:8]}''{SECRET[8:]}; echo {LONG}; "
    "while [ ! -f go ]; do sleep 0.05; done; echo went"
)


def tail_shown(app: DshApp) -> list[str]:
    rows = app.transcript.rendered_lines()
    return [row.strip() for row in rows if row.startswith("      ")]


def test_a_running_card_shows_what_its_command_prints_then_its_result(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("LIVETAIL_API_KEY", SECRET)
    app = rig.app(
        [{"toolCalls": [{"name": "bash", "arguments": {"command": COMMAND}}]}, {"text": "ok"}]
    )
    go: Path = rig.workspace / "go"

    async def body(pilot: Any) -> None:
        await submit(pilot, "print")
        await settle(pilot, lambda: len(tail_shown(app)) == 4)
        one, green, key, long = tail_shown(app)
        assert (one, green, key) == ("one", "green", "key [masked LIVETAIL_API_KEY]")
        assert long.startswith("LLLL") and long.endswith("…") and 80 < len(long) < SIZE[0] - 6
        assert card_says(app, "running…")
        assert not any(SECRET in row for row in app.transcript.rendered_lines())
        go.write_text("")
        await settle(pilot, lambda: not app.running)
        assert card_says(app, "one (+4 lines)") and tail_shown(app) == []

    run(app, body)
