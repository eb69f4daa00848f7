"""A collapsed tool card names its call the way a person reads it (the command, the path and
lines, the query), not as the arguments' JSON; an expanded todo_write card is a checklist."""

from __future__ import annotations

import json

import pytest

from dsh.transcript import ToolCallItem
from dsh.transcript.call_summary import call_summary, todo_lines
from dsh.tui.blocks import TranscriptModel, block_rows, row_text

TODOS = {
    "todos": [
        {"content": "Write median() in stats.py", "status": "in_progress"},
        {"content": "Test it", "status": "pending"},
        {"content": "Read calc.py", "status": "completed"},
    ]
}


@pytest.mark.parametrize(
    ("name", "arguments", "summary"),
    [
        ("bash", {"command": "pytest -q"}, "pytest -q"),
        ("bash", {"command": "make", "timeout": 600}, "make (timeout 600 s)"),
        ("read_file", {"path": "calc.py"}, "calc.py"),
        ("read_file", {"path": "calc.py", "offset": 10, "limit": 20}, "calc.py (lines 10–29)"),
        ("read_file", {"path": "calc.py", "offset": 50}, "calc.py (from line 50)"),
        ("grep", {"pattern": "def add", "path": "src"}, "def add in src"),
        ("glob", {"pattern": "**/*.py"}, "**/*.py"),
        ("list_dir", {}, "."),
        ("todo_write", TODOS, "3 todos, 1 done · now: Write median() in stats.py"),
        ("history_read", {"checkpoint": "c66", "offset": 3}, "c66 from #msg 3"),
        ("history_read", {"checkpoint": "c66"}, "c66"),
        ("history_search", {"query": "AssertionError"}, '"AssertionError"'),
        ("history_search", {"query": "port", "checkpoint": "c7"}, '"port" in c7'),
    ],
)
def test_a_call_is_summarised_as_a_person_reads_it(name, arguments, summary):
    assert call_summary(name, json.dumps(arguments)) == summary


@pytest.mark.parametrize(
    ("name", "arguments", "summary"),
    [
        ("bash", '{"cmd": "ls", "x": 1}', '{"cmd":"ls","x":1}'),  # not the tool's arguments
        ("read_file", '{"path": 7}', '{"path":7}'),
        ("todo_write", '{"todos": "none"}', "none"),
        ("mcp__srv__add", '{"a": 1, "b": 2}', '{"a":1,"b":2}'),  # unknown tools: compact JSON
        ("mcp__srv__echo", '{"text": "hi"}', "hi"),
        ("bash", "not json", "not json"),
    ],
)
def test_arguments_a_tool_does_not_take_still_show_as_they_are(name, arguments, summary):
    assert call_summary(name, arguments) == summary


def test_an_expanded_todo_write_card_is_a_checklist():
    model = TranscriptModel()
    model.add([ToolCallItem(2, "c1", "todo_write", json.dumps(TODOS))])
    card = model.blocks[0]
    head = row_text(block_rows(card, 100, show_reasoning=False, details={})[0])
    assert head == "  ▸ todo_write  3 todos, 1 done · now: Write median() in stats.py"
    card.expanded = True
    rows = [row_text(r) for r in block_rows(card, 100, show_reasoning=False, details={})]
    assert rows[:5] == [
        "  ▾ todo_write",
        "    todos",
        "      ◐ Write median() in stats.py",
        "      ☐ Test it",
        "      ☑ Read calc.py",
    ]
    assert todo_lines('{"todos": [1, 2]}') is None  # not todos: the JSON is shown instead
