"""The status bar says "waiting for the model (N s)" while a model call is silent, and stops
saying it once the reply starts. The provider is held by an event, so nothing here races."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.tui.no_key import NoKeyScreen
from tests.tui.conftest import SIZE, Rig, settle, submit


class _Held:
    """Serves the scripted replies, but only after ``release`` is set (a slow prefill)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name = inner, inner.name
        self.release = asyncio.Event()

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        await self.release.wait()
        async for event in self.inner.stream(request, history=history):
            yield event


def test_a_silent_model_call_shows_how_long_it_has_been_waiting(rig: Rig):
    held: list[_Held] = []

    def wrap(inner: ScriptedProvider) -> _Held:
        held.append(_Held(inner))
        return held[0]

    app = rig.app([{"text": "At last."}], wrap_provider=wrap)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready or isinstance(app.screen, NoKeyScreen))
            await submit(pilot, "slow one")
            busy = lambda: app.status_bar.info.busy or ""  # noqa: E731
            await settle(pilot, lambda: busy().startswith("waiting for the model ("))
            assert busy().endswith(" s)")
            await settle(pilot, lambda: app.status_bar.render().plain.endswith(" s) · esc cancels"))
            held[0].release.set()
            await settle(pilot, lambda: app.status_bar.info.busy is None)
            await settle(pilot, lambda: not app.running)
            assert "At last." in "\n".join(app.transcript.rendered_lines())
            assert "waiting" not in (app.status_bar.info.busy or "")

    asyncio.run(main())
