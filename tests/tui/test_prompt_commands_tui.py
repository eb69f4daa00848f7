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


def test_a_command_file_named_new_or_clear_is_skipped_at_start_as_in_every_face(rig: Rig):
    """``/new`` and ``/clear`` are built-ins every face reserves (``BUILT_IN_COMMANDS``), so
    ``new.md`` is skipped alike everywhere: here the warning comes as the UI opens (a
    ``/warnings`` row), ``/help`` says why the file is not a command, and ``/new`` starts a new
    session, not the file's prompt."""
    commands = dsh_home() / "commands"
    commands.mkdir(parents=True)
    (commands / "new.md").write_text("Write a new module for $ARGUMENTS.\n")
    (commands / "clear.md").write_text("Clear the cache.\n")
    app = rig.app([{"text": "ok"}])
    skipped = [
        f"prompt command {commands / name} skipped: /{name[:-3]} is a built-in command"
        for name in ("clear.md", "new.md")
    ]

    async def body(pilot: Any) -> None:
        await settle(pilot, lambda: len(app.warnings.entries) == 2)
        assert [entry.text for entry in app.warnings.entries] == skipped
        await submit(pilot, "/help")
        await settle(pilot, lambda: "Not loaded" in flat(app))
        assert all(line in flat(app) for line in skipped)
        await run_prompt(pilot, "first question")
        first = app.controller.session.id
        await submit(pilot, "/new")
        await settle(pilot, lambda: "New session" in flat(app))
        assert app.controller.session is None or app.controller.session.id != first
        assert "Write a new module" not in flat(app)

    run(app, body)


def test_every_face_reserves_the_commands_the_terminal_ui_answers():
    """The web's and ``dsh run``'s prompt commands are loaded with ``BUILT_IN_COMMANDS``: the
    terminal UI has no command of its own besides them, so no list differs by face."""
    from dsh.agent.prompt_commands import BUILT_IN_COMMANDS
    from dsh.tui.commands import COMMANDS

    assert set(COMMANDS) == set(BUILT_IN_COMMANDS)
    assert {"new", "clear"} <= set(BUILT_IN_COMMANDS)


def test_a_namespaced_command_and_init_run_and_tab_complete(rig: Rig):
    """``frontend/component.md`` is ``/frontend:component`` (``$1`` its first word); ``/init``,
    dsh's own, sends its prompt: the same machinery as ``dsh web``'s, no face's own code."""
    from dsh.agent.init_command import INIT_TEMPLATE

    project = rig.workspace / ".dsh" / "commands" / "frontend"
    project.mkdir(parents=True)
    (project / "component.md").write_text("Write the $1 component with $2.\n")
    app = rig.app([{"text": "written"}, {"text": "inited"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, '/frontend:component Button "a loading state"')
        assert prompts(app) == ["Write the Button component with a loading state."]
        await run_prompt(pilot, "/init")
        assert prompts(app)[-1] == INIT_TEMPLATE
        app.prompt_box.value = "/front"
        app.prompt_box.move_cursor((0, 6))
        await pilot.press("tab")
        assert app.prompt_box.value == "/frontend:component "

    run(app, body)
