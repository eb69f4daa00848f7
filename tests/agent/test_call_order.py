"""The order a reply's tool calls run in: read-only calls together, anything else in turn."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh.agent.call_order import call_order
from dsh.events import ToolCallBlock

READS = {"read_file", "grep", "history_search"}


def _calls(names: list[str]) -> list[ToolCallBlock]:
    return [ToolCallBlock(id=f"c{i}", name=name, arguments="{}") for i, name in enumerate(names)]


def _waits_for(order: list[list[int]]) -> list[set[int]]:
    """Every earlier call each call waits for, directly or through another."""
    closure: list[set[int]] = []
    for after in order:
        reach = set(after)
        for index in after:
            reach |= closure[index]
        closure.append(reach)
    return closure


def test_reads_between_two_writes_run_together_after_the_first():
    names = ["read_file", "grep", "write_file", "read_file", "history_search", "bash"]
    order = call_order(_calls(names), lambda c: c.name in READS)
    assert order == [[], [], [0, 1], [2], [2], [0, 1, 2, 3, 4]]


@given(
    st.lists(st.sampled_from(["read_file", "grep", "write_file", "bash", "todo_write", "mcp__x"]))
)
def test_a_call_follows_an_earlier_one_unless_only_reads_span_them(names):
    """A write, a command, a todo update or an MCP call follows every earlier call and precedes
    every later one (the model's order); two reads with no such call between them never wait
    for each other."""
    order = call_order(_calls(names), lambda c: c.name in READS)
    waits = _waits_for(order)
    for later in range(len(names)):
        for earlier in range(later):
            free = all(n in READS for n in names[earlier : later + 1])
            assert (earlier in waits[later]) == (not free), (names, earlier, later)
