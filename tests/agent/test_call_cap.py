"""At most ``tools.max_calls_per_reply`` of one reply's tool calls run (``dsh.agent.call_cap``):
the rest are answered ``TOO_MANY_CALLS`` without running, never offered for approval, every
call keeps its result on the wire, and the person is told once (a real HTTP server on
127.0.0.1 stands in for the provider; a real ``dsh run`` for the default and the warning)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import rebuild_requests
from dsh.config import DEFAULT_MAX_CALLS_PER_REPLY
from dsh.events import ToolCallEvent, ToolResultEvent
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.tools.approval import ApprovalPolicy
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    oa_chunk,
    oa_tool_call,
    oa_usage,
    openai_stream,
    openai_text,
)

DSH = str(Path(sys.executable).with_name("dsh"))


def bash_calls(count: int) -> Canned:
    """One streamed reply asking for ``count`` ``bash`` calls, each appending its number."""
    calls = [
        oa_tool_call(
            n,
            id=f"call_{n}",
            name="bash",
            arguments=json.dumps({"command": f"echo {n} >> ran.txt"}),
        )
        for n in range(count)
    ]
    return openai_stream(
        oa_chunk(tool_calls=calls),
        oa_chunk(finish="tool_calls"),
        oa_chunk(no_choices=True, usage=oa_usage(10, 5)),
    )


def result_text(event: ToolResultEvent) -> str:
    return event.data.message.content[0].content[0].text  # type: ignore[union-attr]


def ran(workspace: Path) -> list[int]:
    path = workspace / "ran.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_calls_past_the_limit_are_answered_not_run_and_every_call_keeps_its_result(
    harness: Harness,
    server: FakeServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
):
    server.queue(bash_calls(12), openai_text("done"))
    agent = harness.agent([], max_calls_per_reply=5)
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    with caplog.at_level(logging.WARNING, logger="dsh"):
        result = run(agent.run_turn("run them"))
    assert result.reason == "completed" and result.text == "done"
    assert ran(harness.workspace) == [0, 1, 2, 3, 4]  # the first five, and no other
    events = harness.session.events
    calls = [e.data.call_id for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert calls == [f"call_{n}" for n in range(12)]
    marks = [e.data.over_limit for e in events if isinstance(e, ToolCallEvent)]
    assert marks == [0] * 5 + [5] * 7  # past the limit, marked so: the transcripts fold them
    assert [e.data.message.source.call_id for e in results] == calls  # type: ignore[union-attr]
    assert [e.data.error for e in results[:5]] == [None] * 5
    assert {e.data.error.code for e in results[5:] if e.data.error} == {"TOO_MANY_CALLS"}
    assert [result_text(e) for e in results[5:]] == [
        "[TOO_MANY_CALLS] not run: your reply asked for 12 tool calls and at most 5 run per "
        "reply (the first 5 ran). Ask for fewer at a time."
    ] * 7
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "the model's reply asked for 12 tool calls: the first 5 ran, the other 7 were not run "
        "(tools.max_calls_per_reply = 5)"
    ]
    # the next request answers every call of the reply, in its order
    wire = server.bodies[1]["messages"]
    answered = [m["tool_call_id"] for m in wire if m["role"] == "tool"]
    asked = [c["id"] for m in wire if m["role"] == "assistant" for c in m.get("tool_calls", ())]
    assert answered == asked == calls
    assert "TOO_MANY_CALLS" in wire[-1]["content"]
    assert len(list(rebuild_requests(harness.reopen().events))) == 2  # the log rebuilds


def test_calls_past_the_limit_are_never_offered_for_approval(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    offered: list[str] = []

    async def approver(name: str, args: dict[str, Any], protected: str | None) -> Any:
        offered.append(args["command"])
        return "once"

    server.queue(bash_calls(6), openai_text("done"))
    agent = harness.agent([], max_calls_per_reply=2)
    agent.policy = ApprovalPolicy("ask", approver=approver)
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    assert run(agent.run_turn("run them")).reason == "completed"
    assert offered == ["echo 0 >> ran.txt", "echo 1 >> ran.txt"]
    assert ran(harness.workspace) == [0, 1]


def test_no_limit_runs_every_call_and_warns_of_nothing(
    harness: Harness,
    server: FakeServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
):
    server.queue(bash_calls(40), openai_text("done"))
    agent = harness.agent([], max_calls_per_reply=0)
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    with caplog.at_level(logging.WARNING, logger="dsh"):
        assert run(agent.run_turn("run them")).reason == "completed"
    assert sorted(ran(harness.workspace)) == list(range(40))
    assert not [r for r in caplog.records if "tools.max_calls_per_reply" in r.getMessage()]


def test_dsh_run_yes_runs_only_the_default_limit_of_a_300_call_reply_and_says_so(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
):
    server.queue(bash_calls(300), openai_text("done"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    url = server.url + "/v1"
    args = ["run", "--yes", "--base-url", url, "--model", "m", "--context-window", "128000"]
    args.append("run them")
    out = subprocess.run(
        [DSH, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "done"
    limit = DEFAULT_MAX_CALLS_PER_REPLY
    assert sorted(ran(tmp_path)) == list(range(limit))
    said = [line for line in out.stderr.splitlines() if not line.startswith("session: ")]
    assert said == [
        f"dsh: warning: the model's reply asked for 300 tool calls: the first {limit} ran, the "
        f"other {300 - limit} were not run (tools.max_calls_per_reply = {limit})"
    ]
    tools = [m for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert len(tools) == 300
    assert sum("[TOO_MANY_CALLS]" in m["content"] for m in tools) == 300 - limit
