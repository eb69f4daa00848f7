"""``Agent.waiting_since`` and the notice the faces build from it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from dsh.agent.waiting import waiting_notice
from dsh.events import Event
from dsh.llm.types import Finish, ModelRequest, StreamEvent, TextDelta
from tests.agent.conftest import Harness


def test_the_notice_appears_after_a_second_and_counts_whole_seconds():
    assert waiting_notice(None, 100.0) is None
    assert waiting_notice(100.0, 100.0) is None
    assert waiting_notice(100.0, 100.99) is None
    assert waiting_notice(100.0, 101.0) == "waiting for the model (1 s)"
    assert waiting_notice(100.0, 130.7) == "waiting for the model (30 s)"


class _Gated:
    name = "gated"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.started.set()
        await self.release.wait()
        yield TextDelta("hi")
        yield Finish("stop")


def test_waiting_since_is_set_while_the_call_is_silent_and_cleared_by_its_first_event(
    harness: Harness,
):
    agent = harness.agent([])
    gated = _Gated()
    agent.provider = gated
    seen: list[float | None] = []
    agent.on_stream = lambda event: seen.append(agent.waiting_since)

    async def main() -> None:
        assert agent.waiting_since is None
        turn = asyncio.create_task(agent.run_turn("hello"))
        await gated.started.wait()
        since = agent.waiting_since
        assert since is not None and since <= asyncio.get_running_loop().time()
        gated.release.set()
        await turn

    asyncio.run(main())
    assert seen == [None, None]  # cleared before the first event reached the listener
    assert agent.waiting_since is None
