"""``/rewind`` and ``/fork`` driven by the pilot: ``/rewind`` lists the session's prompts newest
first, and the chosen one's turn is left out of a new session that copies the log up to it,
the prompt back in the composer; the original stays as it was; ``/fork`` opens a copy of the
whole session; a turn that does not exist is refused, naming those there are."""

from __future__ import annotations

from typing import Any

from dsh.agent.fork import FORK_MARK, TurnPrompt
from dsh.agent.settings_record import latest
from dsh.events import SessionEndSeedEvent, SessionTitleEvent, TurnStartEvent
from dsh.surface import Session
from dsh.transcript.titles import session_title
from dsh.tui import DshApp
from dsh.tui.rewind import TurnPicker
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of

SCRIPT = [{"text": "answer one"}, {"text": "answer two"}]


def turns_of(rig: Rig, session_id: str) -> int:
    with Session.open(rig.store, session_id) as session:
        return len(session.of_type(TurnStartEvent))


def opened(app: DshApp) -> str:
    assert app.controller.session is not None
    return app.controller.session.id


def test_rewind_opens_a_copy_before_the_chosen_prompt_with_it_in_the_composer(rig: Rig) -> None:
    app = rig.app(SCRIPT)
    ids: dict[str, str] = {}

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        await run_prompt(pilot, "second prompt")
        ids["original"] = opened(app)
        await submit(pilot, "/rewind")
        await settle(pilot, lambda: isinstance(app.screen, TurnPicker))
        picker = app.screen
        assert isinstance(picker, TurnPicker)
        assert picker.shown_keys == ["2", "1"]  # newest first
        await pilot.press("enter")
        await settle(pilot, lambda: opened(app) != ids["original"])
        ids["fork"] = opened(app)
        assert app.prompt_box.text == "second prompt"
        text = text_of(app)
        assert "answer one" in text and "answer two" not in text
        assert f"/resume {ids['original']}" in text
        await pilot.press("enter")  # sent again (unchanged here): the copy goes on
        # the scripted model answers by the replies the log holds: the second again
        await settle(pilot, lambda: not app.running and "answer two" in text_of(app))

    run(app, body)
    assert turns_of(rig, ids["original"]) == 2  # the original is as it was
    with Session.open(rig.store, ids["fork"]) as fork:
        assert fork.header.parent_session == ids["original"]
        assert len(fork.of_type(TurnStartEvent)) == 2  # turn 1 copied, then the prompt again
        seeds = fork.of_type(SessionEndSeedEvent)  # the fork's own writes start there
        assert seeds[0].seq == fork.header.seed_length


def test_fork_copies_the_whole_session_and_a_missing_turn_is_refused(rig: Rig) -> None:
    app = rig.app(SCRIPT)
    ids: dict[str, str] = {}

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        ids["original"] = opened(app)
        await submit(pilot, "/rewind 7")
        await settle(pilot, lambda: "has no turn 7" in text_of(app))
        assert "its turns with one: 1" in " ".join(text_of(app).split())
        assert opened(app) == ids["original"]
        await submit(pilot, "/fork")
        await settle(pilot, lambda: opened(app) != ids["original"])
        ids["fork"] = opened(app)
        assert "answer one" in text_of(app)

    run(app, body)
    assert turns_of(rig, ids["fork"]) == 1
    with Session.open(rig.store, ids["fork"]) as fork:
        assert fork.header.parent_session == ids["original"]
        title = [e.data.title for e in fork.of_type(SessionTitleEvent)]
        assert title == ["first prompt" + FORK_MARK]


def test_rewind_lists_and_puts_back_what_was_typed_after_a_shell_command(rig: Rig) -> None:
    """A prompt sent after ``!cmd`` is listed by what was typed (not ``I ran `echo …```), put
    back so, and the command's output it was sent with goes again with it."""
    app = rig.app([{"text": "answer one"}, {"text": "answer two"}, {"text": "answer two"}])
    ids: dict[str, str] = {}

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        await submit(pilot, "!echo CMDOUT-77")
        await settle(pilot, lambda: not app.running and len(app.shell_context) == 1)
        await run_prompt(pilot, "after cmd prompt")
        ids["original"] = opened(app)
        sent = rig.provider.requests[-1].messages[-1].text()
        await submit(pilot, "/rewind")
        await settle(pilot, lambda: isinstance(app.screen, TurnPicker))
        picker = app.screen
        assert isinstance(picker, TurnPicker)
        assert [text for _, text in picker.shown] == [
            "turn 2  after cmd prompt",
            "turn 1  first prompt",
        ]
        await pilot.press("enter")
        await settle(pilot, lambda: opened(app) != ids["original"])
        assert app.prompt_box.text == "after cmd prompt"
        assert len(app.shell_context) == 1 and "CMDOUT-77" in app.shell_context[0]
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and len(rig.provider.requests) == 3)
        assert rig.provider.requests[-1].messages[-1].text() == sent  # as it went the first time

    run(app, body)


def test_the_picker_aligns_two_digit_turns(rig: Rig) -> None:
    turns = [TurnPrompt(n, n * 10, f"prompt {n}") for n in (9, 10)]
    assert [text for _, text in TurnPicker(turns).rows] == [
        "turn 10  prompt 10",
        "turn  9  prompt 9",
    ]


def test_fork_and_rewind_keep_the_model_chosen_and_name_copies_apart(rig: Rig) -> None:
    """``/model`` chose another model (logged by no turn yet): ``/fork`` and ``/rewind`` open
    copies that run on it, and record it; their titles are the parent's, numbered."""
    app = rig.app(SCRIPT)
    ids: dict[str, str] = {}

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        ids["original"] = opened(app)
        await submit(pilot, "/model other-model")
        await settle(pilot, lambda: "Model for the next turns: other-model." in text_of(app))
        await submit(pilot, "/fork")
        await settle(pilot, lambda: opened(app) != ids["original"])
        ids["fork"] = opened(app)
        assert app.controller.model == "other-model"
        await submit(pilot, "/rewind 1")
        await settle(pilot, lambda: opened(app) != ids["fork"])
        ids["rewound"] = opened(app)
        assert app.controller.model == "other-model"

    run(app, body)
    titles = {}
    for name in ("fork", "rewound"):
        with Session.open(rig.store, ids[name]) as session:
            recorded = latest(session)
            assert recorded is not None and recorded.model == "other-model"
            titles[name] = session_title(session.events)
    assert titles == {"fork": "first prompt (fork)", "rewound": "first prompt (fork 2)"}
