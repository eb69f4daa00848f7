"""The composer: multi-line drafts, pastes kept whole, completion, clearing a draft, and
scrolling the transcript from the prompt."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

from dsh.agent.mentions import mentioned_paths
from dsh.events import UserMessageEvent
from dsh.tui.hint_line import composer_keys, fit_hints
from dsh.tui.prompt import complete_command, complete_path
from tests.tui.conftest import SIZE, ManualClock, Rig, run_prompt, settle, status_at_rest
from tests.tui.test_pilot import logged, run, text_of


def sent(app: Any) -> list[str]:
    if app.controller.session is None:
        return []
    return [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]


async def finish(pilot: Any) -> None:
    app = pilot.app
    await settle(pilot, lambda: app.controller.session is not None)
    await settle(pilot, lambda: not app.running and status_at_rest(app))


KEYS = "enter send · ctrl+j newline · tab completes · esc clears · pgup/pgdn scroll · /help"
"""The hint line under the composer, idle, at the tests' 100 columns."""


def test_a_pasted_three_line_block_is_sent_whole(rig: Rig):
    app = rig.app([{"text": "Got all three."}])

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste("line one\nline two\nline three"))
        await pilot.pause()
        assert app.prompt_box.value == "line one\nline two\nline three"
        await pilot.press("enter")
        await finish(pilot)
        assert sent(app) == ["line one\nline two\nline three"]
        assert "line three" in text_of(app)
        assert app.prompt_box.value == ""

    run(app, body)


def test_a_large_paste_is_kept_whole(rig: Rig):
    app = rig.app([])
    block = "\n".join(f"row {i}" for i in range(2000))

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste(block))
        await pilot.pause()
        assert app.prompt_box.value == block

    run(app, body)


def test_shift_enter_and_ctrl_j_insert_newlines_and_enter_sends(rig: Rig):
    app = rig.app([{"text": "ok"}])

    async def body(pilot: Any) -> None:
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.prompt_box.value == "a\nb\nc"
        assert sent(app) == []
        await pilot.press("enter")
        await finish(pilot)
        assert sent(app) == ["a\nb\nc"]

    run(app, body)


