"""Cancelling a turn while a real ``bash`` command runs, with the scripted provider.

The command prints, then writes a marker file and sleeps; ``cancel_once_printed`` cancels once
the marker is there, so the printed lines are in the pipe by then, whether or not dsh has read
them yet."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.agent import Agent
from dsh.events import TextBlock, ToolResultEvent, TurnEndEvent
from tests.agent.conftest import Harness, run
from tests.agent.test_loop import until

PRINTS_THEN_SLEEPS = (
    "for i in 1 2 3; do echo line $i; done; sleep 60 & echo $! > sleeper.pid; touch printed; wait"
)


def bash_call(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def cancel_once_printed(harness: Harness, agent: Agent, *, reason: str | None = None) -> Any:
    """Run a turn, cancel it (with ``reason``, else as the user) once the command wrote its
    marker, and return how it ended."""
    printed = harness.workspace / "printed"

    async def scenario() -> Any:
        task = asyncio.create_task(agent.run_turn("run it"))
        await until(printed.exists, "the command's marker", timeout=120)
        if reason is None:
            agent.cancel()
        else:
            agent.cancel(reason)
        return await asyncio.wait_for(task, 120)

    return run(scenario())


def results(harness: Harness) -> list[ToolResultEvent]:
    return [e for e in harness.session.events if isinstance(e, ToolResultEvent)]


def result_text(event: ToolResultEvent) -> str:
    block = event.data.message.content[0]
    text = block.content[0]  # type: ignore[union-attr]
    assert isinstance(text, TextBlock)
    return text.text


def turn_end(harness: Harness) -> TurnEndEvent:
    end = harness.session.events[-1]
    assert isinstance(end, TurnEndEvent)
    return end
