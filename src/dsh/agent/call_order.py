"""In which order a reply's tool calls run.

A model writes a reply's calls in the order it means them ("read the file, then overwrite
it"), and dsh used to start them all at once: a read and a write of one file in one reply
raced, and the read could see the file already emptied. Read-only calls still run together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dsh.events import ToolCallBlock


def call_order(
    calls: Sequence[ToolCallBlock], read_only: Callable[[ToolCallBlock], bool]
) -> list[list[int]]:
    """For each call, the indices of the earlier calls it must wait for: a model writes a
    reply's calls in the order it means them, so a call that may change something (a write, a
    command, a todo update, an MCP tool, an unknown tool) waits for every call before it and
    every call after it waits for it; read-only calls between two such calls run together."""
    order: list[list[int]] = []
    barrier: int | None = None
    for index, call in enumerate(calls):
        if read_only(call):
            order.append([] if barrier is None else [barrier])
        else:
            order.append(list(range(index)))
            barrier = index
    return order
