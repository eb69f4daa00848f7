"""``/undo`` sent while a turn runs waits for it (queued in the composer) and takes back the
edits of that turn, the one it was typed about: never an earlier turn's when that one changed
no file (``dsh.tui.undo_queued``); and what is queued runs in the order it was typed. The model
is held at the second turn's first call, so each turn ends when the test says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from tests.tui.conftest import Rig, run_prompt, settle, status_at_rest
from tests.tui.test_pilot import run
from tests.tui.test_queue import type_and_send
from tests.tui.test_undo_tui import EDIT, flat

GAMMA = {
    "toolCalls": [
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "gamma", "new": "GAMMA"}}
    ]
}


class HeldCall:
    """The scripted replies, model call ``held`` (1-based) held until ``release`` is set."""

    def __init__(self, inner: ScriptedProvider, held: int) -> None:
        self.inner, self.name, self.held = inner, inner.name, held
        self.release = asyncio.Event()
        self.calls = 0

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls == self.held:
            await self.release.wait()
        async for event in self.inner.stream(request, history=history):
            yield event


def held_at(rig: Rig, script: list[dict[str, Any]], call: int) -> tuple[Any, list[HeldCall]]:
    held: list[HeldCall] = []

    def wrap(inner: ScriptedProvider) -> HeldCall:
        held.append(HeldCall(inner, call))
        return held[0]

    return rig.app(script, wrap_provider=wrap), held


async def idle(pilot: Any) -> None:
    app = pilot.app
    await settle(pilot, lambda: not app.running and status_at_rest(app))
    await pilot.pause()


async def second_turn_held(pilot: Any, held: HeldCall) -> None:
    """Turn 1 (beta → BETA) runs to its end; turn 2 starts and is held at its first call."""
    app = pilot.app
    await run_prompt(pilot, "capitalise beta")
    app.prompt_box.value = "and now?"
    await pilot.press("enter")
    await settle(pilot, lambda: app.running and held.calls == 3)


def test_a_queued_undo_takes_back_the_turn_it_was_typed_during(rig: Rig):
    notes = rig.workspace / "notes.txt"
    app, held = held_at(rig, [EDIT, {"text": "one"}, GAMMA, {"text": "two"}], 3)

    async def body(pilot: Any) -> None:
        await second_turn_held(pilot, held[0])
        await type_and_send(pilot, "/undo")
        assert app.prompt_box.queued == "/undo"
        held[0].release.set()
        await settle(pilot, lambda: "Undid turn 2: restored notes.txt" in flat(app))
        await idle(pilot)
        assert notes.read_text() == "alpha\nBETA\ngamma\n"  # turn 2's edit only
        assert "Undid turn 1" not in flat(app)

    run(app, body)


def test_a_queued_undo_never_takes_back_an_earlier_turn_than_the_one_it_waited_for(rig: Rig):
    """Turn 2, running when ``/undo`` was typed, changes no file: the queued ``/undo`` says so
    and changes nothing (an ``/undo`` typed when idle would take back turn 1's edit, which the
    person did not type about); ``/undo`` sent again then takes back turn 1's, as asked."""
    notes = rig.workspace / "notes.txt"
    app, held = held_at(rig, [EDIT, {"text": "one"}, {"text": "only talk"}], 3)

    async def body(pilot: Any) -> None:
        await second_turn_held(pilot, held[0])
        await type_and_send(pilot, "/undo")
        held[0].release.set()
        refused = "Not undone: turn 2, which ran when you typed /undo, changed no file"
        await settle(pilot, lambda: refused in flat(app))
        await idle(pilot)
        assert "Send /undo again to take back turn 1's edits." in flat(app)
        assert notes.read_text() == "alpha\nBETA\ngamma\n"
        await type_and_send(pilot, "/undo")
        await settle(pilot, lambda: "Undid turn 1: restored notes.txt" in flat(app))
        await idle(pilot)
        assert notes.read_text() == "alpha\nbeta\ngamma\n"

    run(app, body)


def test_what_is_queued_runs_in_the_order_typed(rig: Rig):
    """A prompt queued during turn 1, then ``/undo``: the composer queues one draft, so
    ``/undo`` stays in the box (said so), unsent; the prompt runs as turn 2 when turn 1 ends,
    and nothing is undone before it — the ``/undo`` never jumps ahead of the prompt typed
    first."""
    notes = rig.workspace / "notes.txt"
    app, held = held_at(rig, [EDIT, {"text": "one"}, {"text": "two"}], 1)

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.value = "capitalise beta"
        await pilot.press("enter")
        await settle(pilot, lambda: app.running and held[0].calls == 1)
        await type_and_send(pilot, "second prompt")
        assert box.queued == "second prompt"
        await type_and_send(pilot, "/undo")
        assert box.queued == "second prompt" and box.value == "/undo"
        held[0].release.set()
        await settle(pilot, lambda: "two" in flat(app))
        await idle(pilot)
        assert box.value == "/undo" and box.queued is None
        assert "Undid" not in flat(app) and notes.read_text() == "alpha\nBETA\ngamma\n"

    run(app, body)
