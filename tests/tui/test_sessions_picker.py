"""Finding sessions again: titles (the first prompt, or ``/title``, logged), the picker of
``/sessions`` and ``dsh --resume`` (title, age, size, workspace), and the rows it shows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from textual.app import App
from textual.widgets import OptionList, Static

from dsh.events import SessionTitleEvent
from dsh.surface import Session
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import SessionSummary
from dsh.tui.picker import (
    BUSY,
    BUSY_MARK,
    ELSEWHERE,
    TITLE_WIDTH,
    PickerApp,
    SessionPicker,
    age_text,
    matches,
    newest_first,
    picker_row,
)
from tests.helpers import append_chat_turn, writer_in_child_process
from tests.tui.conftest import SIZE, Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run, text_of

NOW = 1_800_000_000_000


def summary(
    id: str, title: str, *, updated: int, turns: int = 1, cwd: str = "/w"
) -> SessionSummary:
    return SessionSummary(id, cwd, updated - 1000, updated, title, turns, 4 * turns)


def test_ages_are_coarse_and_never_negative():
    assert age_text(NOW, NOW) == "just now"
    assert age_text(NOW - 59_000, NOW) == "just now"
    assert age_text(NOW - 5 * 60_000, NOW) == "5 min ago"
    assert age_text(NOW - 3 * 3_600_000, NOW) == "3 h ago"
    assert age_text(NOW - 2 * 86_400_000, NOW) == "2 d ago"
    assert age_text(NOW - 15 * 86_400_000, NOW) == "2 wk ago"
    assert age_text(NOW + 5000, NOW) == "just now"  # a clock that moved back


def test_a_row_shows_title_age_size_and_workspace_newest_first():
    old = summary("a", "Fix the failing test", updated=NOW - 2 * 86_400_000, turns=3)
    new = summary("b", "Write the docs", updated=NOW - 60_000)
    assert [s.id for s in newest_first([old, new])] == ["b", "a"]
    row = picker_row(old, NOW).plain
    assert row.startswith("Fix the failing test")
    assert "2 d ago" in row and "3 turns" in row and row.rstrip().endswith("/w")


def test_rows_line_up_in_terminal_cells_whatever_their_titles_characters():
    """An emoji or a CJK character takes two cells: counting characters pushed every later
    column of that row right."""
    titles = ["plain title", "fix 🐛 in parser 🎉", "修复解析器中的错误", "🎉" * 40, "a" * 60]
    rows = [picker_row(summary(str(i), t, updated=NOW), NOW).plain for i, t in enumerate(titles)]
    ages = {cell_len(row[: row.index("just now")]) for row in rows}
    assert len(ages) == 1  # the age column starts at the same cell in every row
    assert all(cell_len(row[: row.index("just now")]) <= TITLE_WIDTH + 13 for row in rows)
    assert "…" in rows[3] and "…" in rows[4]


def test_a_row_shows_a_titles_terminal_escapes_as_escapes():
    # a summary that did not come through the listing (say, a title cached by an older dsh)
    hostile = summary("a", "pasted \x1b]0;pwned\x07\x1b[31m\nred", updated=NOW)
    row = picker_row(hostile, NOW).plain
    assert row.startswith("pasted \\x1b]0;pwned\\x07\\x1b[31m red")
    assert "\x1b" not in row and "\x07" not in row and "\n" not in row


def test_title_renames_the_session_in_the_log_and_survives_reopening(rig: Rig):
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/title")
        assert "No session yet" in text_of(app)
        await run_prompt(pilot, "Fix the flaky login test please")
        await submit(pilot, "/title")
        assert "Title: Fix the flaky login test please" in text_of(app)
        await submit(pilot, "/title login flake")
        assert "Session titled: login flake" in text_of(app)

    run(app, body)
    (header,) = rig.store.list()
    with Session.open(rig.store, header.id) as session:
        titles = [e.data.title for e in session.events if isinstance(e, SessionTitleEvent)]
    assert titles == ["login flake"]
    assert session_summaries(rig.store)[0].title == "login flake"


def test_sessions_opens_the_picker_and_enter_resumes_the_highlighted_session(rig: Rig):
    with Session.create(rig.store, cwd=str(rig.workspace)) as other:
        append_chat_turn(other, "the other session's question", "its answer")
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "a new question")
        current = app.controller.session.id
        await submit(pilot, "/sessions")
        await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert [s.id for s in picker.summaries] == [current, other.id]  # newest first
        await pilot.press("down", "enter")
        await settle(pilot, lambda: app.controller.session.id == other.id)
        assert "the other session's question" in text_of(app)

    run(app, body)


def test_esc_closes_the_picker_and_keeps_the_session(rig: Rig):
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "only question")
        current = app.controller.session.id
        await submit(pilot, "/sessions")
        await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, SessionPicker))
        assert app.controller.session.id == current

    run(app, body)


def test_the_standalone_picker_returns_the_chosen_id():
    rows = [
        summary("old", "older work", updated=NOW - 86_400_000),
        summary("new", "new", updated=NOW),
    ]
    app = PickerApp(rows, now_ms=NOW)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            await pilot.press("down", "enter")

    asyncio.run(main())
    assert app.return_value == "old"


def test_picker_snapshot(snap_compare):
    rows = [
        summary("s1", "Fix the failing test in calc.py", updated=NOW - 3_600_000, turns=4),
        summary("s2", "Add median() with a test", updated=NOW - 3 * 86_400_000, turns=2),
        summary("s3", "(no prompt yet)", updated=NOW - 20 * 86_400_000, turns=0, cwd="/tmp/x"),
    ]
    app = PickerApp(rows, now_ms=NOW)

    async def shown(pilot: Any) -> None:
        await settle(pilot, lambda: isinstance(app.screen, SessionPicker))

    assert snap_compare(app, terminal_size=SIZE, run_before=shown)


def in_workspace(store: Any, cwd: Path, question: str) -> str:
    """A session recorded in ``cwd`` with one turn asking ``question``; its id."""
    with Session.create(store, cwd=str(cwd)) as session:
        append_chat_turn(session, question, "an answer")
        return session.id


def rows(picker: SessionPicker) -> list[tuple[str, bool]]:
    """(session id, can be chosen) of each row the picker shows, top to bottom."""
    options = picker.query_one(OptionList)
    listed = [options.get_option_at_index(i) for i in range(options.option_count)]
    return [(str(option.id), not option.disabled) for option in listed]


def highlighted(picker: SessionPicker) -> str | None:
    options = picker.query_one(OptionList)
    index = options.highlighted
    return None if index is None else str(options.get_option_at_index(index).id)


def test_sessions_lists_this_workspaces_sessions_first_and_greys_the_others(
    rig: Rig, tmp_path: Path
):
    """A session of another workspace cannot be opened here (``/resume`` refuses it: its
    tools would run in the wrong directory), so the picker does not offer it: it comes after
    this workspace's, greyed, never highlighted, with a line saying how to open it."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    older_here = in_workspace(rig.store, rig.workspace, "an older question here")
    away = in_workspace(rig.store, other, "a question asked elsewhere")
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "the newest question")
        current = app.controller.session.id
        await submit(pilot, "/sessions")
        await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert rows(picker) == [(current, True), (older_here, True), (away, False)]
        title = str(picker.query_one("#picker-title", Static).render())
        assert title.endswith("(2 here, 1 elsewhere)")
        assert picker.query_one("#picker-elsewhere", Static).display
        assert str(picker.query_one("#picker-elsewhere", Static).render()) == ELSEWHERE
        await pilot.press("down", "down", "down")  # the greyed row is never reached
        assert highlighted(picker) == older_here
        await pilot.press("enter")
        await settle(pilot, lambda: app.controller.session.id == older_here)
        assert "an older question here" in text_of(app)

    run(app, body)


