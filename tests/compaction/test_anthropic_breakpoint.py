"""Anthropic: a cache breakpoint at the end of the frozen stub region (issue 12 item 6), so
after a pass the unchanged stubs are read at 0.1× instead of written again at 1.25×."""

from __future__ import annotations

from dsh.compaction.base import checkpoint_message
from dsh.llm.anthropic_wire import stub_region_end, to_wire_messages
from tests.helpers import assistant_message, user_message


def _marks(wire) -> list[str]:
    return [
        block.get("text", "")
        for message in wire
        for block in message["content"]
        if "cache_control" in block
    ]


def test_the_last_stub_and_the_last_block_carry_breakpoints():
    messages = [
        checkpoint_message("stub one", "p1-1"),
        checkpoint_message("stub two", "p1-2"),
        checkpoint_message("the state", "p1-3"),
        user_message("next question"),
        assistant_message("an answer"),
    ]
    assert stub_region_end(messages) == 1
    wire = to_wire_messages(messages)
    assert _marks(wire) == ["stub two", "an answer"]
    # the checkpoints and the prompt merge into one user message; the mark sits on its block
    assert wire[0]["content"][1] == {
        "type": "text",
        "text": "stub two",
        "cache_control": {"type": "ephemeral"},
    }


def test_no_stub_region_means_no_extra_breakpoint():
    basic = [checkpoint_message("summary", "p1-1"), user_message("q"), assistant_message("a")]
    assert stub_region_end(basic) is None
    assert _marks(to_wire_messages(basic)) == ["a"]
    plain = [user_message("q")]
    assert stub_region_end(plain) is None and _marks(to_wire_messages(plain)) == ["q"]
