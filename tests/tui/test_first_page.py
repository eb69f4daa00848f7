"""A long stored session paints its newest page before the whole log is open (issue 13).

The full open (load + project) is held by a blocked opener, so what is on screen in between is
the first page alone, whatever the machine's speed; the tests then release it and compare the
transcript with the one-step open's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from dsh.tui import DshApp
from dsh.tui.opening import FIRST_PAGE_MESSAGES
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.tui import scenarios
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, submit

TURNS = 40


def long_session(rig: Rig) -> str:
    session = new_session(rig.store, cwd=str(rig.workspace))
    for n in range(TURNS):
        if n % 3 == 0:
            append_tool_turn(session, f"question {n}", final=f"answer {n}")
        else:
            append_chat_turn(session, f"question {n}", f"answer {n}")
    session.close()
    return session.id


class BlockedOpen:
    """Stands in for ``Controller.open`` until released, then opens for real."""

    def __init__(self, app: DshApp) -> None:
        self.real = app.controller.open
        self.called = threading.Event()
        self.release = threading.Event()

    def __call__(self, session_id: str) -> Any:
        self.called.set()
        assert self.release.wait(timeout=60), "the test never released the open"
        return self.real(session_id)


def paged_app(app: DshApp, monkeypatch: pytest.MonkeyPatch) -> BlockedOpen:
    app.first_page_from = 0  # every log is "long"
    blocked = BlockedOpen(app)
    monkeypatch.setattr(app.controller, "open", blocked)
    return blocked


def test_newest_rows_are_on_screen_before_the_log_is_open(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = long_session(rig)
    app = rig.app([{"text": "a new reply"}] * (2 * TURNS), resume=session_id)  # skips those logged
    blocked = paged_app(app, monkeypatch)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, blocked.called.is_set)
            await pilot.pause()
            text = "\n".join(app.transcript.rendered_lines())
            assert f"answer {TURNS - 1}" in text
            assert "question 0\n" not in text + "\n"  # the oldest turns are not loaded yet
            assert app.transcript.first_paint is not None
            assert not app.ready and app.controller.session is None
            await submit(pilot, "too early")  # no turn yet: queued until the session is open
            await pilot.pause()
            assert not app.running and app.prompt_box.queued == "too early"
            assert app.prompt_box.value == "" and "sent once the session is open" in str(
                app.prompt_box.border_title
            )
            blocked.release.set()
            await settle(pilot, lambda: app.ready)
            assert "question 0" in "\n".join(app.transcript.rendered_lines())
            await settle(pilot, lambda: "a new reply" in "\n".join(app.transcript.rendered_lines()))
            await settle(pilot, lambda: not app.running)
            assert (
                app.prompt_box.queued is None and "❯ too early" in app.transcript.rendered_lines()
            )

    asyncio.run(run())


def one_step_lines(rig: Rig, session_id: str) -> list[str]:
    app = scenarios.cold_app(rig, session_id)
    app.first_page_from = 1 << 62

    async def run() -> list[str]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            return app.transcript.rendered_lines()

    return asyncio.run(run())


def test_once_open_the_transcript_is_the_one_step_opens(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, _ = scenarios.record(rig, SIZE)  # compaction passes, cards, markers
    expected = one_step_lines(rig, session_id)
    app = scenarios.cold_app(rig, session_id)
    blocked = paged_app(app, monkeypatch)

    async def run() -> list[str]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, blocked.called.is_set)
            blocked.release.set()
            await settle(pilot, lambda: app.ready)
            return app.transcript.rendered_lines()

    assert asyncio.run(run()) == expected


def test_turns_after_the_open_are_shown_once(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = long_session(rig)
    script = [{"text": "a new reply"}] * (2 * TURNS)  # the script skips the calls logged
    app = rig.app(script, resume=session_id)
    blocked = paged_app(app, monkeypatch)

    async def run() -> list[str]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, blocked.called.is_set)
            blocked.release.set()
            await settle(pilot, lambda: app.ready)
            await run_prompt(pilot, "one more")
            return app.transcript.rendered_lines()

    live = asyncio.run(run())
    assert sum("a new reply" in line for line in live) == 1, live[-12:]
    assert live == one_step_lines(rig, session_id)


def test_a_short_log_opens_in_one_step(rig: Rig) -> None:
    session_id = long_session(rig)
    app = rig.app([], resume=session_id)
    assert FIRST_PAGE_MESSAGES < 2 * TURNS

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            assert app.ready  # opened in on_mount, before any refresh
            await pilot.pause()

    asyncio.run(run())


def test_quitting_while_the_log_opens_leaves_it_closed(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = long_session(rig)
    app = rig.app([], resume=session_id)
    blocked = paged_app(app, monkeypatch)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, blocked.called.is_set)
            app.exit()
        blocked.release.set()  # the open completes after the app has gone

    asyncio.run(run())  # waits for the opening thread
    assert app.controller.session is None
    rig.store.open(session_id, writable=True).close()  # its writer lock was let go


def test_an_unknown_command_queued_while_the_log_opens_comes_back_to_the_box(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued before the session was open, it is found unknown only when sent: it goes back in
    the box, selected, with the note naming the closest command (it was lost: the queue had
    been emptied before the draft was found unknown)."""
    session_id = long_session(rig)
    app = rig.app([{"text": "a new reply"}], resume=session_id)
    blocked = paged_app(app, monkeypatch)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, blocked.called.is_set)
            await submit(pilot, "/sesions")
            await pilot.pause()
            assert app.prompt_box.queued == "/sesions" and app.prompt_box.value == ""
            blocked.release.set()
            await settle(pilot, lambda: app.ready and app.prompt_box.queued is None)
            await settle(pilot, lambda: app.prompt_box.value == "/sesions")
            text = "\n".join(app.transcript.rendered_lines())
            assert "Unknown command /sesions. Did you mean /sessions?" in text
            assert not app.running

    asyncio.run(run())
