"""The app driven like a person would: prompts, streaming, cancel, commands, approvals,
resume, and the screen shown when no API key is set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from dsh.errors import MissingApiKeyError
from dsh.events import Event, TurnEndEvent, event_type_of
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent, TextDelta
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui import DshApp, TuiOptions
from dsh.tui.approval import ApprovalScreen
from dsh.tui.no_key import NoKeyScreen
from tests.helpers import append_chat_turn, append_tool_turn
from tests.tui.conftest import (
    SIZE,
    Rig,
    answer_approval,
    approval_ready,
    run_prompt,
    settle,
    submit,
)


def lines_of(app: DshApp) -> list[str]:
    return app.transcript.rendered_lines()


def text_of(app: DshApp) -> str:
    return "\n".join(lines_of(app))


def logged(app: DshApp) -> list[Event]:
    assert app.controller.session is not None
    return list(app.controller.session.events)


def run(app: DshApp, body: Any, size: tuple[int, int] = SIZE) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot, lambda: app.ready or isinstance(app.screen, NoKeyScreen))
            await body(pilot)

    asyncio.run(main())


# ---- prompts and streaming --------------------------------------------------------------------


def test_a_prompt_gets_the_scripted_answer_and_the_status_bar_follows(rig: Rig):
    rig.cache = "deepseek"
    app = rig.app([{"text": "Hello from the scripted model."}, {"text": "Again."}])

    async def body(pilot: Any) -> None:
        assert app.status_bar.info.model == "scripted"
        await run_prompt(pilot, "hi there")
        assert lines_of(app)[:3] == ["❯ hi there", "", "● Hello from the scripted model."]
        types = [event_type_of(e) for e in logged(app)]
        assert types[-1] == "turn/end" and "assistant/message" in types
        info = app.status_bar.info
        assert info.context_tokens > 0 and info.context_window == 128_000
        assert info.cache_ratio == 0.0 and info.busy is None  # the first call is a cache miss
        await run_prompt(pilot, "once more")
        assert app.status_bar.info.cache_ratio is not None and app.status_bar.info.cache_ratio > 0

    run(app, body)


class Trickle:
    """Streams every scripted text in small pieces, calling ``observe`` after each piece has
    been handed to the agent (so the test sees the screen mid-stream)."""

    def __init__(self, inner: ScriptedProvider, observe: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.observe = observe

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        async for event in self.inner.stream(request, history=history):
            if isinstance(event, TextDelta):
                for i in range(0, len(event.text), 8):
                    yield TextDelta(event.text[i : i + 8])
                    self.observe()
                    await asyncio.sleep(0)
            else:
                yield event


def test_streamed_text_shows_in_a_typing_block_that_the_logged_message_replaces(rig: Rig):
    answer = "Streaming arrives in small pieces, then the logged message takes over."
    seen: list[list[str]] = []
    app = rig.app(
        [{"text": answer}],
        wrap_provider=lambda inner: Trickle(inner, lambda: seen.append(lines_of(app))),
    )

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "stream please")
        typing = [lines[-2] for lines in seen]
        assert typing[0] == f"● {answer[:8]}▍"
        assert typing[-1] == f"● {answer}▍"
        assert all(line.endswith("▍") for line in typing)
        lines = lines_of(app)
        assert not any("▍" in line for line in lines)
        assert lines.count(f"● {answer}") == 1

    run(app, body)


def test_the_prompt_box_recalls_earlier_prompts_with_up_and_down(rig: Rig):
    app = rig.app([{"text": "one"}, {"text": "two"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        await run_prompt(pilot, "second prompt")
        box = app.prompt_box
        box.value = "draft"
        await pilot.press("up")
        assert box.value == "second prompt"
        await pilot.press("up", "up")
        assert box.value == "first prompt"
        await pilot.press("down")
        assert box.value == "second prompt"
        await pilot.press("down")
        assert box.value == "draft"

    run(app, body)


# ---- cancelling -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
def test_a_key_cancels_a_slow_turn(rig: Rig, key: str):
    # The reply would come after an hour: the turn ends only if the key cuts the model call
    # short (no stopwatch, which a loaded machine could fool).
    app = rig.app([{"text": "far too late", "delayMs": 3_600_000}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "take your time")
        # the model call is under way and has said nothing yet
        await settle(pilot, lambda: app.running and app.controller.waiting_since is not None)
        await pilot.press(key)
        await settle(pilot, lambda: not app.running)
        end = [e for e in logged(app) if isinstance(e, TurnEndEvent)][-1]
        assert end.data.reason.kind == "aborted"
        assert "Turn stopped: cancelled by the user" in text_of(app)
        assert "far too late" not in text_of(app)

    run(app, body)


# ---- commands ---------------------------------------------------------------------------------


def test_compact_command_compacts_the_idle_session_and_shows_its_answer(rig: Rig):
    script = [{"text": f"answer {i} " + "words " * 80} for i in range(4)]
    app = rig.app(script, retain_tokens=60)

    async def body(pilot: Any) -> None:
        for i in range(4):
            await run_prompt(pilot, f"question {i}")
        await submit(pilot, "/compact the answers")
        await settle(pilot, lambda: not app.running)
        await pilot.pause()
        text = text_of(app)
        assert "Compacted " in text and " history items (~" in text
        assert text.count("… earlier context was compacted …") == 1
        assert "❯ question 0" in text  # the compacted prompt is still shown
        types = [event_type_of(e) for e in logged(app)]
        assert types[-1] == "command/done" and "command/run" in types

    run(app, body)


def test_compact_on_a_fresh_session_says_there_is_nothing_to_compact(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/compact")
        await settle(pilot, lambda: not app.running)
        assert "No compactable history yet." in text_of(app)

    run(app, body)


def test_help_sessions_model_and_unknown_commands_answer_in_the_transcript(rig: Rig):
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/help")
        assert "/compact [focus]" in text_of(app)
        await run_prompt(pilot, "make a session")
        await submit(pilot, "/resume")
        assert app.controller.session is not None
        assert f"{app.controller.session.id}" in text_of(app) and "(this one)" in text_of(app)
        await submit(pilot, "/model")
        assert "Model: scripted" in text_of(app)
        await submit(pilot, "/model bigger-model")
        assert "Model for the next turns: bigger-model." in text_of(app)
        assert app.status_bar.info.model == "bigger-model"
        await submit(pilot, "/frobnicate")
        assert "Unknown command /frobnicate" in text_of(app)

    run(app, body)


def test_quit_command_leaves_the_app(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/quit")
        await pilot.pause()
        assert app.return_code == 0 and not app.is_running

    run(app, body)


@pytest.mark.usefixtures("patient_quit")
def test_quitting_during_a_turn_cancels_it_so_the_log_closes_the_turn(rig: Rig):
    app = rig.app([{"text": "never", "delayMs": 3_600_000}])  # only a cancel ends it
    session: list[Session] = []

    async def body(pilot: Any) -> None:
        await submit(pilot, "slow one")
        await settle(pilot, lambda: app.controller.busy is not None)
        assert app.controller.session is not None
        session.append(app.controller.session)
        await pilot.press("ctrl+q")
        await pilot.pause()

    run(app, body)
    reopened = Session.open(rig.store, session[0].id)
    assert event_type_of(reopened.events[-1]) == "turn/end"
    assert reopened.events[-1].data.reason.kind == "aborted"


# ---- reasoning and cards ----------------------------------------------------------------------


def test_ctrl_t_shows_and_hides_the_reasoning_in_place_of_ctrl_r(rig: Rig):
    app = rig.app([{"text": "The answer.", "reasoning": "private chain of thought"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "think")
        assert "private chain of thought" not in text_of(app)
        await pilot.press("ctrl+t")
        assert "  ┊ private chain of thought" in lines_of(app)
        await pilot.press("ctrl+t")
        assert "private chain of thought" not in text_of(app)

    run(app, body)


def test_tool_cards_expand_with_a_key_or_a_click(rig: Rig):
    (rig.workspace / "a.txt").write_text("first line\nsecond line\nthird line\n")
    app = rig.app(
        [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "Read it."},
        ]
    )

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "read a.txt")
        assert "  ▸ read_file  a.txt" in lines_of(app)
        assert "third line" not in text_of(app)
        await pilot.press("ctrl+o")
        assert "  ▾ read_file" in lines_of(app) and "third line" in text_of(app)
        await pilot.press("ctrl+o")
        assert "third line" not in text_of(app)
        row = lines_of(app).index("  ▸ read_file  a.txt")
        await pilot.click("#transcript", offset=(4, row))
        assert "third line" in text_of(app)
        assert app.focused is app.transcript  # the click selected the card
        await pilot.press("enter")
        assert "third line" not in text_of(app)
        app.transcript.selected = None
        await pilot.press("up", "enter")  # up selects the nearest card above the screen's end
        assert "third line" in text_of(app)

    run(app, body)


# ---- approvals --------------------------------------------------------------------------------


def _asked_call(app: Any) -> str:
    """The call the open approval dialog asks about ("" when none is open)."""
    if not isinstance(app.screen, ApprovalScreen):
        return ""
    return str(app.screen.query_one("#call").render())


def bash_script(*commands: str) -> list[dict[str, Any]]:
    calls = [{"toolCalls": [{"name": "bash", "arguments": {"command": c}}]} for c in commands]
    return [*calls, {"text": "All done."}]


@pytest.mark.parametrize(
    ("key", "expected"),
    [("o", "approved-output"), ("d", "the user denied this call")],
)
def test_an_ask_policy_bash_call_waits_for_the_modal(rig: Rig, key: str, expected: str):
    app = rig.app(bash_script("echo approved-output"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        await approval_ready(pilot)
        assert "echo approved-output" in str(app.screen.query_one("#call").render())
        await pilot.press(key)
        await settle(pilot, lambda: not app.running)
        results = [e for e in logged(app) if event_type_of(e) == "tool/result"]
        assert len(results) == 1
        assert expected in results[0].data.message.content[0].content[0].text
        assert "All done." in text_of(app)

    run(app, body)


def test_always_allows_that_command_for_the_rest_of_the_session(rig: Rig):
    app = rig.app(bash_script("echo one", "echo one", "echo two"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run them")
        await approval_ready(pilot)
        await pilot.press("a")
        # the same command runs unasked; another one is asked about again
        await settle(pilot, lambda: "echo two" in _asked_call(app))
        await answer_approval(pilot, "o")
        await settle(pilot, lambda: not app.running)
        results = [e for e in logged(app) if event_type_of(e) == "tool/result"]
        texts = [r.data.message.content[0].content[0].text for r in results]
        assert [t.strip() for t in texts] == ["one", "one", "two"]
        assert app.controller.policy.always_allowed_commands == frozenset({("bash", "echo one")})

    run(app, body)


def test_cancelling_while_the_modal_is_up_closes_it(rig: Rig):
    app = rig.app(bash_script("echo never"), approval="ask")

    async def body(pilot: Any) -> None:
        await submit(pilot, "run it")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("ctrl+c")
        await settle(pilot, lambda: not app.running)
        assert not isinstance(app.screen, ApprovalScreen)
        end = [e for e in logged(app) if isinstance(e, TurnEndEvent)][-1]
        assert end.data.reason.kind == "aborted"

    run(app, body)


# ---- resuming ---------------------------------------------------------------------------------


def stored_session(store: JsonlStore, cwd: str, prompt: str) -> str:
    session = Session.create(store, cwd=cwd)
    append_tool_turn(session, prompt, calls=[("read_file", '{"path":"x"}', "stored result")])
    append_chat_turn(session, "and then?", "a stored reply")
    session.close()
    return session.id


def test_resuming_a_session_shows_its_transcript_and_seeds_the_history(rig: Rig):
    session_id = stored_session(rig.store, str(rig.workspace), "an old prompt")
    # three model calls are already logged; the next one gets entry 3
    app = rig.app([{"text": "x"}] * 3 + [{"text": "continued"}], resume=session_id)

    async def body(pilot: Any) -> None:
        lines = lines_of(app)
        assert lines[0] == "❯ an old prompt"
        assert "    └ stored result" in lines and "● a stored reply" in lines
        assert app.prompt_box.prompts == ["an old prompt", "and then?"]
        await run_prompt(pilot, "go on")
        assert "● continued" in lines_of(app)
        assert app.controller.session is not None and app.controller.session.id == session_id

    run(app, body)


def test_the_resume_command_switches_to_another_session(rig: Rig):
    other = stored_session(rig.store, str(rig.workspace), "the other session's prompt")
    app = rig.app([{"text": "here"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "in the first session")
        first = app.controller.session
        assert first is not None
        await submit(pilot, f"/resume {other[:-2]}")
        lines = lines_of(app)
        assert "❯ in the first session" not in lines
        assert lines[0] == "❯ the other session's prompt"
        assert f"Resumed session {other}." in text_of(app)
        assert app.controller.session is not None and app.controller.session.id == other
        await submit(pilot, "/resume no-such-session")
        assert "error: no session 'no-such-session'" in text_of(app)

    run(app, body)


def test_the_resume_command_will_not_retarget_a_session_from_another_workspace(rig: Rig, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = stored_session(rig.store, str(elsewhere), "a prompt from elsewhere")
    app = rig.app([{"text": "here"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, f"/resume {other}")
        shown = " ".join(text_of(app).split())  # the note wraps
        assert f"Session {other} ran in {elsewhere}, not here" in shown
        assert app.controller.session is None  # nothing was opened here

    run(app, body)


# ---- no API key -------------------------------------------------------------------------------


def test_without_an_api_key_the_app_says_which_variable_to_set(rig: Rig, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    options = TuiOptions(settings=rig.settings(), store=rig.store, workspace=rig.workspace)
    app = DshApp(options)  # the real route from the settings: provider deepseek, no key

    async def body(pilot: Any) -> None:
        assert isinstance(app.screen, NoKeyScreen)
        text = str(app.screen.query_one("#no-key").render())
        assert "DEEPSEEK_API_KEY" in text and "dsh demo" in text
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 2

    run(app, body)


def test_a_missing_key_from_any_route_shows_the_same_screen(rig: Rig):
    def route(model: str | None) -> Any:
        raise MissingApiKeyError("ANTHROPIC_API_KEY", provider="anthropic")

    options = TuiOptions(
        settings=rig.settings(), store=rig.store, workspace=rig.workspace, route_factory=route
    )
    app = DshApp(options)

    async def body(pilot: Any) -> None:
        assert isinstance(app.screen, NoKeyScreen)
        text = str(app.screen.query_one("#no-key").render())
        assert "ANTHROPIC_API_KEY" in text and "for anthropic" in text

    run(app, body)


def test_what_resolving_the_route_found_is_said_once_when_the_ui_opens(rig: Rig):
    notice = "http://127.0.0.1:8080/v1 does not report its context window; assuming 128,000 tokens"
    app = rig.app([{"text": "hi"}], route_notice=notice)

    async def body(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready)
        assert text_of(app).count("does not report its context window") == 1

    run(app, body)
    quiet = rig.app([{"text": "hi"}])

    async def nothing(pilot: Any) -> None:
        await settle(pilot, lambda: quiet.ready)
        assert "context window" not in text_of(quiet)

    run(quiet, nothing)


def test_the_no_key_screen_offers_the_providers_whose_key_is_set(rig: Rig, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    options = TuiOptions(settings=rig.settings(), store=rig.store, workspace=rig.workspace)
    app = DshApp(options)  # deepseek, its key unset, two others set

    async def body(pilot: Any) -> None:
        assert isinstance(app.screen, NoKeyScreen)
        text = str(app.screen.query_one("#no-key").render())
        assert "Or start it on a provider whose key is set:" in text
        assert "dsh --provider openai   (OPENAI_API_KEY is set)" in text
        assert "dsh --provider anthropic   (ANTHROPIC_API_KEY is set)" in text
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 2

    run(app, body)


def test_a_first_prompt_is_sent_as_the_first_turn_once_the_session_is_open(rig: Rig):
    app = rig.app([{"text": "Fixed it."}])
    app.first_prompt = "fix the bug"  # dsh "fix the bug"

    async def body(pilot: Any) -> None:
        await settle(pilot, lambda: "● Fixed it." in lines_of(app) and not app.work.running)
        assert lines_of(app)[:3] == ["❯ fix the bug", "", "● Fixed it."]
        assert app.prompt_box.queued is None and app.prompt_box.value == ""
        prompts = [e.data.text() for e in logged(app) if event_type_of(e) == "user/message"]
        assert prompts == ["fix the bug"]

    run(app, body)
