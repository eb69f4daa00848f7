"""The plain-text live display of ``dsh run`` on a terminal and in a pipe."""

from __future__ import annotations

from dsh.cli.live import LiveDisplay
from dsh.events import ToolCall, ToolCallEvent, ToolResult, ToolResultEvent
from dsh.llm.types import TextDelta
from tests.helpers import tool_result_message


def test_on_a_terminal_text_streams_and_tool_activity_goes_to_stderr(capsys):
    live = LiveDisplay(streaming=True)
    for piece in ("Hel", "lo"):
        live.on_stream(TextDelta(piece))
    call = ToolCall(turn=1, step=1, call_id="c1", name="bash", arguments='{"command":"ls"}')
    live.on_event(ToolCallEvent(seq=5, time=0, data=call))
    result = ToolResult(turn=1, step=1, message=tool_result_message("c1", "a.txt\nb.txt"))
    live.on_event(ToolResultEvent(seq=6, time=0, data=result, surface_op="append"))
    live.finish_turn("Hello")
    out, err = capsys.readouterr()
    assert out == "Hello\n"
    assert '→ bash({"command":"ls"})' in err and "✓ a.txt b.txt" in err


def test_in_a_pipe_only_the_final_answer_is_printed(capsys):
    live = LiveDisplay(streaming=False)
    live.on_stream(TextDelta("partial"))
    live.finish_turn("the answer")
    out, err = capsys.readouterr()
    assert out == "the answer\n" and err == ""


def test_a_compaction_pass_is_announced_on_the_terminal(capsys):
    from dsh.events import CompactionPlan, CompactionPlanEvent, RegionText

    live = LiveDisplay(streaming=True)
    region = RegionText(kind="state", shadowed_seqs=(1, 2), summary="s")
    live.on_event(
        CompactionPlanEvent(seq=9, time=0, data=CompactionPlan(pass_id="p", regions=(region,)))
    )
    assert "compacting earlier context (1 checkpoint(s))" in capsys.readouterr().err


def test_the_waiting_notice_is_rewritten_in_place_and_erased_by_the_reply(capsys):
    live = LiveDisplay(streaming=True, notices=True)
    live.show_waiting("waiting for the model (1 s)")
    live.show_waiting("waiting for the model (1 s)")  # unchanged: not written again
    live.show_waiting("waiting for the model (2 s)")
    live.on_stream(TextDelta("Hi"))
    live.finish_turn("Hi")
    out, err = capsys.readouterr()
    assert out == "Hi\n"
    assert err == ("\r\x1b[Kwaiting for the model (1 s)\r\x1b[Kwaiting for the model (2 s)\r\x1b[K")


def test_without_a_terminal_on_stderr_no_notice_is_written(capsys):
    live = LiveDisplay(streaming=False, notices=False)
    live.show_waiting("waiting for the model (5 s)")
    live.finish_turn("answer")
    assert capsys.readouterr() == ("answer\n", "")
