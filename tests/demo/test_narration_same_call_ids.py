"""``dsh demo``'s narration when replies reuse ``call_0``: a result is previewed as the call it
answers, a recall call's or another tool's."""

from __future__ import annotations

from dsh.demo.narration import Narrator
from dsh.events import AssistantMessage, ToolCall, ToolResult
from dsh.recall import HISTORY_SEARCH
from dsh.store import MemoryStore
from tests.helpers import assistant_message, new_session, tool_call_block, tool_result_message


def test_a_later_call_0_result_is_previewed_as_its_own_tool_not_as_an_earlier_recall():
    session = new_session(MemoryStore())
    lines: list[str] = []
    session.subscribe(Narrator(lines.append))
    replies = [
        (HISTORY_SEARCH, "searched 2 checkpoints\n[c12 #msg 3] the port is 8080"),
        ("bash", "line one\nline two\nline three"),
    ]
    for step, (name, output) in enumerate(replies, start=1):
        call = tool_call_block("call_0", name, "{}")
        session.append(
            AssistantMessage(turn=1, step=step, message=assistant_message(tool_calls=[call]))
        )
        session.append(ToolCall(turn=1, step=step, call_id="call_0", name=name, arguments="{}"))
        session.append(ToolResult(turn=1, step=step, message=tool_result_message("call_0", output)))
    previews = [line.strip() for line in lines if line.strip().startswith("✓")]
    assert previews == ["✓ [c12 #msg 3] the port is 8080", "✓ line one … line three (3 lines)"]
