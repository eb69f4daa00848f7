"""``!cmd`` in the prompt box: the command runs in the workspace through the bash tool and the
approval policy, and its output reaches the model with the next prompt (and so the log)."""

from __future__ import annotations

from typing import Any

from dsh.events import UserMessageEvent
from dsh.tui.approval import ApprovalScreen
from dsh.tui.shell_command import shell_command
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import logged, run, text_of


def test_only_a_leading_bang_makes_a_shell_command():
    assert shell_command("!ls -la") == "ls -la"
    assert shell_command("  ! git status ") == "git status"
    assert shell_command("why does !this fail") is None


def test_the_output_goes_to_the_model_with_the_next_prompt(rig: Rig):
    app = rig.app([{"text": "I see the greeting."}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "!echo hello-from-the-shell")
        await settle(pilot, lambda: not app.running and "hello-from-the-shell\n" in text_of(app))
        assert "(sent to the model with your next prompt)" in text_of(app)
        assert rig.provider.requests == []  # running the command called no model
        await run_prompt(pilot, "what did it print?")
        sent = rig.provider.requests[-1].messages[-1].text()
        assert sent.startswith("I ran `echo hello-from-the-shell` in the workspace; it printed:")
        assert "hello-from-the-shell" in sent and sent.endswith("what did it print?")
        prompts = [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]
        assert prompts == [sent]  # the log holds exactly what the model saw
        assert app.shell_context == []

    run(app, body)


def test_under_ask_the_command_waits_for_approval_and_a_denial_runs_nothing(rig: Rig):
    app = rig.app([], approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "!touch made-by-shell.txt")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("d")
        await settle(pilot, lambda: not app.running)
        assert not (rig.workspace / "made-by-shell.txt").exists()
        assert app.shell_context == [] and "was not run" in text_of(app)
        await submit(pilot, "!touch made-by-shell.txt")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("o")
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        assert (rig.workspace / "made-by-shell.txt").exists()

    run(app, body)
