"""Wiring compaction into the loop: the pressure check before each step (counting what the step
is about to log: a turn's prompt at its first step), and overflow recovery inside the open
step."""

from __future__ import annotations

from dsh.agent.loop import Agent, OverflowHandler, PreStepHook
from dsh.compaction import CompactionEngine
from dsh.config import DEFAULT_CONTEXT_WINDOW


def compaction_hooks(engine: CompactionEngine) -> tuple[PreStepHook, OverflowHandler]:
    async def pre_step(agent: Agent, turn: int) -> None:
        window = agent.config.context_window or DEFAULT_CONTEXT_WINDOW
        await engine.compact_if_needed(
            "pressure", turn=turn, window=window, incoming=agent.incoming_tokens
        )

    async def on_overflow(agent: Agent, turn: int, step: int) -> bool:
        before = agent.session.replace_generation
        window = agent.config.context_window or DEFAULT_CONTEXT_WINDOW
        await engine.compact_if_needed("overflow", turn=turn, window=window)
        return agent.session.replace_generation != before

    return pre_step, on_overflow
