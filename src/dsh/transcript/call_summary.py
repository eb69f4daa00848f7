"""What a tool call is about, in one line, and a ``todo_write`` call's todos as a checklist:
the terminal UI's collapsed card and the Markdown export say it the same way.

A call to ``bash`` is its command, ``read_file`` the path and the lines asked for, ``web_fetch``
the URL, ``history_search`` the query — what a person scanning the transcript wants — rather
than the arguments' JSON. Arguments that are not what the tool takes (a model's malformed call)
fall back to the compact JSON, so nothing is hidden. Pure functions of the call's name and
arguments; the text is the model's, as it is (the terminal UI makes it safe to draw,
``dsh.tui.wrap``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TODO_MARKS = {"completed": "☑", "in_progress": "◐", "pending": "☐"}


def call_summary(name: str, arguments: str) -> str:
    """One line about a call to ``name`` with ``arguments`` (JSON text)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict):
        describe = _DESCRIBERS.get(name)
        text = describe(value) if describe is not None else None
        if text is not None:
            return text
        if len(value) == 1:
            (only,) = value.values()
            if isinstance(only, str):
                return only
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def todo_lines(arguments: str) -> list[str] | None:
    """A ``todo_write`` call's todos as checklist lines, or None when they are not a list of
    todos (then the arguments are shown as they are)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    todos = value.get("todos") if isinstance(value, dict) else None
    if not isinstance(todos, list) or not all(isinstance(t, dict) for t in todos):
        return None
    lines = []
    for todo in todos:
        mark = TODO_MARKS.get(str(todo.get("status")), "☐")
        lines.append(f"{mark} {todo.get('content', '')}")
    return lines


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bash(args: dict[str, Any]) -> str | None:
    command = _text(args.get("command"))
    if command is None:
        return None
    timeout = _number(args.get("timeout"))
    return command if timeout is None else f"{command} (timeout {timeout} s)"


def _read_file(args: dict[str, Any]) -> str | None:
    path = _text(args.get("path"))
    if path is None:
        return None
    offset, limit = _number(args.get("offset")), _number(args.get("limit"))
    if offset is None and limit is None:
        return path
    first = offset or 1  # the tool's offset is the first line's number
    if limit is None:
        return f"{path} (from line {first})"
    return f"{path} (lines {first}–{first + limit - 1})"


def _in_path(key: str) -> Callable[[dict[str, Any]], str | None]:
    def describe(args: dict[str, Any]) -> str | None:
        what = _text(args.get(key))
        if what is None:
            return None
        where = _text(args.get("path"))
        return what if where is None else f"{what} in {where}"

    return describe


def _list_dir(args: dict[str, Any]) -> str | None:
    path = args.get("path")
    return "." if path in (None, "") else _text(path)


def _path(args: dict[str, Any]) -> str | None:
    return _text(args.get("path"))


def _web_fetch(args: dict[str, Any]) -> str | None:
    url = _text(args.get("url"))
    if url is None:
        return None
    most = _number(args.get("max_chars"))
    return url if most is None else f"{url} (at most {most:,} characters)"


def _todo_write(args: dict[str, Any]) -> str | None:
    todos = args.get("todos")
    if not isinstance(todos, list) or not all(isinstance(t, dict) for t in todos):
        return None
    done = sum(t.get("status") == "completed" for t in todos)
    text = f"{len(todos)} todo{'s' if len(todos) != 1 else ''}, {done} done"
    current = next((t for t in todos if t.get("status") == "in_progress"), None)
    if current is not None and _text(current.get("content")):
        text += f" · now: {current['content']}"
    return text


def _history_read(args: dict[str, Any]) -> str | None:
    checkpoint = _text(args.get("checkpoint"))
    if checkpoint is None:
        return None
    offset = _number(args.get("offset"))
    return checkpoint if not offset else f"{checkpoint} from #msg {offset}"


def _history_search(args: dict[str, Any]) -> str | None:
    query = args.get("query")
    if not isinstance(query, str):
        return None
    checkpoint = _text(args.get("checkpoint"))
    quoted = json.dumps(query, ensure_ascii=False)
    return quoted if checkpoint is None else f"{quoted} in {checkpoint}"


_DESCRIBERS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "bash": _bash,
    "read_file": _read_file,
    "grep": _in_path("pattern"),
    "glob": _in_path("pattern"),
    "list_dir": _list_dir,
    "write_file": _path,
    "edit_file": _path,
    "todo_write": _todo_write,
    "web_fetch": _web_fetch,
    "history_read": _history_read,
    "history_search": _history_search,
}
