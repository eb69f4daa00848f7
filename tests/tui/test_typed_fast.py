"""Keys typed fast after enter are the next draft: the composer hands its draft to the app as
enter is read, before it reads the keys after it. (The app used to take the draft from a
message that reached it after the composer had read on: ``/cost⏎hello⏎`` typed at once became
"Unknown command /costhello", the second draft glued to the first.) An enter read while a
resumed session still opens queues its draft, sent once the session is open."""

from __future__ import annotations

import asyncio

from textual import events

from dsh.events import UserMessageEvent
from dsh.tui import DshApp
from tests.tui.conftest import SIZE, Rig, settle, status_at_rest


def burst(app: DshApp, text: str) -> None:
    """Every key of ``text`` (``\\r``: enter) at once, as a terminal delivers typed-ahead keys."""
    driver = app._driver
    assert driver is not None
    for char in text:
        key = events.Key("enter", "\r") if char == "\r" else events.Key(char, char)
        if char == "/":
            key = events.Key("slash", "/")
        elif char == " ":
            key = events.Key("space", " ")
        key.set_sender(app)
        driver.send_message(key)


def prompts(app: DshApp) -> list[str]:
    session = app.controller.session
    assert session is not None
    return [e.data.text() for e in session.events if isinstance(e, UserMessageEvent)]


def test_a_command_and_a_prompt_typed_at_once_are_not_glued(rig: Rig):
    app = rig.app([{"text": "Hello back."}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            burst(app, "/cost\rhello\r")

            def shown() -> str:
                return "\n".join(app.transcript.rendered_lines())

            await settle(pilot, lambda: "Hello back." in shown() or "Unknown command" in shown())
            await settle(pilot, lambda: not app.running and status_at_rest(app))
            assert "Unknown command" not in shown()
            assert prompts(app) == ["hello"] and app.prompt_box.text == ""

    asyncio.run(main())
