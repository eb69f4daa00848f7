"""A session's load warnings in the terminal UI: what opening it repaired (a torn last line
moved aside, a turn or a compaction pass a crashed process left open closed) shows as a toast
each and a row in ``/warnings``, once per open — at start (in one step, or newest page first
with the log opened in a thread), and on ``/resume`` — as ``dsh run`` prints them on stderr."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any, Literal

import pytest

import dsh.tui.app_warnings
from dsh.store.jsonl import TORN_NAME
from dsh.surface import Session
from tests.helpers import append_chat_turn, leave_lock_of_a_killed_writer
from tests.killed_pass import killed_pass_session
from tests.tui.conftest import SIZE, Rig, settle, submit
from tests.tui.test_pilot import text_of
from tests.tui.test_warnings import toasts

TORN = b'{"type":"user/mess'
CLOSED = "closed turn left open by a crashed process"


@pytest.fixture(autouse=True)
def long_toasts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Toasts stay up for the whole test, however slow the machine."""
    monkeypatch.setattr(dsh.tui.app_warnings, "TOAST_SECONDS", 3600.0)


def crashed_session(rig: Rig, question: str, *, torn: bool) -> tuple[str, Path]:
    """A stored session (of the rig's workspace) of two chat turns whose last ``turn/end``
    never made it to the log (a crashed process), and (``torn``) whose log ends in a torn line;
    its id and log."""
    store = rig.store
    with Session.create(store, cwd=str(rig.workspace)) as session:
        append_chat_turn(session, f"{question} 1", "ok")
        append_chat_turn(session, f"{question} 2", "ok")
    path = store.log_path(session.id)
    data = path.read_bytes()
    data = data[: data.rstrip(b"\n").rfind(b"\n") + 1]  # the last line (its turn/end) lost
    path.write_bytes(data + (TORN if torn else b""))
    leave_lock_of_a_killed_writer(store, session.id)
    return session.id, path


def torn_warning(path: Path) -> str:
    dropped = f"dropped a torn last line ({len(TORN)} bytes) left by an interrupted write"
    return f"warning: {path}: {dropped}"


def listed(app: Any) -> list[tuple[str, int]]:
    return [(f"{e.level}: {e.text}", e.count) for e in app.warnings.entries]


@pytest.mark.parametrize("paged", [False, True], ids=["in-one-step", "newest-page-first"])
def test_the_resumed_sessions_repairs_show_as_toasts_and_in_slash_warnings(
    rig: Rig, paged: bool
) -> None:
    # the page reader does not vouch for a torn log: the paged open is of a crashed one only
    session_id, path = crashed_session(rig, "question", torn=not paged)
    app = rig.app([], resume=session_id)
    opened_on: list[str] = []
    opener = app.controller.open

    def open_(wanted: str) -> Any:
        opened_on.append(threading.current_thread().name)
        return opener(wanted)

    app.controller.open = open_  # type: ignore[method-assign]
    if paged:
        app.first_page_from = 0  # every log is "long": its newest page, then the log in a thread
    said = [torn_warning(path)] if not paged else []
    said.append(f"warning: {CLOSED} (2 repair events)")

    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready and len(toasts(app)) == len(said))
            assert sorted(text for _, text in toasts(app)) == sorted(said)
            assert len(opened_on) == 1
            assert (opened_on[0] != threading.main_thread().name) is paged
            await submit(pilot, "/warnings")
            await settle(pilot, lambda: "Warnings and errors since the UI started" in text_of(app))
            rows = [
                line
                for line in text_of(app).splitlines()
                if re.match(r"\d\d:\d\d:\d\d ", line.strip())
            ]
            assert len(rows) == len(said)

    asyncio.run(main())
    assert sorted(listed(app)) == sorted((text, 1) for text in said)
    assert (path.parent / TORN_NAME).exists() is not paged  # moved aside: the log is whole


def test_each_open_tells_its_own_repairs_once_and_a_repaired_session_nothing(rig: Rig) -> None:
    first, _ = crashed_session(rig, "first", torn=False)
    second, second_path = crashed_session(rig, "second", torn=True)
    app = rig.app([], resume=first)
    closed = f"warning: {CLOSED} (2 repair events)"

    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready and len(app.warnings.entries) == 1)
            await submit(pilot, f"/resume {second}")
            await settle(pilot, lambda: f"Resumed session {second}." in text_of(app))
            await settle(pilot, lambda: len(app.warnings.entries) == 2)
            await submit(pilot, f"/resume {first}")  # repaired when first opened: nothing
            await settle(pilot, lambda: f"Resumed session {first}." in text_of(app))
            await pilot.pause()

    asyncio.run(main())
    # the same repair in two sessions is one row, counted twice; the torn line once
    assert listed(app) == [(closed, 2), (torn_warning(second_path), 1)]


@pytest.mark.parametrize("how", ["turn", "compact"])
def test_a_pass_a_crashed_process_left_open_is_said_once_and_shown_in_the_transcript(
    rig: Rig, how: Literal["turn", "compact"]
) -> None:
    session_id = killed_pass_session(rig.home, rig.workspace, how)
    said = (
        "warning: the last compaction pass (p1) did not finish: the process ended during it; "
        "the context is as it was before the pass"
    )
    note = "Compaction pass did not finish: the process ended during the pass"
    shown: list[list[str]] = []

    async def main(app: Any) -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: app.ready)
            await pilot.pause()
            shown.append([b.text for b in app.transcript.model.blocks if b.kind == "note"])

    first, again = rig.app([], resume=session_id), rig.app([], resume=session_id)
    asyncio.run(main(first))
    asyncio.run(main(again))  # closed when first opened: nothing to say, the note stays
    assert [entry for entry in listed(first) if "compaction" in entry[0]] == [(said, 1)]
    assert not [entry for entry in listed(again) if "compaction" in entry[0]]
    for notes in shown:
        assert notes.count(note) == 1
        if how == "turn":
            assert notes[-2:] == [note, "Turn interrupted: dsh stopped before it ended."]
