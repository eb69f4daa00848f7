from __future__ import annotations

import asyncio

import pytest

from dsh.errors import ToolError
from dsh.events import Todo, TodoWrite
from dsh.tools.base import ToolContext
from dsh.tools.todo import TodoWriteTool


def test_todo_write_returns_checklist_and_todo_write_payload(ctx: ToolContext) -> None:
    todos = [
        {"content": "read spec", "status": "completed"},
        {"content": "write code", "status": "in_progress"},
        {"content": "test", "status": "pending"},
    ]
    out = asyncio.run(TodoWriteTool().run({"todos": todos}, ctx))
    assert not out.is_error
    assert out.text.splitlines() == [
        "todo list updated (1/3 completed):",
        "[x] read spec",
        "[~] write code",
        "[ ] test",
    ]
    assert out.log == (
        TodoWrite(
            todos=(
                Todo(content="read spec", status="completed"),
                Todo(content="write code", status="in_progress"),
                Todo(content="test", status="pending"),
            )
        ),
    )


def test_todo_write_empty_list_clears(ctx: ToolContext) -> None:
    out = asyncio.run(TodoWriteTool().run({"todos": []}, ctx))
    assert out.text == "todo list cleared"
    assert out.log == (TodoWrite(todos=()),)


def test_todo_write_rejects_unknown_status(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as err:
        asyncio.run(TodoWriteTool().run({"todos": [{"content": "x", "status": "done"}]}, ctx))
    assert err.value.code == "INVALID_ARGUMENT"
    assert "todos[0].status" in str(err.value)
