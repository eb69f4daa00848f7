"""``/retry`` in the terminal UI: the last turn's prompt sent again, unretyped, when that turn
failed or was cancelled; a note, and no turn, when there is nothing to retry."""

from __future__ import annotations

from typing import Any

from dsh.agent.retry_command import COMPLETED, NOTHING_YET
from dsh.events import TurnEndEvent, UserMessageEvent, UserSource
from dsh.surface import Session
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of

FAILS = {"error": {"code": "BAD_REQUEST", "message": "the server refused it"}}


def prompts_and_ends(rig: Rig, session_id: str) -> tuple[list[str], list[str]]:
    with Session.open(rig.store, session_id) as session:
        prompts = [
            e.data.text()
            for e in session.of_type(UserMessageEvent)
            if isinstance(e.data.source, UserSource)
        ]
        ends = [e.data.reason.kind for e in session.of_type(TurnEndEvent)]
    return prompts, ends


def test_retry_sends_a_failed_turns_prompt_again(rig: Rig) -> None:
    app = rig.app([FAILS, {"text": "it worked this time"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "fix the @notes.txt typo")
        assert "the server refused it" in text_of(app)
        await submit(pilot, "/retry")
        await settle(pilot, lambda: "it worked this time" in text_of(app) and not app.running)
        assert "Retrying the last turn's prompt (that turn failed)." in text_of(app)
        assert app.prompt_box.text == ""  # nothing to retype, nothing left in the box
        await submit(pilot, "/retry")  # that one completed: nothing more to send
        await settle(pilot, lambda: COMPLETED in text_of(app))

    run(app, body)
    assert app.last_session_id is not None
    prompts, ends = prompts_and_ends(rig, app.last_session_id)
    assert prompts == ["fix the @notes.txt typo"] * 2
    assert ends == ["error", "completed"]


def test_retry_sends_a_cancelled_turns_prompt_again(rig: Rig) -> None:
    app = rig.app([{"text": "slow answer", "delayMs": 600_000}, {"text": "second try"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "a long question")
        await settle(pilot, lambda: app.controller.waiting_since is not None)
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)
        app.prompt_box.value = ""  # the cancelled turn's prompt, if it came back: not retyped
        await submit(pilot, "/retry")
        await settle(pilot, lambda: "second try" in text_of(app) and not app.running)
        assert "(that turn was cancelled)" in text_of(app)

    run(app, body)
    assert app.last_session_id is not None
    prompts, ends = prompts_and_ends(rig, app.last_session_id)
    assert prompts == ["a long question"] * 2
    assert ends == ["aborted", "completed"]


def test_retry_with_nothing_to_retry_says_so_in_one_line(rig: Rig) -> None:
    app = rig.app([{"text": "done"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/retry")
        await settle(pilot, lambda: NOTHING_YET in text_of(app))
        assert app.controller.session is None  # asking started nothing
        await run_prompt(pilot, "hello")
        await submit(pilot, "/retry")
        await settle(pilot, lambda: COMPLETED in text_of(app))
        assert not app.running

    run(app, body)
    assert app.last_session_id is not None
    assert prompts_and_ends(rig, app.last_session_id) == (["hello"], ["completed"])
