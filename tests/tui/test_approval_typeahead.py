"""The approval prompt opens while people may still be typing: keys typed ahead go on to the
draft instead of answering it, until the typing stops for ``QUIET_SECONDS`` (on the app's
clock, which the rig's ``ManualClock`` lets the tests move); esc denies the call and cancels
the turn, d or n deny only the call."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import Button

from dsh.events import TurnEndEvent, event_type_of
from dsh.tui.approval import KEYS_READY, KEYS_WAITING, QUIET_SECONDS, ApprovalScreen
from tests.tui.conftest import Rig, answer_approval, approval_ready, settle, submit
from tests.tui.test_pilot import bash_script, logged, run, text_of


def results(app: Any) -> list[str]:
    return [
        e.data.message.content[0].content[0].text
        for e in logged(app)
        if event_type_of(e) == "tool/result"
    ]


async def prompt_open(pilot: Any) -> ApprovalScreen:
    app = pilot.app
    await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    return screen


def test_keys_typed_as_the_prompt_opens_go_to_the_draft_and_answer_nothing(rig: Rig):
    # Typing "a note" on: "a" used to allow the tool for the session, "n" to deny the call.
    app = rig.app(bash_script("echo typed-ahead"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        screen = await prompt_open(pilot)
        for key in ("a", "space", "n", "o", "t", "e"):
            app.clock.advance(QUIET_SECONDS * 0.6)  # a typist's pace: never a pause that long
            await pilot.press(key)
        await pilot.pause()
        assert app.screen is screen and screen.waiting
        assert app.prompt_box.value == "a note"
        assert app.controller.policy.always_allowed_tools == frozenset()
        assert results(app) == []
        await answer_approval(pilot, "o")
        await settle(pilot, lambda: not app.running)
        assert [r.strip() for r in results(app)] == ["typed-ahead"]
        assert app.prompt_box.value == "a note"  # nothing typed was lost
        assert app.controller.policy.always_allowed_tools == frozenset()

    run(app, body)


def test_a_waiting_prompt_says_so_and_its_buttons_wake_once_the_typing_stops(rig: Rig):
    app = rig.app(bash_script("echo hi"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        screen = await prompt_open(pilot)
        buttons = list(screen.query(Button))
        assert str(screen.query_one("#keys").render()) == KEYS_WAITING
        assert all(b.disabled for b in buttons) and screen.has_class("waiting")
        await pilot.click("#once")  # a click aimed at what was there before does nothing
        await pilot.pause()
        assert app.screen is screen
        await approval_ready(pilot)
        assert str(screen.query_one("#keys").render()) == KEYS_READY
        assert not any(b.disabled for b in buttons) and not screen.has_class("waiting")
        assert screen.query_one("#once", Button).has_focus
        await pilot.press("enter")  # the focused button, once awake
        await settle(pilot, lambda: not app.running)
        assert [r.strip() for r in results(app)] == ["hi"]

    run(app, body)


def test_enter_and_a_paste_typed_ahead_queue_the_draft_as_the_composer_would(rig: Rig):
    app = rig.app([*bash_script("echo hi"), {"text": "About the follow-up."}], approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        await prompt_open(pilot)
        app.screen.post_message(events.Paste("and then "))
        await pilot.press("x", "enter")
        await pilot.pause()
        assert app.prompt_box.queued == "and then x" and app.prompt_box.value == ""
        await answer_approval(pilot, "o")
        await settle(pilot, lambda: "About the follow-up." in text_of(app) and not app.running)
        prompts = [e.data.text() for e in logged(app) if event_type_of(e) == "user/message"]
        assert prompts == ["go", "and then x"]

    run(app, body)


def test_esc_denies_the_call_and_cancels_the_turn_even_while_the_prompt_waits(rig: Rig):
    app = rig.app(bash_script("echo never"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "go")
        await prompt_open(pilot)  # still waiting: esc is taken at once
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)
        assert not isinstance(app.screen, ApprovalScreen)
        end = [e for e in logged(app) if isinstance(e, TurnEndEvent)][-1]
        assert end.data.reason.kind == "aborted"
        assert "never" not in "".join(results(app))
        assert "All done." not in text_of(app)  # the turn did not carry on

    run(app, body)
