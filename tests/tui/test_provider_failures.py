"""A reply cut short by a provider failure stays on screen, marked, live and after reopening."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from dsh.errors import ProviderError
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent, TextDelta
from dsh.tui.no_key import NoKeyScreen
from tests.tui.conftest import SIZE, Rig, settle, submit


class _Dropping:
    """Streams some text, then fails as a killed server does."""

    name = "scripted"

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        yield TextDelta("Half of the")
        yield TextDelta(" answer")
        raise ProviderError("CONNECTION", "peer closed the connection", retryable=True)


def _lines(rig: Rig, **options) -> list[str]:
    app = rig.app([], **options)
    out: list[str] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready or isinstance(app.screen, NoKeyScreen))
            if options.get("resume") is None:
                await submit(pilot, "go")
                await settle(pilot, lambda: not app.running and app.status_bar.info.busy is None)
            out.extend(app.transcript.rendered_lines())
            rig.session_id = app.controller.session.id  # type: ignore[union-attr]

    asyncio.run(main())
    return out


def test_a_cut_reply_is_shown_with_its_mark_live_and_after_reopening(rig: Rig):
    def drop(_: ScriptedProvider) -> _Dropping:
        return _Dropping()

    live = _lines(rig, wrap_provider=drop)
    assert "● Half of the answer" in live
    assert "  (the reply was cut off: CONNECTION)" in live
    reopened = _lines(rig, resume=rig.session_id)
    cut = live.index("● Half of the answer")
    assert reopened[: cut + 2] == live[: cut + 2]