def test_typing_filters_the_sessions_backspace_widens_and_enter_opens_the_match(rig: Rig):
    fix = in_workspace(rig.store, rig.workspace, "Fix the flaky login test")
    docs = in_workspace(rig.store, rig.workspace, "Write the docs for login")
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "something else")
        current = app.controller.session.id
        await submit(pilot, "/sessions")
        await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        filter_line = picker.query_one("#picker-filter", Static)
        assert str(filter_line.render()) == "Type to filter by title or id."
        assert [id for id, _ in rows(picker)] == [current, docs, fix]
        await pilot.press(*"LOGIN")  # case aside
        assert [id for id, _ in rows(picker)] == [docs, fix]
        assert highlighted(picker) == docs
        await pilot.press("space", *"flak")  # every word must be in the title or id
        assert [id for id, _ in rows(picker)] == [fix]
        assert str(filter_line.render()) == "Filter: LOGIN flak · 1 of 3 · backspace widens"
        await pilot.press("z")
        assert rows(picker) == [] and highlighted(picker) is None
        assert "no session matches" in str(filter_line.render())
        await pilot.press("enter")  # nothing to open: the picker stays
        assert app.screen is picker
        for _ in "LOGIN flakz":
            await pilot.press("backspace")
        assert [id for id, _ in rows(picker)] == [current, docs, fix]
        await pilot.press(*fix[-6:])  # its id finds it too
        assert [id for id, _ in rows(picker)] == [fix]
        await pilot.press("enter")
        await settle(pilot, lambda: app.controller.session.id == fix)
        assert "Fix the flaky login test" in text_of(app)

    run(app, body)


def test_a_filter_matches_every_word_in_the_title_or_id():
    row = summary("abc123", "Fix the Flaky login test", updated=NOW)
    assert matches(row, "") and matches(row, "flaky LOGIN") and matches(row, "abc1 fix")
    assert not matches(row, "flaky signup") and not matches(row, "xyz")


