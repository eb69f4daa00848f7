"""The ``todo_write`` tool: the model's own checklist, logged as a ``todo/write`` event.

Each call replaces the whole list. The tool returns a short rendered checklist for the model and
a ``TodoWrite`` payload in ``ToolOutput.log``, which the loop appends after the tool result.
"""

from __future__ import annotations

from typing import Any, Literal, cast, get_args

from dsh.errors import ToolError
from dsh.events import Todo, TodoWrite
from dsh.tools.args import INVALID_ARGUMENT
from dsh.tools.base import ToolContext, ToolKind, ToolOutput

TodoStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[str, ...] = get_args(TodoStatus)
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoWriteTool:
    """Replace the session's todo list."""

    name: str = "todo_write"
    kind: ToolKind = "meta"
    description: str = (
        "Record your plan as a todo list, replacing the previous list. Each item has content "
        "and a status: pending, in_progress or completed. Keep one item in_progress at a time "
        "and mark items completed as soon as they are done."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "What to do."},
                            "status": {"type": "string", "enum": list(STATUSES)},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["todos"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Validate the list, render it, and hand the ``TodoWrite`` payload to the loop."""
        todos = parse_todos(args.get("todos"))
        payload = TodoWrite(todos=todos)
        return ToolOutput(render_todos(todos), log=(payload,))


def parse_todos(raw: Any) -> tuple[Todo, ...]:
    """Turn the model's ``todos`` argument into ``Todo`` structs, naming the first bad item."""
    if not isinstance(raw, list):
        raise ToolError("todos must be an array of {content, status}", code=INVALID_ARGUMENT)
    todos: list[Todo] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ToolError(f"todos[{i}] must be an object", code=INVALID_ARGUMENT)
        content, status = item.get("content"), item.get("status")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"todos[{i}].content must be a non-empty string", code=INVALID_ARGUMENT)
        if status not in STATUSES:
            raise ToolError(
                f"todos[{i}].status must be one of {', '.join(STATUSES)}; got {status!r}",
                code=INVALID_ARGUMENT,
            )
        todos.append(Todo(content=content, status=cast(TodoStatus, status)))
    return tuple(todos)


def render_todos(todos: tuple[Todo, ...]) -> str:
    """A short checklist: ``[x]`` completed, ``[~]`` in progress, ``[ ]`` pending."""
    if not todos:
        return "todo list cleared"
    done = sum(1 for t in todos if t.status == "completed")
    lines = [f"todo list updated ({done}/{len(todos)} completed):"]
    lines.extend(f"{_MARKS[t.status]} {t.content}" for t in todos)
    return "\n".join(lines)
