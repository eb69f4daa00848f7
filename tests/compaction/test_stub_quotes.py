"""What an extractive stub (and state) quotes of a slice's prompts and replies: a line that
says something, never a code fence's line (docs/compaction.md, "A quoted line says
something"): a stub that quoted a reply's ```` ```json ```` opener read as that reply, its
keyword line for body, and Qwen2.5-Coder 0.5B answered later prompts with a copy of it."""

from __future__ import annotations

import asyncio

from dsh.compaction.anchors import KEYWORD_PREFIX
from dsh.compaction.extractive import ExtractiveSummarizer
from dsh.compaction.extractive_text import first_line
from dsh.compaction.prompts import footer, frame_stub
from dsh.compaction.summarizer import SummaryTask
from dsh.events import Message
from tests.helpers import assistant_message, user_message

FENCED_CALL = (
    "```json\n"
    "{\n"
    '  "name": "latency_branch_migration_handler",\n'
    '  "arguments": {"path": "notes.txt"}\n'
    "}\n"
    "```"
)


def stub_of(*messages: Message) -> str:
    task = SummaryTask(kind="stub", messages=messages, max_tokens=200)
    return asyncio.run(ExtractiveSummarizer().summarize(task)).text


def test_a_reply_that_opens_with_a_fence_is_quoted_by_its_first_worded_line():
    text = stub_of(
        user_message("Here are my meeting notes; acknowledge them. Port 6543."),
        assistant_message(FENCED_CALL),
    )
    lines = text.splitlines()
    assert lines[1] == 'Assistant: "name": "latency_branch_migration_handler",'
    assert lines[-1].startswith(KEYWORD_PREFIX)
    assert not any(line.lstrip().startswith(("```", "~~~")) for line in lines)


def test_the_framed_stub_holds_no_fence_that_would_wrap_its_keyword_line():
    text = stub_of(assistant_message(FENCED_CALL))
    body = f"{frame_stub(text)}\n{footer(7, (3, 4))}"
    assert "```" not in body
    assert "Assistant: ```" not in body


def test_a_prompt_that_opens_with_a_fence_is_quoted_by_its_code():
    text = stub_of(
        user_message("```python\nraise ValueError('port must be > 0')\n```\nWhy does this fail?"),
        assistant_message("Because the port is 0."),
    )
    assert text.splitlines()[0] == "User asked: raise ValueError('port must be > 0')"


def test_a_reply_of_fences_alone_adds_nothing_to_the_assistant_line():
    text = stub_of(user_message("Show an empty block."), assistant_message("```\n```"))
    assert "```" not in text
    assert not any(line.startswith("Assistant:") for line in text.splitlines())


def test_first_line_skips_fences_and_lone_punctuation():
    assert first_line('```json\n{\n  "a": 1\n}\n```') == '"a": 1'
    assert first_line("~~~\nx = 1\n~~~") == "x = 1"
    assert first_line("\n  plain words\nmore") == "plain words"
    assert first_line("{\n}") == "{"  # no line has words: the first that is no fence
    assert first_line("```\n```") == ""
    assert first_line("") == ""


def test_the_state_lists_no_fence_line_of_a_fenced_reply_as_current_state():
    task = SummaryTask(
        kind="state",
        messages=(user_message("Acknowledge my notes."), assistant_message(FENCED_CALL)),
        max_tokens=400,
    )
    text = asyncio.run(ExtractiveSummarizer().summarize(task)).text
    current = text.split("## Current state", 1)[1].split("##", 1)[0]
    assert '- "name": "latency_branch_migration_handler",' in current
    assert "```" not in text
    assert "- {" not in current


def test_the_summary_of_a_fenced_reply_starts_its_current_state_with_words():
    task = SummaryTask(
        kind="summary",
        messages=(user_message("Acknowledge my notes."), assistant_message(FENCED_CALL)),
        max_tokens=400,
    )
    text = asyncio.run(ExtractiveSummarizer().summarize(task)).text
    assert "```" not in text
