"""A live tool card without its result says how long it has run (from its first second on, by
the app's clock: a test moves it by hand, so no count races the machine), and the card under
an open approval prompt says it waits for that approval, not that it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dsh.tui import DshApp
from dsh.tui.running_cards import running_text
from tests.tui.conftest import SIZE, Rig, approval_ready, settle, submit

WAIT_FOR_GO = "while [ ! -f go ]; do sleep 0.05; done; echo went"
"""A command that runs until the test lets it end."""


def card_says(app: DshApp, text: str) -> bool:
    return f"    └ {text}" in app.transcript.rendered_lines()


def run(app: DshApp, body: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await body(pilot)

    asyncio.run(main())


def script() -> list[dict[str, Any]]:
    return [
        {"toolCalls": [{"name": "bash", "arguments": {"command": WAIT_FOR_GO}}]},
        {"text": "It went."},
    ]


def test_a_running_card_counts_its_seconds(rig: Rig):
    app = rig.app(script())
    go: Path = rig.workspace / "go"

    async def body(pilot: Any) -> None:
        await submit(pilot, "wait for it")
        await settle(pilot, lambda: card_says(app, "running…"))
        app.clock.advance(12.4)
        await settle(pilot, lambda: card_says(app, "running… 12 s"))
        await pilot.press("ctrl+o")  # expanded, it says so too
        await settle(
            pilot, lambda: "    no result yet · running… 12 s" in app.transcript.rendered_lines()
        )
        await pilot.press("ctrl+o")
        go.write_text("")
        await settle(pilot, lambda: not app.running)
        assert card_says(app, "went") and not any(
            "running" in r for r in app.transcript.rendered_lines()
        )

    run(app, body)


def test_the_card_under_an_approval_waits_for_it_then_runs_from_the_answer(rig: Rig):
    app = rig.app(script(), approval="ask")
    go: Path = rig.workspace / "go"

    async def body(pilot: Any) -> None:
        await submit(pilot, "wait for it")
        await approval_ready(pilot)
        app.clock.advance(30)
        await settle(pilot, lambda: card_says(app, "waiting for your approval"))
        await pilot.press("o")
        await settle(pilot, lambda: card_says(app, "running…"))
        app.clock.advance(2)
        await settle(pilot, lambda: card_says(app, "running… 2 s"))  # counted from the answer
        go.write_text("")
        await settle(pilot, lambda: not app.running)

    run(app, body)


def test_the_count_shows_from_the_first_second():
    assert running_text(0.99) == "running…"
    assert running_text(1.0) == "running… 1 s"
    assert running_text(75.5) == "running… 75 s"
