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
