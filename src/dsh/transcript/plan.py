"""The session's plan as the faces pin it: the todo list of its latest ``todo_write`` call
(``todo/write`` event), shown above the composer while any of it is not done — the terminal
UI's plan panel (``dsh.tui.plan_panel``) and ``dsh web``'s (``static/plan.js``, from the session
info's ``plan`` and each ``todo/write`` the live stream brings). Pure functions of the events.

A list longer than the rows it may take shows a window of it: from the item before the first
one not done (what was just finished, then what runs and comes next), the items left out
counted above and below it, so the panel never grows past its rows."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Todo, TodoWriteEvent
from dsh.transcript.call_summary import TODO_MARKS

PLAN_ROWS = 6
"""The panel's rows at most: its head and the items (and the counts of those left out)."""


def current_plan(writes: Sequence[TodoWriteEvent]) -> tuple[Todo, ...]:
    """The todos of the newest of ``writes`` (the session's ``todo/write`` events, in order);
    none before the first."""
    return writes[-1].data.todos if writes else ()


def shows(todos: Sequence[Todo]) -> bool:
    """Whether the panel shows for ``todos``: some item is not done yet."""
    return any(todo.status != "completed" for todo in todos)


def plan_head(todos: Sequence[Todo]) -> str:
    """``plan · 2 of 5 done`` (and ``· now: …``, the item in progress, when there is one)."""
    done = sum(todo.status == "completed" for todo in todos)
    head = f"plan · {done} of {len(todos)} done"
    now = next((todo.content for todo in todos if todo.status == "in_progress"), None)
    return f"{head} · now: {first_line(now)}" if now else head


def plan_lines(todos: Sequence[Todo], rows: int = PLAN_ROWS) -> list[str]:
    """The panel's lines: its head, then the items (each ``☐``, ``◐`` or ``☑`` and its first
    line), at most ``rows`` lines in all (at least the head and one item)."""
    room = max(rows, 2) - 1
    items = [f"{TODO_MARKS[todo.status]} {first_line(todo.content)}" for todo in todos]
    if len(items) <= room:
        return [plan_head(todos), *items]
    first_open = next((i for i, t in enumerate(todos) if t.status != "completed"), len(items) - 1)
    if room < 3:  # no room for the counts: the item that matters
        return [plan_head(todos), items[first_open]]
    start = min(max(0, first_open - 1), len(items) - (room - 1))
    shown = room - (start > 0)
    if start + shown < len(items):
        shown -= 1
    if first_open >= start + shown:  # one item's room: the one not done, not the one before
        start = first_open - shown + 1
    lines = [plan_head(todos)]
    if start:
        lines.append(f"  … {start} more above")
    lines += items[start : start + shown]
    if start + shown < len(items):
        lines.append(f"  … {len(items) - start - shown} more below")
    return lines


def first_line(text: str) -> str:
    """A text's first line, `` …`` marking more (the plan panel's items, ``/rewind``'s and
    ``dsh sessions fork --turns``' prompts: one row each)."""
    line = text.strip().split("\n", 1)[0]
    return line if line == text.strip() else f"{line} …"
