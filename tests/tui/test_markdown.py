"""Assistant messages render as Markdown: headings, lists, code fences with syntax colour,
inline code and links; plain prose keeps the plain wrap."""

from __future__ import annotations

from typing import Any

from dsh.tui.markdown import looks_like_markdown, markdown_rows
from tests.tui.conftest import SIZE, Rig, run_prompt
from tests.tui.test_pilot import lines_of, run

ANSWER = (
    "## Fixed\n\nThe bug: `add` used **minus**.\n\n- read calc.py\n- ran the tests\n\n"
    "```python\ndef add(a, b):\n    return a + b\n```\n\nSee [the docs](https://example.org/x)."
)


def texts(rows: list[list[Any]]) -> list[str]:
    return ["".join(s.text for s in row) for row in rows]


def shown(text: str, width: int) -> list[str]:
    """The lines of ``text`` rendered, without the blank lines above it."""
    lines = texts(markdown_rows(text, width))
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def test_markdown_syntax_is_detected_and_prose_is_not():
    assert looks_like_markdown(ANSWER)
    assert looks_like_markdown("use `ls`")
    assert looks_like_markdown("1. first\n2. second")
    assert not looks_like_markdown("Hello from the scripted model.")
    assert not looks_like_markdown("a - b is not a list, 3.5 is not one either")


def test_markdown_rows_drop_the_syntax_and_colour_code():
    rows = markdown_rows(ANSWER, 60)
    lines = texts(rows)
    joined = "\n".join(lines)
    assert "```" not in joined and "**" not in joined and "`add`" not in joined
    assert "Fixed" in lines[0] and "##" not in lines[0]
    assert " • read calc.py" in lines and " • ran the tests" in lines
    assert "See the docs (https://example.org/x)." in lines
    code = next(row for row in rows if "def add" in "".join(s.text for s in row))
    colours = {s.style.color.name for s in code if s.style is not None and s.style.color}
    assert len(colours) >= 2  # syntax colour: the keyword and the name differ
    inline = next(s for row in rows for s in row if s.text == "add")
    assert (
        inline.style is not None
        and inline.style != next(s for row in rows for s in row if "The bug" in s.text).style
    )


def test_an_assistant_answer_in_markdown_shows_rendered_in_the_transcript(rig: Rig):
    app = rig.app([{"text": ANSWER}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "fix it")
        lines = lines_of(app)
        assert any(line.startswith("● ") and "Fixed" in line for line in lines)
        assert "   • read calc.py" in lines
        assert not any("```" in line for line in lines)

    run(app, body)


def test_markdown_answer_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": ANSWER}])

    async def ask(pilot: Any) -> None:
        await run_prompt(pilot, "fix it")

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


WIDE_TABLE = (
    "| "
    + " | ".join(f"column{i}" for i in range(14))
    + " |\n|"
    + "---|" * 14
    + "\n| "
    + " | ".join(f"value-{i}-" + "z" * 10 for i in range(14))
    + " |\n"
)
NARROW_TABLE = "| name | size |\n|---|---|\n| calc.py | 12 lines of code |\n"


def test_a_table_too_wide_for_its_columns_shows_each_row_as_a_record_uncut():
    for width in (120, 220):
        lines = shown(WIDE_TABLE, width)
        assert not any("…" in line for line in lines)
        for i in range(14):
            assert f"column{i}" in lines[i] and f"value-{i}-" + "z" * 10 in lines[i]


def test_a_table_whose_columns_fit_wraps_its_cells_as_before():
    assert shown(NARROW_TABLE, 60) == [
        " name     size",
        " " + "─" * 25,
        " calc.py  12 lines of code",
    ]
    lines = shown(NARROW_TABLE, 20)
    assert lines[2:] == [" calc.py  12 lines", "          of code"]


def test_a_wide_table_in_a_reply_can_be_read_in_the_transcript(rig: Rig):
    app = rig.app([{"text": "Sizes:\n\n" + WIDE_TABLE}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "wide check")
        lines = lines_of(app)
        assert any("column13" in line and "value-13-" + "z" * 10 in line for line in lines)
        assert not any("…" in line for line in lines)

    run(app, body, size=(120, 40))


def test_wide_table_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": "Sizes:\n\n" + WIDE_TABLE}])

    async def ask(pilot: Any) -> None:
        await run_prompt(pilot, "wide check")

    assert snap_compare(app, terminal_size=(120, 32), run_before=ask)


TASKS = "Plan:\n\n- [ ] write the test\n- [x] read calc.py\n- [X] ran it\n- [] not a task\n"


def test_task_list_items_show_as_checkboxes():
    lines = shown(TASKS, 60)
    assert " • ☐ write the test" in lines
    assert " • ☑ read calc.py" in lines and " • ☑ ran it" in lines
    assert " • [] not a task" in lines
    assert not any("[ ]" in line or "[x]" in line for line in lines)
    assert shown("1. [ ] first\n2. [x] second\n", 60) == [
        " 1 ☐ first",
        " 2 ☑ second",
    ]


def test_task_list_in_a_reply_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": TASKS}])

    async def ask(pilot: Any) -> None:
        await run_prompt(pilot, "plan it")

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


def test_every_cell_of_a_wide_table_is_drawn_whole_at_any_width():
    cells = [f"column{i}" for i in range(14)] + [f"value-{i}-" + "z" * 10 for i in range(14)]
    for width in range(1, 130):
        drawn = "".join(shown(WIDE_TABLE, width))
        assert "…" not in drawn, width
        assert sorted(drawn.replace(" ", "")) == sorted("".join(cells)), width
