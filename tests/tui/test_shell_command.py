"""``!cmd`` in the prompt box: the command runs in the workspace through the bash tool, unasked
(the person typed it), and its output reaches the model with the next prompt of the session it
ran in (and so the log); another session opened drops it, and a quit warns of it first."""

from __future__ import annotations

from typing import Any

from dsh.events import UserMessageEvent
from dsh.tui.app import QUIT_AGAIN_WITHIN, UNSENT_ON_QUIT
from dsh.tui.approval import ApprovalScreen
from dsh.tui.find import matching_blocks
from dsh.tui.shell_command import READ_ONLY_REFUSAL, shell_command
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import lines_of, logged, run, stored_session, text_of


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


def test_a_key_typed_into_the_command_line_is_masked_before_it_is_logged(
    rig: Rig, monkeypatch: Any
):
    """The environment is scrubbed and the output masked, but the command line itself went into
    the next prompt as typed: a newcomer audit's ``!echo <key> | rev`` logged the key."""
    key = "sk-deepseek-ABCDEFGH12345678"
    monkeypatch.setenv("DEEPSEEK_API_KEY", key)
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, f"!echo {key} | rev")
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        await run_prompt(pilot, "what did it print?")
        sent = rig.provider.requests[-1].messages[-1].text()
        assert sent.startswith("I ran `echo [masked DEEPSEEK_API_KEY] | rev` in the workspace")
        assert key not in sent and key[::-1] in sent  # reversed, it is no longer the key
        assert all(key not in str(e) for e in logged(app))

    run(app, body)


def test_under_ask_the_persons_own_command_runs_without_asking(rig: Rig):
    """The person typed it: asking them to approve it is a shell asking "are you sure?" of
    every line (the model's calls are still asked about)."""
    app = rig.app([], approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "!touch made-by-shell.txt")
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        assert not isinstance(app.screen, ApprovalScreen)
        assert (rig.workspace / "made-by-shell.txt").exists()
        assert app.controller.policy.mode == "ask"  # nothing loosened for the model

    run(app, body)


def test_under_read_only_the_command_is_not_run_and_the_note_says_how(rig: Rig):
    app = rig.app([], approval="read-only")

    async def body(pilot: Any) -> None:
        await submit(pilot, "!touch made-by-shell.txt")
        await settle(pilot, lambda: not app.running and "read-only" in text_of(app))
        assert " ".join(text_of(app).split()).endswith(READ_ONLY_REFUSAL)
        assert not (rig.workspace / "made-by-shell.txt").exists()
        assert app.shell_context == []

    run(app, body)


def test_output_not_sent_yet_is_dropped_when_another_session_opens(rig: Rig):
    # It used to go with the first prompt of whichever session was open next.
    other = stored_session(rig.store, str(rig.workspace), "the other session's prompt")
    app = rig.app([{"text": "x"}] * 3 + [{"text": "in the other session"}, {"text": "fresh"}])

    async def body(pilot: Any) -> None:
        for leave in (f"/resume {other}", "/new"):
            await submit(pilot, "!echo pending-output")
            await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
            await submit(pilot, leave)
            await settle(pilot, lambda: "Not sent: the output of 1 !cmd run(s)" in text_of(app))
            assert app.shell_context == []
            await run_prompt(pilot, "hello")
            assert "pending-output" not in rig.provider.requests[-1].messages[-1].text()

    run(app, body)


def test_quitting_with_output_not_sent_warns_once_and_a_second_quit_leaves(rig: Rig):
    app = rig.app([])
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))[1]  # type: ignore[method-assign]

    async def body(pilot: Any) -> None:
        await submit(pilot, "!echo unsent")
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        await submit(pilot, "/quit")
        await pilot.pause()
        assert app.is_running and said == [UNSENT_ON_QUIT]
        app.clock.advance(QUIT_AGAIN_WITHIN + 1)  # too late: it warns again
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running and said == [UNSENT_ON_QUIT] * 2
        app.clock.advance(1)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running

    run(app, body)


PRINTS = "!printf 'out-%s\\n' put"
"""A command whose output (``out-put``) is not in its own command line."""


def test_the_output_shows_once_live_and_the_same_once_the_session_is_opened_again(rig: Rig):
    """The note showed it and then the prompt carrying it showed it again: twice on the
    screen, once in a session opened again. Once the prompt is sent, the note goes."""
    app = rig.app([{"text": "I see it."}])
    live: list[str] = []

    async def body(pilot: Any) -> None:
        await submit(pilot, PRINTS)
        await settle(pilot, lambda: not app.running and "out-put" in text_of(app))
        assert text_of(app).count("out-put") == 1
        await run_prompt(pilot, "what did it print?")
        assert text_of(app).count("out-put") == 1
        assert "(sent to the model with your next prompt)" not in text_of(app)
        blocks = app.transcript.model.blocks
        assert len(matching_blocks(blocks, "out-put", show_reasoning=False)) == 1  # ctrl+f too
        live.extend(lines_of(app))

    run(app, body)
    assert app.last_session_id is not None
    cold = rig.app([], resume=app.last_session_id)

    async def reopened(pilot: Any) -> None:
        assert lines_of(cold) == live

    run(cold, reopened)


def test_a_prompt_refused_before_it_is_sent_puts_the_output_note_back(rig: Rig):
    app = rig.app(
        [{"text": "answered"}], window=8192, agent_config={"params": {"max_tokens": 6000}}
    )

    async def body(pilot: Any) -> None:
        await submit(pilot, PRINTS)
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        await submit(pilot, "look " * 4000)
        await settle(pilot, lambda: "error:" in text_of(app) and not app.running)
        assert text_of(app).count("out-put") == 1  # the note again, nothing logged
        assert "(sent to the model with your next prompt)" in text_of(app)
        assert len(app.shell_context) == 1
        await run_prompt(pilot, "what did it print?")
        assert text_of(app).count("out-put") == 1
        assert "out-put" in rig.provider.requests[-1].messages[-1].text()

    run(app, body)
