"""The extractive summariser reads only what the person typed as requests: an ``@path``
attachment or a note dsh adds after a reply is not a prompt (an audit with a real model saw an
attachment's first line become the state's next step, a line of the attached file a standing
constraint, and dsh's own note about text tool calls a constraint too)."""

from __future__ import annotations

import asyncio

from dsh.compaction.extractive import ExtractiveSummarizer, parse_sections
from dsh.compaction.summarizer import SummaryTask, TaskKind
from dsh.events import ATTACH_PLUGIN, Message, PluginSource, TextBlock
from tests.helpers import assistant_message, tool_call_block, user_message

FILE_LINE = 'raise ValueError("qty must be positive")'


def _note(text: str, plugin: str) -> Message:
    return Message(
        id=f"note-{plugin}",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(plugin=plugin),
    )


def _slice() -> tuple[Message, ...]:
    return (
        user_message("Second task: fix apply_discount in pricing.py. Keep it small."),
        _note(
            "[attached] The user attached pricing.py (as read_file shows it):\n"
            f"14\t    {FILE_LINE}",
            ATTACH_PLUGIN,
        ),
        assistant_message("Reading pricing.py first.", tool_calls=[tool_call_block("c1")]),
        _note("Your reply also wrote 1 tool call as text; it must be sent as a call.", "text"),
    )


def _text(kind: TaskKind) -> str:
    task = SummaryTask(kind=kind, messages=_slice(), max_tokens=800)
    return asyncio.run(ExtractiveSummarizer().summarize(task)).text


def test_the_state_takes_requests_and_constraints_only_from_typed_prompts():
    sections = parse_sections(_text("state"))
    assert sections["next steps"] == [
        "Second task: fix apply_discount in pricing.py. Keep it small."
    ]
    constraints = " ".join(sections.get("constraints", []))
    assert "qty must be positive" not in constraints
    assert "must be sent as a call" not in constraints
    assert not any("[attached]" in line for lines in sections.values() for line in lines)


def test_a_stub_names_the_typed_prompt_and_counts_no_note():
    first = _text("stub").splitlines()[0]
    assert first == "User asked: Second task: fix apply_discount in pricing.py. Keep it small."


def test_the_basic_summary_lists_no_note_as_a_request():
    sections = parse_sections(_text("summary"))
    assert sections["request and intent"] == [
        "Second task: fix apply_discount in pricing.py. Keep it small."
    ]


def test_a_note_after_the_answer_is_no_new_request():
    messages = (
        user_message("What does total_value return?"),
        assistant_message("The sum of price times quantity."),
        _note("Your reply also wrote 1 tool call as text; it was not run.", "text"),
    )
    task = SummaryTask(kind="state", messages=messages, max_tokens=800)
    sections = parse_sections(asyncio.run(ExtractiveSummarizer().summarize(task)).text)
    assert sections["next steps"] == ["None open: the last request was answered."]
