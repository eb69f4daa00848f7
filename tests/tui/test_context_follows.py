"""The status bar's context figure follows the surface as it grows during a turn: the prompt
with its ``@path`` attachment, and a tool result, count while the request carrying them is at
the model (it used to be measured again only at a reply, a pass or the turn's end, so a request
at 88% of the window showed far less). The model is held by an event, so the test looks at the
bar while the request waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from dsh.events import Event, ToolResultEvent
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.surface.tokens import message_tokens, text_tokens
from dsh.tui.approval import ApprovalScreen
from tests.tui.conftest import Rig, answer_approval, settle, status_at_rest, submit
from tests.tui.test_pilot import logged, run

BIG = "".join(f"row {n}: {'word ' * 12}\n" for n in range(600))
"""A file of ~10k tokens."""


class HeldCall:
    """The scripted replies, model call number ``held`` (1-based) held until ``release``."""

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


def held_app(rig: Rig, script: list[dict[str, Any]], held: int, **kw: Any) -> tuple[Any, Any]:
    wrapped: list[HeldCall] = []

    def wrap(inner: ScriptedProvider) -> HeldCall:
        wrapped.append(HeldCall(inner, held))
        return wrapped[0]

    return rig.app(script, wrap_provider=wrap, **kw), wrapped


async def waiting_at_the_model(pilot: Any, held: HeldCall) -> None:
    app = pilot.app
    await settle(pilot, lambda: held.calls == held.held and app.controller.waiting_since)
    await settle(pilot, lambda: app.status_settled)


def test_the_figure_counts_an_attachment_while_its_request_is_at_the_model(rig: Rig):
    (rig.workspace / "big.txt").write_text(BIG)
    app, wrapped = held_app(
        rig, [{"text": "read it"}], held=1, agent_config={"attach_mentions": True}
    )

    async def body(pilot: Any) -> None:
        before = app.status_bar.info.context_tokens
        await submit(pilot, "summarise @big.txt")
        await waiting_at_the_model(pilot, wrapped[0])
        shown = app.status_bar.info.context_tokens
        assert shown - before >= text_tokens(BIG) * 0.9
        assert shown == app.controller.context_tokens()
        wrapped[0].release.set()
        await settle(pilot, lambda: not app.running and status_at_rest(app))

    run(app, body)


def test_the_figure_counts_a_tool_result_before_the_next_request(rig: Rig):
    """The call is asked about, so the reply's own re-measure is over before the result is
    logged: only the result's can bring it in."""
    (rig.workspace / "big.txt").write_text(BIG)
    script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "cat big.txt"}}]},
        {"text": "done"},
    ]
    app, wrapped = held_app(rig, script, held=2, approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "show me big.txt")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.status_settled)
        before = app.status_bar.info.context_tokens
        await answer_approval(pilot, "enter")
        await waiting_at_the_model(pilot, wrapped[0])
        [result] = [e for e in logged(app) if isinstance(e, ToolResultEvent)]
        assert message_tokens(result.data.message) > 5000  # the file, not an error
        shown = app.status_bar.info.context_tokens
        assert shown - before >= message_tokens(result.data.message)
        assert shown == app.controller.context_tokens()
        wrapped[0].release.set()
        await settle(pilot, lambda: not app.running and status_at_rest(app))

    run(app, body)
