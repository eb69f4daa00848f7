"""A cancelled turn logs why it was cancelled: ``turn/end``'s error and its cancelled calls'
results name the stop signal (a CI timeout's SIGTERM, a closed terminal's SIGHUP), not the
user, wherever the cancel lands (docs/architecture.md, "A cancel keeps what a command printed,
and says why")."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from dsh.agent import Agent
from dsh.agent.stop_signals import cancelled_by
from dsh.llm.types import TextDelta
from tests.agent.cancelling import (
    PRINTS_THEN_SLEEPS,
    bash_call,
    cancel_once_printed,
    result_text,
    results,
    turn_end,
)
from tests.agent.conftest import Harness, run

SIGTERM_REASON = cancelled_by(signal.SIGTERM)


def test_a_turn_a_stop_signal_cancelled_names_the_signal_not_the_user(harness: Harness):
    agent = harness.agent([{"toolCalls": [bash_call(PRINTS_THEN_SLEEPS)]}])
    result = cancel_once_printed(harness, agent, reason=SIGTERM_REASON)
    assert result.reason == "aborted" and result.error == SIGTERM_REASON
    assert turn_end(harness).data.reason.error == SIGTERM_REASON
    (answer,) = results(harness)
    assert result_text(answer).startswith(f"[CANCELLED] this tool call was {SIGTERM_REASON}")


def test_the_first_cancels_reason_is_the_one_logged(harness: Harness):
    agent = harness.agent([{"toolCalls": [bash_call(PRINTS_THEN_SLEEPS)]}])
    original = agent.cancel

    def cancel_twice(reason: str = "") -> None:
        original(SIGTERM_REASON)
        original(cancelled_by(signal.SIGHUP))

    agent.cancel = cancel_twice  # type: ignore[method-assign]
    cancel_once_printed(harness, agent)
    assert turn_end(harness).data.reason.error == SIGTERM_REASON


def test_a_turn_cancelled_mid_stream_by_a_signal_names_it(harness: Harness):
    script = [{"text": "partial answer " * 4, "chunkDelayMs": 3_600_000}]
    agent = harness.agent(script, chunk_size=8)

    async def scenario() -> Any:
        streamed = asyncio.Event()
        agent.on_stream = lambda event: streamed.set() if isinstance(event, TextDelta) else None
        task = asyncio.create_task(agent.run_turn("long task"))
        await asyncio.wait_for(streamed.wait(), 30)
        agent.cancel(cancelled_by(signal.SIGHUP))
        return await asyncio.wait_for(task, 30)

    result = run(scenario())
    assert result.reason == "aborted"
    assert turn_end(harness).data.reason.error == "cancelled by SIGHUP (dsh's terminal was closed)"


def test_a_turn_cancelled_before_its_first_step_names_the_signal(harness: Harness):
    agent = harness.agent([{"text": "never"}])

    async def cancels(agent_: Agent, turn: int) -> None:
        agent_.cancel(SIGTERM_REASON)
        await asyncio.Event().wait()  # a compaction that would run on

    agent.pre_step_hooks.append(cancels)
    assert run(agent.run_turn("one")).error == SIGTERM_REASON
    assert turn_end(harness).data.reason.error == SIGTERM_REASON


def test_ctrl_c_is_the_user_and_a_stop_signal_is_named_with_what_sends_it():
    assert cancelled_by(signal.SIGINT) == "cancelled by the user"
    assert cancelled_by(signal.SIGTERM) == (
        "cancelled by SIGTERM (dsh was told to terminate: a timeout, a cancelled CI job, a kill)"
    )
    assert cancelled_by(signal.SIGHUP) == "cancelled by SIGHUP (dsh's terminal was closed)"
    assert cancelled_by(signal.SIGUSR1) == "cancelled by SIGUSR1"
