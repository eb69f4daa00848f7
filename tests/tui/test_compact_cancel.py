"""A ``/compact`` cancelled in the terminal UI answers its ``command/run`` (esc, and quitting)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from dsh.events import CompactionStartEvent, Event, event_type_of
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui import DshApp
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of


class SummaryNeverComes:
    """The scripted conversation; a summary request (``purpose = compaction``) hangs."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose == "compaction":
            await asyncio.Event().wait()
        async for event in self.inner.stream(request, history=history):
            yield event


def compacting_app(rig: Rig) -> DshApp:
    script = [{"text": f"answer {i} " + "words " * 80} for i in range(4)]
    return rig.app(
        script, wrap_provider=SummaryNeverComes, retain_tokens=60, summarizer="slow-summariser"
    )


async def start_a_compact_that_hangs(pilot: Any) -> Session:
    app = pilot.app
    for i in range(4):
        await run_prompt(pilot, f"question {i}")
    await submit(pilot, "/compact")
    session = app.controller.session
    await settle(pilot, lambda: any(isinstance(e, CompactionStartEvent) for e in session.events))
    assert app.controller.busy == "compacting"
    return session


def last_command(store: JsonlStore, session_id: str) -> list[tuple[str, Any]]:
    events = Session.open(store, session_id).events
    tail = [
        e for e in events if event_type_of(e) in ("command/run", "compaction/end", "command/done")
    ]
    return [(event_type_of(e), e.data) for e in tail[-3:]]


def assert_closed_as_cancelled(store: JsonlStore, session_id: str) -> None:
    (run_, run_data), (end, end_data), (done, done_data) = last_command(store, session_id)
    assert (run_, end, done) == ("command/run", "compaction/end", "command/done")
    assert end_data.error == "cancelled"
    assert done_data.command_id == run_data.command_id
    assert (done_data.ok, done_data.text) == (False, "Compaction cancelled.")


def test_esc_cancels_a_running_compact_and_its_command_is_answered(rig: Rig):
    app = compacting_app(rig)
    ids: list[str] = []

    async def body(pilot: Any) -> None:
        session = await start_a_compact_that_hangs(pilot)
        ids.append(session.id)
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)
        await pilot.pause()
        assert app.controller.busy is None
        assert "Compaction cancelled." in text_of(app)

    run(app, body)
    assert_closed_as_cancelled(rig.store, ids[0])


def test_the_status_bar_says_a_running_compact_once_with_the_key_that_cancels_it(rig: Rig):
    """The bar showed ``compacting… · compacting · esc cancels`` (the pass's progress and the
    work's name): the progress alone now says it, then the key, which does cancel it."""
    app = compacting_app(rig)
    shown: list[str] = []

    async def body(pilot: Any) -> None:
        await start_a_compact_that_hangs(pilot)
        await settle(pilot, lambda: app.status_bar.info.compaction is not None)
        shown.append(app.status_bar.render().plain)
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)

    run(app, body)
    (line,) = shown
    assert line.endswith(" · compacting… · esc cancels"), line
    assert line.count("compacting") == 1, line


@pytest.mark.usefixtures("patient_quit")
def test_quitting_during_a_compact_answers_its_command(rig: Rig):
    app = compacting_app(rig)
    ids: list[str] = []

    async def body(pilot: Any) -> None:
        ids.append((await start_a_compact_that_hangs(pilot)).id)
        await pilot.press("ctrl+q")
        await pilot.pause()

    run(app, body)
    assert_closed_as_cancelled(rig.store, ids[0])
