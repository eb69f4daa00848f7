"""The pinned plan: the latest ``todo_write``'s list, shown while any item is not done, and a
window of it no taller than its rows that always holds the first item not done, every other
item counted above or below it."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dsh.events import Todo, TodoWrite, TodoWriteEvent
from dsh.transcript.plan import current_plan, plan_head, plan_lines, shows

STATUSES = ("pending", "in_progress", "completed")
todos_strategy = st.lists(
    st.builds(Todo, content=st.text(min_size=1, max_size=20), status=st.sampled_from(STATUSES)),
    max_size=30,
)


def write(seq: int, *todos: Todo) -> TodoWriteEvent:
    return TodoWriteEvent(seq=seq, time=0, data=TodoWrite(todos=todos))


def test_the_plan_is_the_newest_writes_list() -> None:
    a, b = Todo(content="a", status="pending"), Todo(content="b", status="completed")
    assert current_plan([]) == ()
    assert current_plan([write(1, a), write(5, b)]) == (b,)
    assert shows((a, b)) and not shows((b,)) and not shows(())


def test_the_head_counts_and_names_the_item_in_progress() -> None:
    todos = [
        Todo(content="read\nthe code", status="completed"),
        Todo(content="write tests\nfor x", status="in_progress"),
        Todo(content="ship", status="pending"),
    ]
    assert plan_head(todos) == "plan · 1 of 3 done · now: write tests …"
    assert plan_lines(todos) == [plan_head(todos), "☑ read …", "◐ write tests …", "☐ ship"]


@given(todos_strategy, st.integers(min_value=0, max_value=12))
def test_the_window_fits_its_rows_and_keeps_the_first_item_not_done(
    todos: list[Todo], rows: int
) -> None:
    lines = plan_lines(todos, rows)
    assert lines[0] == plan_head(todos)
    assert len(lines) <= max(rows, 2)
    body = lines[1:]
    items = [line for line in body if not line.startswith("  … ")]
    counts = [int(m.group(1)) for line in body if (m := re.match(r"  … (\d+) more", line))]
    if len(todos) <= max(rows, 2) - 1:
        assert len(items) == len(todos) and not counts
    elif max(rows, 2) - 1 >= 3:
        assert len(items) + sum(counts) == len(todos)  # each item shown or counted
    open_items = [i for i, t in enumerate(todos) if t.status != "completed"]
    if open_items:
        assert line_of(todos[open_items[0]]) in items, (todos, lines)


def line_of(todo: Todo) -> str:
    from dsh.transcript.plan import first_line

    mark = {"completed": "☑", "in_progress": "◐", "pending": "☐"}[todo.status]
    return f"{mark} {first_line(todo.content)}"
