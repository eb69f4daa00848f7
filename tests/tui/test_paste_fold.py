"""A paste of more than 20 lines shows in the composer as one placeholder and is sent, logged
and remembered as its whole text; deleting any part of the placeholder deletes the paste."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

from dsh.config import dsh_home
from dsh.config.prompt_history import PromptHistory
from dsh.events import UserMessageEvent
from dsh.tui.paste_fold import PasteFolds
from tests.tui.conftest import Rig, settle, status_at_rest
from tests.tui.test_pilot import logged, run, text_of
from tests.tui.test_queue import first_turn_waiting, held_app
from tests.tui.test_virtual_scroll import screen_rows

BLOCK = "\n".join(f"row {i}" for i in range(200))


async def paste(pilot: Any, text: str) -> None:
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


def test_a_long_paste_shows_as_a_placeholder_and_is_sent_whole(rig: Rig):
    app = rig.app([{"text": "Read them all."}])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        await pilot.press("s", "e", "e", "space")
        await paste(pilot, BLOCK)
        await pilot.press("space", "o", "k")
        assert box.text == "see [pasted 200 lines] ok"
        assert box.value == f"see {BLOCK} ok"
        await pilot.press("enter")
        await settle(pilot, lambda: app.controller.session is not None)
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        sent = [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]
        assert sent == [f"see {BLOCK} ok"]
        assert box.text == "" and box.folds.texts == {}

    run(app, body)
    assert PromptHistory(dsh_home()).load() == [f"see {BLOCK} ok"]


def test_backspace_into_the_placeholder_deletes_the_paste_and_undo_brings_it_back(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        await pilot.press("a", "space")
        await paste(pilot, BLOCK)
        await paste(pilot, BLOCK + "\n")  # the same length again: a placeholder of its own
        assert box.text == "a [pasted 200 lines][pasted 200 lines #2]"
        await pilot.press("backspace")
        assert box.text == "a [pasted 200 lines]" and box.value == f"a {BLOCK}"
        await pilot.press("left", "left", "x")  # typed inside it: after it
        assert box.text == "a [pasted 200 lines]x" and box.value == f"a {BLOCK}x"
        await pilot.press("backspace", "left", "left", "delete")  # inside it: all of it
        assert box.text == "a " and box.value == "a "
        await pilot.press("ctrl+z")
        assert box.text == "a [pasted 200 lines]" and box.value == f"a {BLOCK}"

    run(app, body)


def test_text_typed_like_a_placeholder_is_sent_as_typed():
    folds = PasteFolds()
    assert folds.fold("a\nb\nc") is None
    assert folds.expand("[pasted 200 lines]") == "[pasted 200 lines]"
    label = folds.fold(BLOCK)
    assert label == "[pasted 200 lines]"
    assert folds.expand(f"{label}{label}") == BLOCK + BLOCK
    assert folds.widen(f"x{label}", 5, 6) == (1, 1 + len(label))
    assert folds.widen(f"x{label}", 0, 1) == (0, 1)
    assert folds.widen(f"x{label}y", 4, 4) == (1 + len(label), 1 + len(label))  # typed inside
    assert folds.widen(f"x{label}y", 1, 1) == (1, 1)  # typed just before: as it is


def test_a_long_paste_with_the_transcript_focused_folds_too(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        app.transcript.focus()
        await pilot.pause()
        await paste(pilot, BLOCK)
        await settle(pilot, lambda: app.prompt_box.has_focus)
        assert app.prompt_box.text == "[pasted 200 lines]" and app.prompt_box.value == BLOCK

    run(app, body)


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_a_paste_whose_line_breaks_are_carriage_returns_folds_and_sends_line_feeds(
    rig: Rig, newline: str
):
    # tmux, xterm, VTE and iTerm2 send a bracketed paste's line breaks as CR: such a paste
    # was one "line" to the fold, and filled the composer.
    app = rig.app([{"text": "Read them all."}])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        await paste(pilot, BLOCK.replace("\n", newline))
        assert box.text == "[pasted 200 lines]" and box.value == BLOCK
        await paste(pilot, f"{newline}two{newline}short lines")  # not folded: LF too
        assert box.value == f"{BLOCK}\ntwo\nshort lines"
        await pilot.press("enter")
        await settle(pilot, lambda: app.controller.session is not None)
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        sent = [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]
        assert sent == [f"{BLOCK}\ntwo\nshort lines"]

    run(app, body)


def test_a_prompt_refused_as_too_long_comes_back_with_its_placeholder(rig: Rig):
    # It came back as its 2,800 raw lines, filling the composer.
    huge = "\n".join(f"{i:05d} " + "x" * 80 for i in range(2800))
    app = rig.app([{"text": "never asked"}])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        for i in range(40):
            app.note(f"note {i}")
        await pilot.press(*"asks", "ctrl+j", *"on", "ctrl+j", *"five", "ctrl+j", *"lines")
        await pilot.press("ctrl+j", "a", "colon", "space")
        await paste(pilot, huge)
        draft = "asks\non\nfive\nlines\na: "
        assert box.text == f"{draft}[pasted 2800 lines]"
        await pilot.press("enter")
        await settle(pilot, lambda: "error: the prompt is" in text_of(app) and not app.running)
        await settle(pilot, lambda: box.text != "")
        assert box.text == f"{draft}[pasted 2800 lines]" and box.value == f"{draft}{huge}"
        await pilot.pause()  # the note saying why stays in view above the draft
        assert any(row.startswith("  error: the prompt is") for row in screen_rows(app.transcript))

    run(app, body)


def test_a_queued_draft_taken_back_keeps_its_placeholder(rig: Rig):
    app, _ = held_app(rig, [{"text": "never"}])

    async def body(pilot: Any) -> None:
        await first_turn_waiting(pilot)
        box = app.prompt_box
        await paste(pilot, BLOCK)
        await pilot.press("space", "o", "k", "enter")
        assert box.queued == f"{BLOCK} ok" and box.text == ""
        await pilot.press("escape")
        assert box.text == "[pasted 200 lines] ok" and box.value == f"{BLOCK} ok"
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)

    run(app, body)


def test_a_prompt_recalled_from_the_history_shows_its_long_paste_folded_and_sends_it_whole(
    rig: Rig,
):
    """Up brings back ``see [pasted 200 lines] ok``, as it was typed, not 200 raw lines; sent
    again, it is the whole text; a later dsh (the history on file) recalls it folded too, by
    up and by ctrl+r, and the draft put aside keeps its own paste."""
    app = rig.app([{"text": "Read them all."}, {"text": "Again."}])
    prompt = f"see {BLOCK} ok"

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        await pilot.press("s", "e", "e", "space")
        await paste(pilot, BLOCK)
        await pilot.press("space", "o", "k", "enter")
        await settle(pilot, lambda: app.controller.session is not None)
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.press("up")
        assert box.text == "see [pasted 200 lines] ok" and box.value == prompt
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        sent = [e.data.text() for e in logged(app) if isinstance(e, UserMessageEvent)]
        assert sent == [prompt, prompt]

    run(app, body)
    later = rig.app([])
    other = "\n".join(f"line {i}" for i in range(30))

    async def again(pilot: Any) -> None:
        box = later.prompt_box
        await paste(pilot, other)  # a draft of its own, put aside while the history shows
        await pilot.press("up")
        assert box.text == "see [pasted 200 lines] ok" and box.value == prompt
        await pilot.press("down")
        assert box.text == "[pasted 30 lines]" and box.value == other
        await pilot.press("ctrl+r", "s", "e", "e", "enter")
        assert box.text == "see [pasted 200 lines] ok" and box.value == prompt

    run(later, again)


def test_the_history_keeps_where_the_pastes_are_and_reads_an_entry_without_them(tmp_path):
    """An entry names its pastes' spans; one without (an older dsh, ``dsh web``) or with spans
    that do not fit its text is read as its text, shown unfolded: nothing is lost."""
    history = PromptHistory(tmp_path)
    history.append("old style")
    history.append(f"see {BLOCK} ok", ((4, 4 + len(BLOCK)),))
    path = tmp_path / "prompt_history.jsonl"
    with path.open("ab") as file:
        file.write(b'{"text": "bad spans", "time": 1.0, "pasted": [[3, 99]]}\n')
    again = PromptHistory(tmp_path)
    assert again.load() == ["old style", f"see {BLOCK} ok", "bad spans"]
    assert again.pasted == {f"see {BLOCK} ok": ((4, 4 + len(BLOCK)),)}
    folds = PasteFolds()
    assert (
        folds.fold_spans(f"see {BLOCK} ok", ((4, 4 + len(BLOCK)),)) == "see [pasted 200 lines] ok"
    )
    assert folds.spans_in(f"again {BLOCK}") == ((6, 6 + len(BLOCK)),)  # it knows that paste