def test_the_standalone_picker_filters_and_offers_every_workspace():
    """``dsh --resume`` opens a session in its own workspace: nothing is greyed there."""
    rows_ = [
        summary("old", "older work", updated=NOW - 86_400_000, cwd="/a"),
        summary("new", "newer work", updated=NOW, cwd="/b"),
    ]
    app = PickerApp(rows_, now_ms=NOW)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            picker = app.screen
            assert rows(picker) == [("new", True), ("old", True)]
            assert not picker.query_one("#picker-elsewhere", Static).display
            await pilot.press(*"older")
            await pilot.press("enter")

    asyncio.run(main())
    assert app.return_value == "old"


def test_the_standalone_picker_stays_open_saying_why_a_chosen_session_cannot_be_opened():
    """``dsh --resume``: a session this ``dsh`` cannot open (a scripted one without its
    ``--script``) is refused where it is chosen; the reason shows under the rows, the picker
    stays for another choice, and typing a filter clears the reason with the rows it was said
    over."""
    rows_ = [
        summary("scripted", "scripted work", updated=NOW),
        summary("keyed", "keyed work", updated=NOW - 60_000),
    ]
    asked: list[str] = []

    def refuse(chosen: str) -> str | None:
        asked.append(chosen)
        return "the scripted provider needs --script FILE" if chosen == "scripted" else None

    app = PickerApp(rows_, now_ms=NOW, refuse=refuse)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            picker = app.screen
            refused = picker.query_one("#picker-refused", Static)
            assert not refused.display
            await pilot.press("enter")
            await settle(pilot, lambda: refused.display)
            assert str(refused.render()) == (
                "session scripted cannot be opened: the scripted provider needs --script FILE"
                " — choose another, or esc"
            )
            assert app.screen is picker and app.is_running
            await pilot.press(*"work")
            assert not refused.display and highlighted(picker) == "scripted"
            await pilot.press("down", "enter")

    asyncio.run(main())
    assert asked == ["scripted", "keyed"] and app.return_value == "keyed"


class _Picking(App[None]):
    """A picker as ``/sessions`` shows it, on its own (what is greyed decided by ``here``)."""

    def __init__(self, picker: SessionPicker) -> None:
        super().__init__()
        self.picker = picker

    def on_mount(self) -> None:
        self.push_screen(self.picker)


def test_a_filtered_picker_with_other_workspaces_snapshot(snap_compare):
    rows_ = [
        summary("s1", "Fix the failing test in calc.py", updated=NOW - 3_600_000, turns=4),
        summary("s2", "Add median() with a test", updated=NOW - 3 * 86_400_000, turns=2),
        summary("s3", "Fix the build script", updated=NOW - 60_000, turns=1, cwd="/tmp/x"),
        summary("s4", "Write the docs", updated=NOW - 600_000, turns=3),
    ]
    picker = SessionPicker(
        rows_,
        current="s1",
        now_ms=NOW,
        heading="Open a session",
        opens_here=lambda s: s.cwd == "/w",
    )
    app = _Picking(picker)

    async def filtered(pilot: Any) -> None:
        await settle(pilot, lambda: app.screen is picker)
        await pilot.press(*"fix")
        await settle(pilot, lambda: len(rows(picker)) == 2)

    assert snap_compare(app, terminal_size=SIZE, run_before=filtered)


def test_sessions_marks_a_session_another_process_holds_and_refuses_it_in_place(rig: Rig):
    """``/sessions`` while a second process (a ``dsh run`` in its turn, say) holds a session of
    this workspace for writing: its row is marked busy, with a line saying what that means;
    choosing it says who holds it and the picker stays. Once that process is gone the same
    choice opens it, its mark gone."""
    held = in_workspace(rig.store, rig.workspace, "a question another process goes on with")
    app = rig.app([{"text": "ok"}])
    writer = writer_in_child_process(rig.home, "jsonl", held, ["dsh", "run", "--session", held])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "the newest question")
        current = app.controller.session.id
        pid = writer.__enter__()
        try:
            await submit(pilot, "/sessions")
            await settle(pilot, lambda: isinstance(app.screen, SessionPicker))
            picker = app.screen
            assert rows(picker) == [(current, True), (held, True)]
            assert BUSY_MARK in prompt_of(picker, held) and BUSY_MARK not in prompt_of(
                picker, current
            )
            assert str(picker.query_one("#picker-title", Static).render()).endswith(
                "(2 sessions, 1 busy)"
            )
            assert str(picker.query_one("#picker-busy", Static).render()) == BUSY
            refused = picker.query_one("#picker-refused", Static)
            await pilot.press("down", "enter")
            await settle(pilot, lambda: refused.display)
            assert str(refused.render()) == (
                f"session {held} cannot be opened: it is open for writing by process {pid} "
                "(dsh run), which holds it until its turn ends: try again then — choose "
                "another, or esc"
            )
            assert app.screen is picker and app.controller.session.id == current
        finally:
            writer.__exit__(None, None, None)
        await pilot.press("enter")
        await settle(pilot, lambda: app.controller.session.id == held)
        assert picker.busy == set()  # looked at again as it was chosen
        assert "a question another process goes on with" in text_of(app)

    run(app, body)


def prompt_of(picker: SessionPicker, session_id: str) -> str:
    return str(picker.query_one(OptionList).get_option(session_id).prompt)
