"""The terminal UI's bell (``ui.notify``): it rings when an approval prompt starts waiting, and
when a turn that ran at least ``ui.notify_after_seconds`` ends; not for a short turn, not for
one you cancelled, never with ``notify = "off"``. The turn is timed by the app's clock, which
the test moves while the model "thinks"."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from dsh.config import Settings, UiSettings
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.tui.app import DshApp
from tests.tui.conftest import ManualClock, Rig, answer_approval, run_prompt, settle, submit
from tests.tui.test_pilot import run

CALL = {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}


class Thinking:
    """The scripted model, taking ``seconds`` of the app's clock before each reply."""

    def __init__(self, inner: ScriptedProvider, seconds: float) -> None:
        self.inner, self.seconds, self.name = inner, seconds, inner.name
        self.clock: ManualClock | None = None

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        if self.clock is not None:
            self.clock.advance(self.seconds)
        async for event in self.inner.stream(request, history=history):
            yield event


def app_thinking(rig: Rig, script: list[dict[str, Any]], seconds: float, **kw: Any) -> DshApp:
    made: list[Thinking] = []

    def wrap(inner: ScriptedProvider) -> Thinking:
        made.append(Thinking(inner, seconds))
        return made[0]

    app = rig.app(script, wrap_provider=wrap, **kw)
    assert isinstance(app.clock, ManualClock)
    made[0].clock = app.clock
    return app


def bells(app: DshApp) -> list[int]:
    """Count the app's bells (what ``App.bell`` would send the terminal)."""
    rung: list[int] = []
    app.bell = lambda: rung.append(1)  # type: ignore[method-assign]
    return rung


def test_a_long_turn_rings_when_it_ends_and_a_short_one_does_not(rig: Rig) -> None:
    app = app_thinking(rig, [{"text": "slow"}], 31.0)
    rung = bells(app)

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "think hard")
        assert app.work.notifier.rung == ["turn"] and rung == [1]

    run(app, body)
    quick = app_thinking(rig, [{"text": "quick"}], 29.0)
    quiet = bells(quick)

    async def short(pilot: Any) -> None:
        await run_prompt(pilot, "a quick one")

    run(quick, short)
    assert quiet == [] and quick.work.notifier.rung == []


def test_an_approval_rings_as_it_starts_waiting(rig: Rig) -> None:
    app = rig.app([CALL, {"text": "done"}], approval="ask")
    rung = bells(app)

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        await answer_approval(pilot, "o")
        await settle(pilot, lambda: not app.running)
        assert app.work.notifier.rung == ["approval"] and rung == [1]  # the turn was short

    run(app, body)


def test_a_cancelled_long_turn_does_not_ring(rig: Rig) -> None:
    app = rig.app([{"text": "never", "delayMs": 600_000}])
    rung = bells(app)

    async def body(pilot: Any) -> None:
        await submit(pilot, "a long wait")
        await settle(pilot, lambda: app.controller.waiting_since is not None)
        app.clock.advance(600)  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)
        assert app.work.notifier.rung == [] and rung == []

    run(app, body)


def test_notify_off_rings_nothing(rig: Rig) -> None:
    plain = rig.settings

    def settings(*args: Any, **kwargs: Any) -> Settings:
        made = plain(*args, **kwargs)
        return Settings(compaction=made.compaction, tools=made.tools, ui=UiSettings(notify="off"))

    rig.settings = settings  # type: ignore[method-assign]
    app = app_thinking(rig, [CALL, {"text": "done"}], 100.0, approval="ask")
    rung = bells(app)

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        await answer_approval(pilot, "o")
        await settle(pilot, lambda: not app.running)

    run(app, body)
    assert rung == [] and app.work.notifier.rung == []
