"""The plain-text live display of ``dsh run`` on a terminal and in a pipe."""

from __future__ import annotations

from dsh.cli.live import LiveDisplay
from dsh.events import (
    CompactionEnd,
    CompactionEndEvent,
    CompactionPlan,
    CompactionPlanEvent,
    CompactionStart,
    CompactionStartEvent,
    RegionText,
    ToolCall,
    ToolCallBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResult,
    ToolResultEvent,
)
from dsh.llm.types import TextDelta
from dsh.tools.approval import FOR_THE_MODEL
from tests.helpers import tool_result_message
from tests.transcript.test_call_fold import Reply, write


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


def test_in_a_pipe_a_turn_with_no_answer_prints_no_empty_line(capsys):
    """A turn that failed before any text (the server refused it) printed an empty line
    before its error, as if it had answered nothing."""
    live = LiveDisplay(streaming=False)
    live.finish_turn("")
    assert capsys.readouterr().out == ""


def test_a_compaction_pass_is_announced_on_the_terminal(capsys):
    live = LiveDisplay(streaming=True)
    region = RegionText(kind="state", shadowed_seqs=(1, 2), summary="s")
    live.on_event(
        CompactionPlanEvent(seq=9, time=0, data=CompactionPlan(pass_id="p", regions=(region,)))
    )
    assert "compacting earlier context (1 checkpoint(s))" in capsys.readouterr().err


def _pass_start(pass_id: str = "p") -> CompactionStartEvent:
    start = CompactionStart(compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=1)
    return CompactionStartEvent(seq=8, time=0, data=start)


def _plan(regions: int) -> CompactionPlanEvent:
    region = RegionText(kind="state", shadowed_seqs=(1, 2), summary="s")
    return CompactionPlanEvent(
        seq=9, time=0, data=CompactionPlan(pass_id="p", regions=(region,) * regions)
    )


def test_a_pass_is_announced_when_it_starts_before_any_summary_exists(capsys):
    live = LiveDisplay(streaming=True)
    live.on_event(_pass_start())
    assert capsys.readouterr().err == "  ⋯ compacting earlier context\n"


def test_on_a_terminal_the_pass_line_counts_the_calls_done_in_place(capsys):
    live = LiveDisplay(streaming=True, notices=True)
    live.summary_call_done()  # no pass running: nothing to count
    live.on_event(_pass_start())
    live.on_event(_pass_start())  # a second region bracket of the same pass
    live.summary_call_done()
    live.summary_call_done()
    live.on_event(_plan(2))
    live.summary_call_done()  # after the pass: ignored
    line = "\r\x1b[K  ⋯ compacting earlier context "
    assert capsys.readouterr().err == (
        f"{line}(0 call(s) done){line}(1 call(s) done){line}(2 call(s) done)"
        f"{line}(2 checkpoint(s))\n"
    )


def test_a_refused_pass_ends_its_line_with_the_reason(capsys):
    live = LiveDisplay(streaming=True, notices=True)
    live.on_event(_pass_start())
    end = CompactionEnd(compaction_id="p-1", pass_id="p", turn=1, error="inflation guard")
    live.on_event(CompactionEndEvent(seq=9, time=0, data=end))
    assert capsys.readouterr().err.endswith("compacting earlier context stopped: inflation guard\n")


def _denied_result() -> ToolResultEvent:
    text = (
        "bash was not run: denied by approval policy 'ask' in a headless run, which has no one "
        f"to ask. {FOR_THE_MODEL} The user can rerun with --allow bash or --yes."
    )
    result = ToolResult(
        turn=1,
        step=1,
        message=tool_result_message("c1", text, is_error=True),
        error=ToolErrorInfo(name="bash", code="DENIED"),
    )
    return ToolResultEvent(seq=6, time=0, data=result, surface_op="append")


def test_in_a_pipe_a_denied_call_is_told_on_stderr_with_how_to_allow_it_not_the_models_advice(
    capsys,
):
    live = LiveDisplay(streaming=False)
    live.on_event(_denied_result())
    live.finish_turn("answer")
    out, err = capsys.readouterr()
    assert out == "answer\n"
    assert err == (
        "dsh: bash was not run: denied by approval policy 'ask' in a headless run, which has no "
        "one to ask. The user can rerun with --allow bash or --yes.\n"
    )


def test_on_a_terminal_a_denial_is_shown_in_full_not_cut_to_a_preview(capsys):
    live = LiveDisplay(streaming=True)
    live.on_event(_denied_result())
    assert capsys.readouterr().err.endswith("rerun with --allow bash or --yes.\n")


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


HOSTILE = "a\x1b]0;TITLE\x07b\x1b]52;c;cm0g\x07c\x1b[2J\x1b[31md\x07e\rf\x9bg\n\tok 😀\n"
"""A reply with an OSC 0, an OSC 52, a clear screen, a colour, a bell, a bare CR, a C1 CSI."""
HOSTILE_SHOWN = "abcd\\x07e\\rf\\x9bg\n\tok 😀\n"


def as_on_a_terminal(monkeypatch) -> None:
    """click.echo writes colour codes as it does to a terminal (not stripped as for a pipe)."""
    monkeypatch.setattr("click.utils.should_strip_ansi", lambda stream=None, color=None: False)


def test_on_a_terminal_a_streamed_reply_reaches_it_inert_however_it_is_cut(capsys, monkeypatch):
    as_on_a_terminal(monkeypatch)
    for size in (1, 2, 3, 7, len(HOSTILE)):
        live = LiveDisplay(streaming=True)
        for start in range(0, len(HOSTILE), size):
            live.on_stream(TextDelta(HOSTILE[start : start + size]))
        live.finish_turn(HOSTILE)
        out, _ = capsys.readouterr()
        assert out == HOSTILE_SHOWN, size


def test_the_final_answer_and_the_tool_previews_reach_the_terminal_inert(capsys, monkeypatch):
    as_on_a_terminal(monkeypatch)
    live = LiveDisplay(streaming=True)
    call = ToolCall(
        turn=1, step=1, call_id="c1", name="read_file", arguments='{"path":"e\x1b]0;T\x07"}'
    )
    live.on_event(ToolCallEvent(seq=5, time=0, data=call))
    result = ToolResult(turn=1, step=1, message=tool_result_message("c1", HOSTILE))
    live.on_event(ToolResultEvent(seq=6, time=0, data=result, surface_op="append"))
    _, err = capsys.readouterr()
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert '→ read_file({"path":"e\\x1b]0;T\\x07"})' in err
    assert "✓ a\\x1b]0;TITLE\\x07b" in err  # one line, as printable_line shows it
    LiveDisplay(streaming=False).finish_turn(HOSTILE)  # stdout a pipe: the answer at the end
    assert capsys.readouterr().out == HOSTILE_SHOWN + "\n"


def test_on_a_terminal_the_calls_past_the_limit_are_one_line(capsys):
    """A reply asking for 5 calls with ``tools.max_calls_per_reply`` 2: its two calls that ran
    and their results, then one line for the other three, not a call and a red result each."""
    calls = tuple(
        ToolCallBlock(id=f"call_{n}", name="bash" if n < 4 else "read_file", arguments="{}")
        for n in range(5)
    )
    live = LiveDisplay(streaming=True)
    for event in write([Reply(calls, 2, (False,) * 5)]).events:
        live.on_event(event)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "  → bash({})",
        "  → bash({})",
        "  ⋯ 3 more calls not run: the reply asked for 5, at most 2 run per reply "
        "(tools.max_calls_per_reply); they named bash ×2, read_file ×1",
        "    ✓ out 0.0",
        "    ✓ out 0.1",
    ]
