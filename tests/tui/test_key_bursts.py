"""Editing keys typed in one burst with characters take effect in order. Textual runs a
focused widget's non-priority binding (TextArea's backspace and ctrl+u, the app's esc) only
after the key has bubbled up to the app through each parent's queue, while the keys after it
reach the composer at once: ``hello`` then ctrl+u ``/new`` enter in one read sent ``hello/new``
to the model, ``abc def`` then backspace ``zzz`` became ``abc defzz``, and a paste right after
esc was wiped by it. The composer runs such bindings as it reads them."""

from __future__ import annotations

import asyncio

from textual import events

from dsh.tui import DshApp
from tests.tui.conftest import SIZE, Rig, settle
from tests.tui.test_typed_fast import prompts


def send_at_once(app: DshApp, *messages: events.Message) -> None:
    """``messages`` delivered in one go, as a terminal delivers a burst of input."""
    driver = app._driver
    assert driver is not None
    for message in messages:
        message.set_sender(app)
        driver.send_message(message)


def key(name: str, character: str | None = None) -> events.Key:
    return events.Key(name, character)


def test_backspace_then_characters_in_one_burst_edit_in_order(rig: Rig) -> None:
    app = rig.app([{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            app.prompt_box.value = "abc def"
            app.prompt_box.move_cursor((0, 7))
            send_at_once(app, key("backspace"), key("z", "z"), key("z", "z"), key("z", "z"))
            await settle(pilot, lambda: app.prompt_box.text.count("z") == 3)
            assert app.prompt_box.text == "abc dezzz"

    asyncio.run(main())


def test_ctrl_u_then_a_command_in_one_burst_sends_the_command_alone(rig: Rig) -> None:
    app = rig.app([{"text": "reply one"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            app.prompt_box.value = "hello"
            app.prompt_box.move_cursor((0, 5))
            typed = [key("slash", "/"), key("c", "c"), key("o", "o"), key("s", "s")]
            send_at_once(app, key("ctrl+u"), *typed, key("t", "t"), key("enter", "\r"))
            await settle(pilot, lambda: app.prompt_box.text == "" and not app.running)
            await pilot.pause()
            shown = "\n".join(app.transcript.rendered_lines())
            assert "hello" not in shown and "Unknown command" not in shown, shown
            assert app.controller.session is None or prompts(app) == []  # nothing was sent

    asyncio.run(main())


def test_a_paste_right_after_esc_is_kept(rig: Rig) -> None:
    app = rig.app([{"text": "ok"}])

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            app.prompt_box.value = "abc"
            app.prompt_box.move_cursor((0, 3))
            send_at_once(app, key("escape"), events.Paste("pasted\nlines"))
            await settle(pilot, lambda: "pasted" in app.prompt_box.text)
            await pilot.pause()
            assert app.prompt_box.text == "pasted\nlines"

    asyncio.run(main())
