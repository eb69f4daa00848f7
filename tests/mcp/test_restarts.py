"""A server that crashes is restarted when a call needs it: bounded, never repeating a call that
may have run, with one warning per restart, and no process of any run left after close."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.mcp.hub import McpHub
from dsh.tools.mcp.supervisor import MAX_RESTARTS
from dsh.tools.secrets import SecretPolicy
from tests.mcp.conftest import process_is_gone, server, started_pids, wait_until

CTX = ToolContext(workspace=Path("/"), session_id="s", call_id="c")


class Running:
    """A started hub over the test server, which records each of its starts' pid."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.starts = tmp_path / "starts"
        test = server(*args, env={"MCP_TEST_STARTS_FILE": str(self.starts)})
        self.hub = McpHub(
            {"test": test}, workspace=tmp_path, secrets=SecretPolicy.from_environment({})
        )
        self.hub.start()

    def call(self, tool: str, **args: object) -> ToolOutput:
        found = next(t for t in self.hub.tools if t.name == f"mcp__test__{tool}")
        return asyncio.run(found.run(dict(args), CTX))

    @property
    def pids(self) -> list[int]:
        return started_pids(self.starts)

    def kill(self) -> None:
        """Kill the current run's program from outside and wait until the hub saw it go."""
        os.kill(self.pids[-1], signal.SIGKILL)
        wait_until(lambda: not self.hub.running("test"), "the hub to see the server gone")


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    started = Running(tmp_path)
    yield started
    started.hub.close()
    assert all(process_is_gone(pid) for pid in started.pids)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "dsh.tools.mcp"]


def test_a_server_killed_between_calls_is_restarted_and_the_call_runs(running, caplog):
    assert running.call("add", a=1, b=2).text == "3"
    first = running.pids[0]
    with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
        running.kill()
        assert running.call("add", a=2, b=3) == ToolOutput("5")  # sent to the new run
        assert running.call("add", a=3, b=4) == ToolOutput("7")
    assert len(running.pids) == 2 and process_is_gone(first)
    (warning,) = warnings(caplog)  # one warning for the restart, none for the calls
    assert warning.startswith("MCP server test crashed (its program exited or closed its output)")
    assert warning.endswith("and was restarted (restart 1 of at most 3)")


def test_calls_at_once_after_a_crash_restart_the_server_once(running):
    running.kill()

    async def both() -> list[ToolOutput]:
        add = next(t for t in running.hub.tools if t.name == "mcp__test__add")
        return list(await asyncio.gather(*(add.run({"a": n, "b": 1}, CTX) for n in range(3))))

    assert [out.text for out in asyncio.run(both())] == ["1", "2", "3"]
    assert len(running.pids) == 2


def test_a_crash_during_a_call_is_an_error_the_call_is_not_repeated_and_the_next_call_runs(
    running, caplog
):
    with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
        crashed = running.call("crash")
    assert crashed.is_error and crashed.code == "MCP_ERROR"
    assert crashed.text.startswith("crash (MCP server test): the server crashed during the call")
    assert "may or may not have taken effect" in crashed.text
    assert "dsh restarted the server but did not repeat the call" in crashed.text
    assert len(running.pids) == 2  # a repeated call would have crashed the new run too
    assert running.call("add", a=1, b=1).text == "2"
    assert len(warnings(caplog)) == 1


def test_a_server_that_crashes_four_times_is_down_with_a_clear_error(running, caplog):
    with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
        answers = [running.call("crash") for _ in range(MAX_RESTARTS + 1)]
        after = [running.call("add", a=1, b=1) for _ in range(3)]
    assert all("dsh restarted the server" in a.text for a in answers[:MAX_RESTARTS])
    down = (
        "MCP server test crashed 4 times and dsh restarted it 3 times, the most it does while "
        "it runs; its tools are unavailable until dsh is started again"
    )
    assert answers[-1].is_error and answers[-1].text.endswith(down)
    assert "crashed during the call" in answers[-1].text
    for answer in after:
        assert answer.is_error and answer.code == "MCP_ERROR"
        assert answer.text == f"add (MCP server test) was not run: {down}"
    assert len(running.pids) == 1 + MAX_RESTARTS  # no restart after the third
    said = warnings(caplog)
    restarted = [w for w in said if "was restarted" in w]
    assert [w[-len("(restart 1 of at most 3)") :] for w in restarted] == [
        f"(restart {n} of at most 3)" for n in (1, 2, 3)
    ]
    gave_up = [w for w in said if "the most it does" in w]
    assert len(gave_up) == 1 and len(said) == 4  # said once, however many calls follow


def test_a_tool_the_restarted_server_no_longer_lists_answers_with_an_error(tmp_path, caplog):
    running = Running(tmp_path, "--drop-on-restart", "add")
    try:
        offered = [t.name for t in running.hub.tools]
        with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
            running.kill()
            gone = running.call("add", a=1, b=2)
        assert gone.is_error and gone.text == (
            "add (MCP server test) was not run: the server no longer offers it since dsh "
            "restarted it"
        )
        assert running.call("env", name="NOT_SET_ANYWHERE").text == "(unset)"
        assert [t.name for t in running.hub.tools] == offered  # the model's list stays
        (warning,) = warnings(caplog)
        assert "it no longer offers add (calls of them answer with an error)" in warning
    finally:
        running.hub.close()
    assert all(process_is_gone(pid) for pid in running.pids)


def test_a_restart_that_fails_says_why_and_counts_against_the_bound(tmp_path, caplog):
    running = Running(tmp_path, "--crash-on-restart")
    try:
        with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
            crashed = running.call("crash")
            again = [running.call("add", a=1, b=1) for _ in range(MAX_RESTARTS)]
        assert "the server crashed and did not start again" in crashed.text
        assert "this server crashes at start" in crashed.text  # its stderr
        assert "did not start again" in again[0].text and "did not start again" in again[1].text
        assert again[-1].text.endswith("its tools are unavailable until dsh is started again")
        assert "crashed once and dsh tried to restart it 3 times" in again[-1].text
        assert len(running.pids) == 1 + MAX_RESTARTS
        assert sum("did not start again" in w for w in warnings(caplog)) == MAX_RESTARTS
    finally:
        running.hub.close()
    assert all(process_is_gone(pid) for pid in running.pids)


def test_closing_the_hub_ends_every_run_s_process(running):
    running.kill()
    assert running.call("add", a=1, b=1).text == "2"
    running.call("crash")
    assert running.call("add", a=1, b=1).text == "2"
    pids = running.pids
    assert len(pids) == 3 and not process_is_gone(pids[-1])
    running.hub.close()
    assert all(process_is_gone(pid) for pid in pids)
    out = running.call("add", a=1, b=1)
    assert out.is_error and "dsh closed it" in out.text
