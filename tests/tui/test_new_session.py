"""``/new`` (and ``/clear``, the name other agents give it) starts a new session in the
workspace, as ``dsh`` does, and deletes nothing: the session left stays listed and resumable. An
unknown command names the closest one and stays selected, so the next command typed replaces
it instead of being glued to it."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.events import UserMessageEvent
from tests.tui.conftest import Rig, answer_approval, run_prompt, settle, submit
from tests.tui.test_pilot import lines_of, logged, run, text_of


def prompts(app: Any) -> list[str]:
    return [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]


@pytest.mark.parametrize("command", ["/new", "/clear"])
def test_new_starts_afresh_and_the_session_left_stays_resumable(rig: Rig, command: str):
    # the scripted model answers by the model calls a session has logged: each session
    # starts at the top of the script
    script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
        {"text": "the answer"},
    ]
    app = rig.app(script, approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "the first prompt")
        await answer_approval(pilot, "a")  # always, for this session
        await settle(pilot, lambda: not app.running and "the answer" in text_of(app))
        left = app.controller.session
        assert left is not None and app.controller.policy.always_allowed_commands
        await submit(pilot, command)
        await settle(pilot, lambda: "New session" in text_of(app))
        assert app.controller.session is None
        assert f"/resume {left.id} opens it again" in " ".join(text_of(app).split())
        assert "❯ the first prompt" not in lines_of(app)
        assert app.status_bar.info.context_tokens == 0
        assert app.prompt_box.prompts == ["the first prompt", command]  # the history stays
        await submit(pilot, "the second prompt")
        await answer_approval(pilot, "o")  # asked again: "always" was the other session's
        await settle(pilot, lambda: not app.running and "the answer" in text_of(app))
        fresh = app.controller.session
        assert fresh is not None and fresh.id != left.id
        assert prompts(app) == ["the second prompt"]
        assert {h.id for h in rig.store.list()} == {left.id, fresh.id}
        await submit(pilot, f"/resume {left.id}")
        await settle(pilot, lambda: "❯ the first prompt" in lines_of(app))
        assert prompts(app) == ["the first prompt"]

    run(app, body)


def test_new_before_anything_was_sent_says_the_session_is_new_already(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/new")
        await settle(pilot, lambda: "new session already" in text_of(app))
        assert rig.store.list() == []

    run(app, body)


def test_an_unknown_command_names_the_closest_and_the_next_command_replaces_it(rig: Rig):
    # "/nwe" kept in the box used to take the next command on its end: "/nwe/clear" went to
    # the model as a prompt.
    app = rig.app([{"text": "first answer"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "hello")
        await submit(pilot, "/nwe")
        await settle(pilot, lambda: "Unknown command /nwe" in text_of(app))
        assert "Did you mean /new?" in text_of(app)
        box = app.prompt_box
        assert box.value == "/nwe" and box.selected_text == "/nwe"  # kept, selected
        await pilot.press("slash", "c", "l", "e", "a", "r")
        assert box.value == "/clear"
        await pilot.press("enter")
        await settle(pilot, lambda: "New session" in text_of(app))
        assert len(rig.provider.requests) == 1  # only "hello" reached the model

    run(app, body)
