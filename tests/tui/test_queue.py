"""A draft sent while a turn runs is queued in the composer, marked on its border, and sent
when the turn ends; esc takes it back, and a cancelled turn never sends it. The model is held
by an event, so each turn ends when the test says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from textual import events

from dsh.config import dsh_home
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from tests.tui.conftest import Rig, settle, status_at_rest, submit
from tests.tui.test_composer import sent
from tests.tui.test_pilot import lines_of, run, text_of


class HeldFirstCall:
    """The scripted replies, the first model call held until ``release`` is set."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name = inner, inner.name
        self.release = asyncio.Event()
        self.calls = 0

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls == 1:
            await self.release.wait()
        async for event in self.inner.stream(request, history=history):
            yield event


def held_app(rig: Rig, script: list[dict[str, Any]]) -> tuple[Any, list[HeldFirstCall]]:
    held: list[HeldFirstCall] = []

    def wrap(inner: ScriptedProvider) -> HeldFirstCall:
        held.append(HeldFirstCall(inner))
        return held[0]

    return rig.app(script, wrap_provider=wrap), held


async def first_turn_waiting(pilot: Any) -> None:
    app = pilot.app
    app.prompt_box.value = "first"
    await pilot.press("enter")
    await settle(pilot, lambda: app.running and app.controller.waiting_since is not None)


async def type_and_send(pilot: Any, draft: str) -> None:
    pilot.app.post_message(events.Paste(draft))
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()


async def idle(pilot: Any) -> None:
    app = pilot.app
    await settle(pilot, lambda: not app.running and status_at_rest(app))
    await pilot.pause()


def test_a_draft_sent_during_a_turn_is_queued_and_sent_when_the_turn_ends(rig: Rig):
    app, held = held_app(rig, [{"text": "first answer"}, {"text": "second answer"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        await type_and_send(pilot, "a long follow-up\nwritten while it ran")
        box = app.prompt_box
        assert box.queued == "a long follow-up\nwritten while it ran" and box.value == ""
        assert str(box.border_title).startswith("queued · sent when this turn ends · esc takes")
        assert str(box.border_title).endswith("a long follow-up")
        assert "esc takes back the queued draft" in str(app.query_one("#hint").render())
        assert [line for line in lines_of(app) if line] == ["❯ first"]  # no note between
        await type_and_send(pilot, "a third")  # one queued at a time: this one stays
        assert box.value == "a third" and box.queued == "a long follow-up\nwritten while it ran"
        held[0].release.set()
        await settle(pilot, lambda: "second answer" in text_of(app))
        await idle(pilot)
        assert sent(app) == ["first", "a long follow-up\nwritten while it ran"]
        lines = lines_of(app)
        assert lines.index("● first answer") < lines.index("❯ a long follow-up")
        assert box.queued is None and box.border_title is None and box.value == "a third"

    run(app, body)


def test_the_status_bar_says_a_draft_is_queued_within_80_columns(rig: Rig):
    """While a turn runs with a draft queued, the bar says so (``1 queued``), and no longer
    that esc cancels: esc takes the draft back first (ctrl+c cancels, when the width holds
    it). The line fits an 80-column terminal by leaving out the least needed parts whole,
    never cutting what runs or the queue."""
    app, held = held_app(rig, [{"text": "first answer"}, {"text": "second answer"}])

    def bar() -> str:
        return app.status_bar.render().plain

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model deepseek-chat")
        await first_turn_waiting(pilot)
        await settle(pilot, lambda: bar().endswith(" · esc cancels"))
        await type_and_send(pilot, "a follow-up")
        assert app.prompt_box.queued == "a follow-up"
        shown = bar()
        assert " · 1 queued" in shown and "esc cancels" not in shown
        assert f" · {app.status_bar.info.busy} · " in shown  # what runs, whole
        assert shown.startswith(" deepseek-chat · approval auto · ")
        assert len(shown) <= 80
        assert "cache hits" not in shown  # left out first
        await pilot.press("escape")  # the draft comes back; the turn goes on
        await settle(pilot, lambda: "queued" not in bar())
        assert bar().endswith(" · esc cancels") and app.running
        held[0].release.set()
        await idle(pilot)
        assert "queued" not in bar() and "cancels" not in bar()

    run(app, body, size=(80, 24))


def test_esc_takes_the_queued_draft_back_and_a_second_esc_cancels_the_turn(rig: Rig):
    app, _ = held_app(rig, [{"text": "never"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        await type_and_send(pilot, "follow-up")
        await pilot.press("escape")
        await pilot.pause()
        assert app.prompt_box.queued is None and app.prompt_box.value == "follow-up"
        assert app.running  # the turn goes on
        await pilot.press("escape")
        await idle(pilot)
        assert "Turn stopped: cancelled by the user" in text_of(app)
        assert app.prompt_box.value == "follow-up" and sent(app) == ["first"]

    run(app, body)


def test_a_cancelled_turn_puts_the_queued_draft_back_unsent(rig: Rig):
    app, _ = held_app(rig, [{"text": "never"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        await type_and_send(pilot, "follow-up")
        await pilot.press("ctrl+c")
        await idle(pilot)
        assert "Turn stopped: cancelled by the user" in text_of(app)
        assert app.prompt_box.queued is None and app.prompt_box.value == "follow-up"
        assert sent(app) == ["first"]

    run(app, body)


def test_a_prompt_command_sent_during_a_turn_is_queued_too(rig: Rig):
    # It used to be dropped: the box emptied and "Something is running" was noted.
    commands = dsh_home() / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("Review $ARGUMENTS.\n")
    app, held = held_app(rig, [{"text": "first answer"}, {"text": "reviewed"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        await type_and_send(pilot, "/review notes.txt")
        assert app.prompt_box.queued == "/review notes.txt"
        held[0].release.set()
        await settle(pilot, lambda: "reviewed" in text_of(app))
        await idle(pilot)
        assert sent(app) == ["first", "Review notes.txt."]

    run(app, body)


def test_fork_and_rewind_sent_during_a_turn_are_queued_and_run_when_it_ends(rig: Rig):
    # They used to be dropped: "/fork waits for the running turn" was noted, the box emptied,
    # and nothing ran when the turn ended.
    app, held = held_app(rig, [{"text": "first answer"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        original = app.controller.session.id
        await type_and_send(pilot, "/fork")
        box = app.prompt_box
        assert box.queued == "/fork" and box.value == ""
        assert str(box.border_title).endswith("/fork")
        assert "waits for the running turn" not in text_of(app)
        await type_and_send(pilot, "/rewind 1")  # one queued at a time: this one stays
        assert box.value == "/rewind 1" and box.queued == "/fork"
        held[0].release.set()
        await settle(pilot, lambda: app.controller.session.id != original)
        await idle(pilot)
        assert "Forked session" in text_of(app) and box.queued is None
        assert box.value == "/rewind 1"

    run(app, body)


def test_undo_sent_during_a_turn_comes_back_unrun_when_the_turn_is_cancelled(rig: Rig):
    app, _ = held_app(rig, [{"text": "never"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        await type_and_send(pilot, "/undo")
        assert app.prompt_box.queued == "/undo"
        await pilot.press("ctrl+c")
        await idle(pilot)
        assert app.prompt_box.queued is None and app.prompt_box.value == "/undo"
        assert "Undid" not in text_of(app) and "Nothing to undo" not in text_of(app)

    run(app, body)
