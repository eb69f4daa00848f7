"""The lines a running ``bash`` call prints reach the faces' listeners while it runs, masked,
keyed by its call's seq, and end when its result is logged; nothing of them is logged
(``dsh.agent.tool_progress``). The real loop, the scripted provider, a real command gated by a
file the test writes."""

from __future__ import annotations

import asyncio
import json

from dsh.agent.tool_progress import RUNNING_OUTPUT, Lines
from dsh.events import ToolCallEvent, ToolResultEvent, encode_event
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tools.secrets import SecretPolicy
from tests.agent.cancelling import bash_call
from tests.agent.conftest import Harness, run
from tests.agent.test_loop import until

SECRET = "sk-progress-0123456789"
COMMAND = f"echo one; echo key {SECRET}; while [ ! -f go ]; do sleep 0.05; done; echo two"


def test_a_running_call_is_told_while_it_runs_and_ends_with_its_result(harness: Harness):
    policy = SecretPolicy(values=(("DEMO_API_KEY", SECRET),))
    agent = harness.agent([{"toolCalls": [bash_call(COMMAND)]}, {"text": "done"}])
    agent.tools = ToolRegistry(default_tools(policy), secrets=policy)
    session = harness.session
    heard: list[tuple[int, Lines, int]] = []

    def listener(session_id: str, lines: dict[int, Lines]) -> None:
        if session_id == session.id:
            heard.extend((seq, shown, len(session.events)) for seq, shown in lines.items())

    stop = RUNNING_OUTPUT.watch(listener)

    async def scenario() -> None:
        turn = asyncio.create_task(agent.run_turn("run it"))
        printed = ("one", "key [masked DEMO_API_KEY]")
        await until(lambda: any(shown == printed for _, shown, _ in heard), "the lines")
        (call,) = [e for e in session.events if isinstance(e, ToolCallEvent)]
        assert heard[-1][0] == call.seq
        assert RUNNING_OUTPUT.lines(session.id) == {call.seq: printed}  # for a page joining
        assert not any(isinstance(e, ToolResultEvent) for e in session.events)
        (harness.workspace / "go").write_text("")
        await asyncio.wait_for(turn, 60)

    try:
        run(scenario())
    finally:
        stop()
    (call,) = [e for e in session.events if isinstance(e, ToolCallEvent)]
    (result,) = [e for e in session.events if isinstance(e, ToolResultEvent)]
    seq, shown, logged = heard[-1]
    assert (seq, shown) == (call.seq, ())  # the tail ended...
    assert logged > result.seq  # ...once the result was in the log
    assert RUNNING_OUTPUT.lines(session.id) == {}
    log = [json.loads(encode_event(e)) for e in harness.reopen().events]
    assert [e["type"] for e in log].count("tool/result") == 1
    assert sum("key [masked DEMO_API_KEY]" in json.dumps(e) for e in log) == 1  # the result's