def test_the_hint_line_says_how_to_send_and_break_lines(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        assert str(app.query_one("#hint").render()) == KEYS

    run(app, body)


def test_up_walks_history_only_from_the_first_line(rig: Rig):
    app = rig.app([{"text": "one"}])

    async def body(pilot: Any) -> None:
        app.prompt_box.remember("earlier prompt")
        await pilot.press("x", "ctrl+j", "y")
        await pilot.press("up")  # from line 2: the cursor moves up a line
        assert app.prompt_box.value == "x\ny"
        await pilot.press("up")  # on line 1: the earlier prompt
        assert app.prompt_box.value == "earlier prompt"
        await pilot.press("down")
        assert app.prompt_box.value == "x\ny"

    run(app, body)


def test_tab_completes_a_unique_slash_command(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await pilot.press("/", "c", "o", "m", "tab")
        assert app.prompt_box.value == "/compact "
        assert app.prompt_box.has_focus

    run(app, body)


def test_tab_lists_several_candidates_in_the_hint_line(rig: Rig):
    (rig.workspace / "notes-old.txt").write_text("x")
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await pilot.press("r", "e", "a", "d", "space", "@", "n", "tab")
        assert app.prompt_box.value == "read @notes"
        assert str(app.query_one("#hint").render()) == "@notes-old.txt  @notes.txt"
        await pilot.press(".", "tab")
        assert app.prompt_box.value == "read @notes.txt "

    run(app, body)


def test_complete_path_walks_folders_and_stays_in_the_workspace(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    found = complete_path("see @sr", 7, tmp_path)
    assert found is not None and found.candidates == ("@src/",)
    found = complete_path("@src/pkg/m", 10, tmp_path)
    assert found is not None and found.candidates == ("@src/pkg/mod.py",)
    assert complete_path("@../", 4, tmp_path) is None
    assert complete_path("@", 1, tmp_path) is not None
    assert "@.hidden" not in complete_path("@", 1, tmp_path).candidates  # type: ignore[union-attr]
    assert complete_path("no at here", 10, tmp_path) is None


def test_a_path_with_a_space_completes_quoted_so_the_mention_attaches_it(tmp_path):
    """``@ünï`` + tab inserted ``@ünï cödé.txt`` bare: the mention ended at the space and
    attached nothing, silently."""
    (tmp_path / "ünï cödé.txt").write_text("héllo\n")
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "a b.py").write_text("")
    found = complete_path("look at @ünï", 12, tmp_path)
    assert found is not None and found.candidates == ('@"ünï cödé.txt"',)
    draft = "look at " + found.candidates[0]
    assert mentioned_paths(draft, tmp_path) == ["ünï cödé.txt"]
    found = complete_path("@my", 3, tmp_path)
    assert found is not None and found.candidates == ('@"my dir/',)  # left open: go on inside
    found = complete_path('see @"my dir/a', 14, tmp_path)
    assert found is not None and (found.start, found.candidates) == (4, ('@"my dir/a b.py"',))
    assert complete_path('say "@"my dir/a', 15, tmp_path) is not None  # after a quote: a mention
    assert complete_path('x@"my dir/a', 11, tmp_path) is None  # inside a word: not a mention
    assert complete_path('@"my dir/a b.py" and @"my', 25, tmp_path) is not None


def test_complete_command_only_at_the_start_of_a_one_word_draft():
    assert complete_command("/re", ["resume", "help"]) is not None
    assert complete_command("/re x", ["resume"]) is None
    assert complete_command("re", ["resume"]) is None
    assert complete_command("/zz", ["resume"]) is None


def test_esc_and_ctrl_c_clear_a_draft_when_idle(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        for key in ("escape", "ctrl+c"):
            await pilot.press("d", "r", "a", "f", "t")
            assert app.prompt_box.value == "draft"
            await pilot.press(key)
            assert app.prompt_box.value == ""
            assert app.is_running

    run(app, body)


def test_a_narrow_hint_line_leaves_out_whole_items_least_needed_first():
    # At 80 columns the line used to be cut in the middle: "… tab completes / and @path · esc".
    width = 80 - 2  # the line's padding
    assert fit_hints(composer_keys(), width) == (
        "enter send · ctrl+j newline · tab completes · esc clears · pgup/pgdn scroll"
    )
    assert fit_hints(composer_keys("cancels"), width) == (
        "enter send · ctrl+j newline · tab completes · esc cancels the turn"
    )
    assert fit_hints(composer_keys("unqueues"), width) == (
        "enter send · ctrl+j newline · tab completes · esc takes back the queued draft"
    )
    assert fit_hints(composer_keys(), 20) == "enter send"
    assert fit_hints(composer_keys(), 5) == "enter send"  # the first item at least


def test_an_80_by_24_screen_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": "The tests pass now.\n\n- `add` adds\n- `median` sorts first"}])

    async def answered(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready)
        await run_prompt(pilot, "fix the tests and add median()")

    assert snap_compare(app, terminal_size=(80, 24), run_before=answered)


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
def test_a_cleared_draft_comes_back_with_ctrl_z(rig: Rig, key: str):
    # esc also cancels a turn: pressed just after one ended, it used to wipe the draft for good.
    app = rig.app([])

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste("a long draft\nover two lines"))
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert app.prompt_box.value == ""
        assert "ctrl+z brings it back" in str(app.query_one("#hint").render())
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert app.prompt_box.value == "a long draft\nover two lines"
        assert str(app.query_one("#hint").render()) == KEYS

    run(app, body)


def test_page_keys_scroll_the_transcript_from_the_prompt(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        for i in range(80):
            app.note(f"note {i}")
        await pilot.pause()
        view = app.transcript
        view.scroll_end(animate=False)
        await pilot.pause()
        bottom = view.scroll_y
        assert bottom > 0 and app.prompt_box.has_focus
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < bottom
        await pilot.press("home")
        await pilot.pause()
        assert view.scroll_y == 0
        await pilot.press("end")
        await pilot.pause()
        assert view.scroll_y == bottom
        await pilot.press("pageup", "pagedown")
        await pilot.pause()
        assert view.scroll_y == bottom
        assert app.prompt_box.has_focus

    run(app, body, SIZE)


def test_multi_line_draft_and_completion_hint_snapshot(snap_compare, rig: Rig):
    (rig.workspace / "notes-old.txt").write_text("x")
    app = rig.app([])

    async def draft(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready)
        app.post_message(events.Paste("first pasted line\nsecond pasted line\nthird: see "))
        await pilot.pause()
        await pilot.press("@", "n", "tab")
        await settle(pilot, lambda: "@notes.txt" in str(app.query_one("#hint").render()))
        await settle(pilot, lambda: status_at_rest(app))

    assert snap_compare(app, terminal_size=SIZE, run_before=draft)


def test_commands_that_answer_at_once_still_work_while_a_turn_runs(rig: Rig):
    app = rig.app([{"text": "far too late", "delayMs": 3_600_000}])

    async def body(pilot: Any) -> None:
        await pilot.press("f", "enter")
        await settle(pilot, lambda: app.running and app.controller.waiting_since is not None)
        app.prompt_box.value = "/model"
        await pilot.press("enter")
        await pilot.pause()
        assert app.prompt_box.value == ""
        assert "Model: scripted" in text_of(app)
        await pilot.press("escape")
        await finish(pilot)

    run(app, body)


def test_typing_or_pasting_with_the_transcript_focused_goes_to_the_prompt(rig: Rig):
    # Tab with nothing to complete moves the focus to the transcript; keys typed there
    # (and a paste) used to vanish.
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await pilot.press("h", "i", "tab")
        assert app.focused is app.transcript
        await pilot.press("!", "x")
        assert app.focused is app.prompt_box
        assert app.prompt_box.value == "hi!x"
        await pilot.press("tab")
        assert app.focused is app.transcript
        app.post_message(events.Paste("\npasted\ntext"))
        await pilot.pause()
        assert app.prompt_box.value == "hi!x\npasted\ntext"
        assert app.focused is app.prompt_box

    run(app, body)


def test_a_pasted_indented_block_keeps_its_first_lines_indentation(rig: Rig):
    """Only leading blank lines and trailing whitespace go: a prompt that starts with an
    indented line of code is sent as pasted."""
    app = rig.app([{"text": "seen"}])

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste("\n    x = 1\n    y = 2\n\n"))
        await pilot.pause()
        await pilot.press("enter")
        await finish(pilot)
        assert sent(app) == ["    x = 1\n    y = 2"]

    run(app, body)


def test_a_path_or_a_double_slash_is_a_prompt_and_an_unknown_command_keeps_the_draft(rig: Rig):
    app = rig.app([{"text": "first"}, {"text": "second"}])

    async def body(pilot: Any) -> None:
        app.prompt_box.value = "/nonsense now"
        await pilot.press("enter")
        await pilot.pause()
        assert app.prompt_box.value == "/nonsense now"  # kept, to mend
        assert "Unknown command /nonsense" in text_of(app)
        app.prompt_box.value = "/usr/lib/libfoo.so is missing"
        await pilot.press("enter")
        await finish(pilot)
        app.prompt_box.value = "//compact is a command name"
        await pilot.press("enter")
        await finish(pilot)
        assert sent(app) == ["/usr/lib/libfoo.so is missing", "/compact is a command name"]

    run(app, body)


def test_a_terminal_escape_pasted_or_completed_shows_and_is_sent_as_its_escape(rig: Rig):
    """The draft shows what it sends: a paste's escape (a window title, a bidi override) as
    ``\\x1b``, a line break and a tab kept; a completed file name the same way, the cursor
    after it."""
    (rig.workspace / "odd\x1b[2J\u202e.txt").write_text("x")
    app = rig.app([{"text": "Seen."}])

    async def body(pilot: Any) -> None:
        app.post_message(events.Paste("title \x1b]0;owned\x07\n\tnext\u202e"))
        await pilot.pause()
        assert app.prompt_box.value == "title \\x1b]0;owned\\x07\n\tnext\\u202e"
        await pilot.press("enter")
        await finish(pilot)
        assert sent(app) == ["title \\x1b]0;owned\\x07\n\tnext\\u202e"]
        await pilot.press("@", "o", "tab", "x")
        assert app.prompt_box.value == "@odd\\x1b[2J\\u202e.txt x"

    run(app, body)


def test_ctrl_c_twice_on_an_empty_idle_draft_leaves_dsh(rig: Rig):
    app = rig.app([])
    clock = app.clock
    assert isinstance(clock, ManualClock)  # the second press's timing never races
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))[1]  # type: ignore[method-assign]

    async def body(pilot: Any) -> None:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert said == ["Nothing is running. Press ctrl+c again to leave dsh (or ctrl+q, /quit)."]
        clock.now += 1.5
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running

    run(app, body)


def test_a_second_ctrl_c_after_the_pause_or_after_clearing_a_draft_does_not_leave(rig: Rig):
    app = rig.app([])
    clock = app.clock
    assert isinstance(clock, ManualClock)  # the second press's timing never races

    async def body(pilot: Any) -> None:
        await pilot.press("ctrl+c")
        clock.now += 2.5  # too late: it only says again how to leave
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        await pilot.press("d", "r", "a", "f", "t", "ctrl+c")  # clears the draft
        assert app.prompt_box.value == ""
        await pilot.press("ctrl+c")  # the first press on the empty draft
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running

    run(app, body)
