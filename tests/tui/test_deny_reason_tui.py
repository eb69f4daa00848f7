"""Deny with a reason in the terminal UI's approval prompt: ``e`` opens a one-line input, enter
denies the call and the model's next request carries what was typed in the call's result (as
logged: a reopened session's requests are rebuilt from it), esc goes back to the choice without
denying. Driven by the real app's pilot and the scripted model."""

from __future__ import annotations

from typing import Any

from textual import events

from dsh.events import event_type_of
from dsh.tools.approval import REASON_LIMIT
from dsh.tui.approval import CUT_NOTE, KEYS_READY, KEYS_REASON, ApprovalScreen
from dsh.tui.deny_reason import ReasonInput
from tests.tui.conftest import Rig, approval_ready, settle, submit
from tests.tui.test_pilot import bash_script, logged, run, text_of

REASON = "do not delete anything yet"


def keys(text: str) -> list[str]:
    return ["space" if c == " " else c for c in text]


def tool_result_texts(app: Any) -> list[str]:
    results = [e for e in logged(app) if event_type_of(e) == "tool/result"]
    return [r.data.message.content[0].content[0].text for r in results]


def test_e_then_enter_denies_with_the_reason_the_models_next_request_reads(rig: Rig):
    app = rig.app(bash_script("rm -rf build"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "clean up")
        screen = await approval_ready(pilot)
        await pilot.press("e")
        reason = screen.query_one("#reason", ReasonInput)
        await settle(pilot, lambda: reason.has_focus)
        assert str(screen.query_one("#keys").render()) == KEYS_REASON
        await pilot.press(*keys(REASON))  # d, o, n, e, a, y: typed, not answers
        assert app.screen is screen and reason.value == REASON
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running)
        [denied] = tool_result_texts(app)
        assert denied == (
            f"bash was not run: the user denied this call and said: {REASON}\n"
            "Do not retry it as is; follow what the user said."
        )
        sent = rig.provider.requests[-1].messages[-1]  # the call's result, as the model read it
        assert sent.content[0].content[0].text == denied
        assert not (rig.workspace / "build").exists() and "All done." in text_of(app)
        shown = "└ bash was not run: the user denied this call and said: " + REASON
        assert shown in text_of(app)  # the call's card shows the denial with its reason

    run(app, body)


def test_esc_in_the_reason_goes_back_to_the_choice_keeping_the_text_and_a_paste_is_one_line(
    rig: Rig,
):
    app = rig.app(bash_script("echo ran"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        screen = await approval_ready(pilot)
        await pilot.press("e")
        reason = screen.query_one("#reason", ReasonInput)
        await settle(pilot, lambda: reason.has_focus)
        app.post_message(events.Paste("first line\nsecond\tline\r\n"))
        await settle(pilot, lambda: reason.value == "first line second line")
        await pilot.press("escape")
        await settle(pilot, lambda: screen.query_one("#once").has_focus)
        assert app.screen is screen and app.running and not screen.cancels_turn
        assert not reason.display or not screen.has_class("reasoning")
        assert str(screen.query_one("#keys").render()) == KEYS_READY
        await pilot.press("e")  # the text typed is still there
        await settle(pilot, lambda: reason.has_focus)
        assert reason.value == "first line second line"
        await pilot.press("escape", "o")
        await settle(pilot, lambda: not app.running)
        assert [text.strip() for text in tool_result_texts(app)] == ["ran"]
        assert not isinstance(app.screen, ApprovalScreen)

    run(app, body)


def test_enter_on_an_empty_reason_is_a_plain_deny(rig: Rig):
    app = rig.app(bash_script("echo never"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        await approval_ready(pilot)
        await pilot.press("e", "space", "enter")
        await settle(pilot, lambda: not app.running)
        [denied] = tool_result_texts(app)
        assert denied == (
            "bash was not run: the user denied this call. Do not retry it as is; ask the user "
            "how to proceed or take a different approach."
        )

    run(app, body)


def test_a_paste_past_the_limit_is_cut_to_fit_and_the_prompt_says_so(rig: Rig):
    app = rig.app(bash_script("echo never"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        screen = await approval_ready(pilot)
        await pilot.press("e", "a", "space")
        reason = screen.query_one("#reason", ReasonInput)
        app.post_message(events.Paste("x" * 2_500))
        await settle(pilot, lambda: len(reason.value) == REASON_LIMIT)
        assert reason.value == "a " + "x" * (REASON_LIMIT - 2)
        assert str(screen.query_one("#keys").render()) == f"{CUT_NOTE} {KEYS_REASON}"
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running)
        [denied] = tool_result_texts(app)
        assert denied.split("\n")[0].endswith("said: " + reason.value)

    run(app, body)
