"""Notes that matter later are logged, so they are there again after a resume: a turn that did
not complete (its ``turn/end``) and a ``/compact`` answer (its ``command/done``). Live and
reopened, each is shown exactly once."""

from __future__ import annotations

from typing import Any

from dsh.events import CommandDone, CommandRun, TurnEnd, TurnEndReason, TurnStart
from dsh.surface import Session
from dsh.transcript import NoteItem, render_human_transcript, transcript_items
from tests.helpers import append_chat_turn
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of


def test_a_stopped_turn_and_a_compact_answer_are_notes_of_the_log(tmp_path):
    from dsh.store import JsonlStore

    with Session.create(JsonlStore(tmp_path), cwd="/w") as session:
        append_chat_turn(session, "hi", "hello")
        session.append(TurnStart(turn=2))
        session.append(TurnEnd(turn=2, reason=TurnEndReason("aborted", "cancelled by the user")))
        session.append(CommandRun(command_id="k1", name="compact"))
        session.append(CommandDone(command_id="k1", ok=True, text="Compacted 2 history items"))
    notes = [i.text for i in transcript_items(session.events) if isinstance(i, NoteItem)]
    assert notes == ["Turn stopped: cancelled by the user", "Compacted 2 history items"]
    transcript = render_human_transcript(session.events)
    assert "(Turn stopped: cancelled by the user)" in transcript


def test_a_cancelled_turn_note_is_shown_once_and_again_after_reopening(rig: Rig):
    app = rig.app([{"text": "far too late", "delayMs": 3_600_000}])  # only a cancel ends it

    async def body(pilot: Any) -> None:
        await submit(pilot, "take your time")
        await settle(pilot, lambda: app.running and app.controller.busy is not None)
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)
        assert text_of(app).count("Turn stopped: cancelled by the user") == 1

    run(app, body)
    (header,) = rig.store.list()
    reopened = rig.app([], resume=header.id)

    async def check(pilot: Any) -> None:
        assert text_of(reopened).count("Turn stopped: cancelled by the user") == 1

    run(reopened, check)


def test_a_compact_answer_is_shown_once_and_again_after_reopening(rig: Rig):
    script = [{"text": f"answer {i} " + "words " * 80} for i in range(4)]
    app = rig.app(script, retain_tokens=60)

    async def body(pilot: Any) -> None:
        for i in range(4):
            await run_prompt(pilot, f"question {i}")
        await submit(pilot, "/compact")
        await settle(pilot, lambda: not app.running)
        await pilot.pause()
        assert text_of(app).count("Compacted ") == 1

    run(app, body)
    (header,) = rig.store.list()
    reopened = rig.app([], resume=header.id)

    async def check(pilot: Any) -> None:
        assert text_of(reopened).count("Compacted ") == 1

    run(reopened, check)


def test_a_turn_stopped_at_the_repeat_limit_says_why_live_and_after_reopening(rig: Rig):
    """The model reads notes.txt five times and gets the same text each time: the turn stops
    (``tools.max_repeated_calls``), and the transcript says so in one note."""
    read = {"toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    app = rig.app([read] * 5 + [{"text": "never sent"}])
    why = "Turn stopped: the model called read_file"

    def shown(text: str) -> bool:
        flat = " ".join(text.split())  # the note wraps at the terminal's width
        return flat.count(why) == 1 and "(tools.max_repeated_calls = 5)" in flat

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "what is in notes.txt?")
        assert shown(text_of(app)) and "never sent" not in text_of(app)

    run(app, body)
    (header,) = rig.store.list()
    reopened = rig.app([], resume=header.id)

    async def check(pilot: Any) -> None:
        assert shown(text_of(reopened))

    run(reopened, check)
