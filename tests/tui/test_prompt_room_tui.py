"""A prompt the context window cannot hold (the audit's 228 KB paste into a 6k window, which
went out and left the status bar at "context 708% of 6k") is refused before anything is
sent: the draft stays in the composer, the reason shows as a note (``dsh.agent.room``)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from textual import events

from dsh.agent.runtime import Route
from dsh.events import TurnStartEvent
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.tui import DshApp, TuiOptions
from tests.tui.conftest import Rig, settle, status_at_rest
from tests.tui.test_pilot import run, text_of


def test_a_paste_the_window_cannot_hold_stays_in_the_composer_with_the_reason(rig: Rig):
    app = rig.app([{"text": "never asked"}, {"text": "answered"}], window=6000)
    paste = "".join(f"row {n}: {'y' * 100}\n" for n in range(2000))

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste(paste))
        await pilot.pause()
        draft = app.prompt_box.value  # shown as [pasted 2000 lines], sent whole
        assert len(draft) > 200_000
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.pause()
        assert app.prompt_box.value == draft  # nothing lost: shorten it and send again
        shown = " ".join(text_of(app).split())
        assert re.search(
            r"error: the prompt is 220,8\d\d characters; dsh takes at most 200,000", shown
        )
        assert rig.provider.requests == []
        session = app.controller.session
        assert session is None or not session.of_type(TurnStartEvent)
        app.prompt_box.value = draft[:30_000]  # over the 6,000-token window, under the limit
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        shown = " ".join(text_of(app).split())
        assert "6,000-token context window leaves" in shown
        assert app.prompt_box.text == draft[:30_000] and rig.provider.requests == []
        assert app.controller.session is None  # the session made for it was not kept
        assert not list(rig.home.rglob("session.jsonl"))
        app.prompt_box.value = "a short one"
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        assert "answered" in text_of(app) or "never asked" in text_of(app)

    run(app, body)


def test_a_window_the_system_prompt_and_tools_leave_no_room_in_is_refused_as_the_app_opens(
    rig: Rig,
):
    """A long AGENTS.md in a 4,096-token window: the app says so in one line as it opens (the
    agent it would build at the first prompt, built at start), not after a prompt was typed."""
    (rig.workspace / "AGENTS.md").write_text("Rule: be careful. " * 700)
    scripted = ScriptedProvider(parse_script([{"text": "never"}]), model="scripted")
    options = TuiOptions(
        settings=rig.settings(),
        store=rig.store,
        workspace=rig.workspace,
        route_factory=lambda model: Route(scripted, "scripted", 4096),
        cursor_blink=False,
    )
    app = DshApp(options)
    said: list[str] = []
    exit_app = app.exit

    def exit_saying(*args: Any, **kwargs: Any) -> None:
        said.append(str(kwargs.get("message")))  # printed once the app has left the screen
        exit_app(*args, **kwargs)

    app.exit = exit_saying  # type: ignore[method-assign]

    async def main() -> None:
        async with app.run_test(size=(100, 32)) as pilot:
            await settle(pilot, lambda: not app.is_running)

    asyncio.run(main())
    assert app.return_code == 1 and scripted.requests == []
    (line,) = said
    assert line.startswith("dsh: error: the system prompt and tools take ~")
    assert "too many for a 4,096-token context window" in line
    assert not list(rig.home.rglob("session.jsonl"))


def test_a_short_prompt_whose_mention_attaches_too_much_stays_in_the_composer(rig: Rig):
    """``@big.log`` attaches a note (~2k tokens) the 8k window has no room for beside the
    reply bound: the draft goes back with the reason, nothing is sent, and the same words
    without the mention go."""
    (rig.workspace / "big.log").write_text("".join(f"row {n}: {'v' * 60}\n" for n in range(400)))
    config = {"attach_mentions": True, "params": {"max_tokens": 6000}}
    app = rig.app([{"text": "answered"}], window=8192, agent_config=config)

    async def body(pilot: Any) -> None:
        app.prompt_box.value = "summarise @big.log please"
        await pilot.press("enter")
        await settle(pilot, lambda: "error:" in text_of(app) and not app.running)
        await settle(pilot, lambda: status_at_rest(app))
        shown = " ".join(text_of(app).split())
        assert re.search(r"error: the prompt and what it attaches \(@big\.log ~2\.\dk\)", shown)
        assert "shorten it or mention fewer or smaller files" in shown
        assert app.prompt_box.text == "summarise @big.log please"
        assert rig.provider.requests == []
        assert app.controller.session is None  # the session made for it was not kept
        assert not list(rig.home.rglob("session.jsonl"))
        app.prompt_box.value = "summarise big.log please"
        await pilot.press("enter")
        await settle(pilot, lambda: "answered" in text_of(app) and not app.running)

    run(app, body)
