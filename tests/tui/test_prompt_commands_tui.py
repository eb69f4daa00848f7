"""Prompt commands in the terminal UI: ``/name args`` sends the command file's text as the
prompt, ``/help`` lists them, tab completes them, an unknown name keeps the draft."""

from __future__ import annotations

from typing import Any

from dsh.config import dsh_home
from dsh.events import UserMessageEvent
from dsh.tui.commands import Command, parse_command
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import logged, run, text_of


def flat(app: Any) -> str:
    return " ".join(text_of(app).split())


def prompts(app: Any) -> list[str]:
    if app.controller.session is None:  # no turn yet: no session opened
        return []
    return [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]


def test_a_prompt_command_sends_its_text_with_the_arguments(rig: Rig):
    commands = dsh_home() / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS for bugs; be terse.\n"
    )
    project = rig.workspace / ".dsh" / "commands"
    project.mkdir(parents=True)
    (project / "ship.md").write_text("Run the tests, then summarise the diff.\n")
    app = rig.app([{"text": "reviewed"}, {"text": "shipped"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "/review notes.txt")
        assert prompts(app) == ["Review notes.txt for bugs; be terse."]
        await run_prompt(pilot, "/ship now")
        assert prompts(app)[-1] == "Run the tests, then summarise the diff.\n\nnow"
        await submit(pilot, "/help")
        await settle(pilot, lambda: "Your commands" in flat(app))
        assert "/review Review a file for bugs (user)" in flat(app)
        assert "/ship Run the tests, then summarise the diff. (project)" in flat(app)
        app.prompt_box.value = "/rev"
        app.prompt_box.move_cursor((0, 4))
        await pilot.press("tab")
        assert app.prompt_box.value == "/review "

    run(app, body)


def test_an_unknown_command_keeps_the_draft_and_sends_nothing(rig: Rig):
    app = rig.app([{"text": "never"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/reveiw notes.txt")
        await settle(pilot, lambda: "Unknown command /reveiw" in flat(app))
        assert app.prompt_box.value == "/reveiw notes.txt"
        assert prompts(app) == []

    run(app, body)


def test_a_command_name_ends_at_any_whitespace_and_its_arguments_keep_their_lines():
    assert parse_command("/review\nsrc/a.py\n  and b.py ") == Command(
        "review", "src/a.py\n  and b.py"
    )
    assert parse_command("/Help\t") == Command("help", "")
    assert parse_command("/") == Command("", "")
    assert parse_command("/usr/lib/x is missing") is None
