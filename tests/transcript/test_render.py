"""The shared text renderer and the human projection (docs/compaction.md, "The two recall
tools"; docs/architecture.md, "The human transcript")."""

from __future__ import annotations

from dsh.events import (
    CompactionStart,
    Message,
    PluginSource,
    ReplaceOp,
    TextBlock,
    ToolResult,
)
from dsh.store import MemoryStore
from dsh.transcript import (
    COMPACTION_MARKER,
    MarkerItem,
    render_human_transcript,
    render_message,
    transcript_items,
)
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    checkpoint_message,
    new_session,
    tool_call_block,
    tool_result_message,
    user_message,
)


def test_each_role_renders_with_its_prefix():
    assert render_message(user_message("fix the bug")) == "User: fix the bug"
    calls = [tool_call_block("c1", "bash", '{"command":"ls"}')]
    assert render_message(assistant_message("on it", tool_calls=calls)) == (
        'Assistant: on it\n[tool call: bash({"command":"ls"})]'
    )
    assert render_message(tool_result_message("c1", "a.txt")) == "Tool result: a.txt"
    assert render_message(tool_result_message("c1", "boom", is_error=True)) == (
        "Tool result (error): boom"
    )


def test_reasoning_renders_on_its_own_labelled_line_before_the_answer():
    text = render_message(assistant_message("answer", reasoning="the port is 8731"))
    assert text == "Assistant (reasoning): the port is 8731\nAssistant: answer"


def test_reasoning_before_a_bare_tool_call_and_reasoning_alone():
    calls = [tool_call_block("c1", "bash", "{}")]
    with_call = render_message(assistant_message("", reasoning="look first", tool_calls=calls))
    assert with_call == "Assistant (reasoning): look first\nAssistant: [tool call: bash({})]"
    alone = render_message(assistant_message("", reasoning="only thinking"))
    assert alone == "Assistant (reasoning): only thinking"


def test_a_label_replaces_the_role_prefix():
    message = checkpoint_message("state text\n[checkpoint c5: …]", "cmp")
    assert render_message(message, label="[prior state checkpoint]") == (
        "[prior state checkpoint]\nstate text\n[checkpoint c5: …]"
    )


def test_pruned_results_and_foreign_replacements_render_nothing():
    session = new_session(MemoryStore())
    turn = append_tool_turn(session, calls=[("read_file", "{}", "FULL ORIGINAL OUTPUT")])
    result_seq = turn.results[0]
    call_id = session.events[result_seq].data.message.content[0].tool_call_id
    session.append(
        ToolResult(turn=1, step=1, message=tool_result_message(call_id, "PRUNED COPY")),
        surface_op=ReplaceOp(start=result_seq, end=result_seq),
        source_event_seqs=[result_seq],
    )
    foreign = Message(
        id="f1",
        role="user",
        content=(TextBlock(text="FOREIGN PLUGIN TEXT"),),
        source=PluginSource(plugin="workspace"),
    )
    session.append(
        foreign, surface_op=ReplaceOp(start=turn.user, end=turn.user), source_event_seqs=[turn.user]
    )
    text = render_human_transcript(session.events)
    assert "FULL ORIGINAL OUTPUT" in text
    assert "list the files" in text
    assert "PRUNED COPY" not in text
    assert "FOREIGN PLUGIN TEXT" not in text
    assert COMPACTION_MARKER not in text


def test_one_marker_per_pass_even_when_a_pass_lands_several_checkpoints():
    session = new_session(MemoryStore())
    first = append_chat_turn(session, "first prompt", "first reply")
    second = append_chat_turn(session, "second prompt", "second reply")
    for n, turn in enumerate((first, second)):
        cid = f"cmp-{n}"
        start = session.append(CompactionStart(compaction_id=cid, pass_id="pass-1", turn=None))
        session.append(
            checkpoint_message(f"PAYLOAD {n}", cid),
            surface_op=ReplaceOp(start=turn.user, end=turn.assistants[-1]),
            source_event_seqs=[start.seq, turn.user, *turn.assistants],
        )
    items = list(transcript_items(session.events))
    markers = [i for i in items if isinstance(i, MarkerItem)]
    assert len(markers) == 1 and markers[0].pass_id == "pass-1"
    text = render_human_transcript(session.events)
    assert "first prompt" in text and "second reply" in text
    assert "PAYLOAD" not in text


def test_markdown_quotes_reasoning_under_its_label_before_the_answer():
    from dsh.transcript.markdown import message_markdown

    text = message_markdown(assistant_message("done", reasoning="line one\nline two"))
    assert text == "### Assistant\n\n> *Reasoning:* line one\n> line two\n\ndone"


def test_markdown_keeps_a_call_whose_result_never_came_and_says_so():
    from dsh.events import AssistantMessage, StepStart, TurnEnd, TurnEndReason, TurnStart
    from dsh.transcript.markdown import NO_RESULT, render_markdown

    session = new_session(MemoryStore())
    session.append(TurnStart(turn=1))
    session.append(StepStart(turn=1, step=1))
    session.append(user_message("run it"))
    call = tool_call_block("call-1", "bash", '{"command": "make test"}')
    reply = assistant_message("Running the tests.", tool_calls=[call])
    session.append(AssistantMessage(turn=1, step=1, message=reply))
    session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="aborted")))
    text = render_markdown(session.header, session.events)
    assert f"#### `bash`\n\n```sh\nmake test\n```\n\n{NO_RESULT}" in text
    assert text.index("Running the tests.") < text.index("make test")
