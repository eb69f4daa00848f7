"""Find in the transcript (ctrl+f): matches as shown, steps through them, opens a card whose
result holds the match, highlights the matching row on screen, and esc gives the prompt back."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsh.events import AssistantMessage, StepEnd, StepStart, TurnEnd, TurnEndReason, TurnStart
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.transcript import PassDetails, ToolResultItem
from dsh.tui import DshApp
from dsh.tui import find as find_module
from dsh.tui.blocks import Block, row_text
from dsh.tui.find import FindBar, SearchIndex, first_at_or_after, matching_blocks
from dsh.tui.prompt import PromptBox
from dsh.tui.transcript_view import TranscriptView
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    next_turn,
    user_message,
)
from tests.tui.conftest import SETTLE_TIMEOUT, SIZE, Rig, settle, status_at_rest
from tests.tui.test_virtual_scroll import screen_rows

TURNS = 60


def found_session(store: JsonlStore, cwd: str) -> str:
    """Sixty turns; "Kestrel" is said in turns 3 and 40, and only a tool result of turn 10
    holds "walrus" (its card is collapsed)."""
    session = Session.create(store, cwd=cwd)
    for i in range(TURNS):
        if i == 10:
            result = "line one\nline two\nthe walrus config\nline four\n"
            append_tool_turn(session, f"prompt {i}", [("read_file", "{}", result)], f"reply {i}")
        else:
            said = " about Kestrel" if i in (3, 40) else ""
            append_chat_turn(session, f"prompt {i}", f"reply {i}{said}")
    session.close()
    return session.id


def run(app: DshApp, body: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await pilot.pause()
            await body(pilot, app.transcript, app.query_one(FindBar))

    asyncio.run(main())


def status(bar: FindBar) -> str:
    return str(bar.query_one("#find-status").render())


def highlighted(view: TranscriptView) -> str:
    """The text of the row a find highlights, if it is on screen."""
    assert view.found is not None
    index, row = view.found
    return row_text(view.rows_of(index)[row])


async def type_needle(pilot: Any, text: str) -> None:
    for key in text:
        await pilot.press(key)
    await pilot.pause()


def test_matching_is_case_insensitive_over_what_a_block_can_show():
    user = Block("user", 1, message=assistant_message("Fix the KESTREL bug"))
    marker = Block("marker", 2, pass_id="p")
    thinking = Block("assistant", 3, cached_text="done", cached_reasoning="kestrel again")
    blocks = [user, marker, thinking]
    assert matching_blocks(blocks, "kestrel", show_reasoning=False) == [0]
    assert matching_blocks(blocks, "Kestrel", show_reasoning=True) == [0, 2]
    assert matching_blocks(blocks, "", show_reasoning=True) == []
    assert first_at_or_after([3, 9, 20], 4) == 1
    assert first_at_or_after([3, 9, 20], 21) == 0  # wraps round to the first match


WORDS = st.sampled_from(["Kestrel", "kestrel", "walrus", "ß", "ss", "Ünï", "x"])
TEXTS = st.lists(WORDS, max_size=4).map(" ".join)
STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["append", "tool", "result", "replace", "truncate", "marker", "summary", "find"]
        ),
        TEXTS,
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(steps=STEPS, reasoning=st.lists(st.booleans(), min_size=30, max_size=30))
@example(steps=[("tool", ""), ("result", ""), ("result", "Kestrel")], reasoning=[False] * 30)
def test_the_search_index_always_equals_a_fresh_search(steps, reasoning):
    """Blocks appended, a card's result arriving, a pass logging another summary after its
    marker, the model reloaded (blocks replaced or cut), reasoning shown or hidden: the kept
    index answers as a fresh search does."""
    index, blocks, details = SearchIndex(), [], {}
    for n, (op, text) in enumerate(steps):
        if op == "marker":
            blocks.append(Block("marker", n, pass_id=f"p{n}"))
            details[f"p{n}"] = PassDetails(summaries=[("index", text)])
        elif op == "summary" and details:
            details[max(details)].summaries.append(("state", text))
        if op == "append":
            blocks.append(Block("assistant", n, cached_text=text, cached_reasoning=text[::-1]))
        elif op == "tool":
            blocks.append(Block("tool", n, label="read_file", arguments=f'{{"q": "{text}"}}'))
        elif op == "result" and blocks and blocks[-1].kind == "tool":
            blocks[-1].result = ToolResultItem(seq=n, call_id="c", text=text, is_error=False)
        elif op == "replace" and blocks:
            blocks[n % len(blocks)] = Block("user", n, cached_text=text, cached_reasoning="")
        elif op == "truncate":
            del blocks[len(blocks) // 2 :]
        for needle in (text, text.upper(), "kestrel"):
            shown = reasoning[n]
            fresh = matching_blocks(blocks, needle, show_reasoning=shown, details=details)
            kept = index.matching(blocks, needle, show_reasoning=shown, details=details)
            assert kept == fresh


@settings(max_examples=150, deadline=None)
@given(
    steps=STEPS,
    chunks=st.lists(st.integers(1, 4), min_size=30, max_size=30),
    reasoning=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_an_index_folded_in_parts_while_blocks_change_finds_what_a_fresh_search_finds(
    steps, chunks, reasoning
):
    """The find bar's thread folds the stale blocks a part at a time while the transcript
    goes on changing (``stale`` then ``refresh``, no key reading the index meanwhile): once
    a search folds what is still stale, it finds what a fresh search over the blocks finds."""
    index, blocks, details = SearchIndex(), [], {}
    stale: list[int] = []
    for n, (op, text) in enumerate(steps):
        shown = reasoning[n]
        if not stale:
            stale = index.stale(blocks, show_reasoning=shown, details=details)
        part, stale = stale[: chunks[n]], stale[chunks[n] :]
        index.refresh(blocks, part, show_reasoning=shown, details=details)
        if op == "marker":
            blocks.append(Block("marker", n, pass_id=f"p{n}"))
            details[f"p{n}"] = PassDetails(summaries=[("index", text)])
        elif op == "summary" and details:
            details[max(details)].summaries.append(("state", text))
        elif op == "append":
            blocks.append(Block("assistant", n, cached_text=text, cached_reasoning=text[::-1]))
        elif op == "tool":
            blocks.append(Block("tool", n, label="read_file", arguments=f'{{"q": "{text}"}}'))
        elif op == "result" and blocks and blocks[-1].kind == "tool":
            blocks[-1].result = ToolResultItem(seq=n, call_id="c", text=text, is_error=False)
        elif op == "replace" and blocks:
            blocks[n % len(blocks)] = Block("user", n, cached_text=text, cached_reasoning="")
        elif op == "truncate":
            del blocks[len(blocks) // 2 :]
        if op == "find":
            for needle in (text, text.upper(), "kestrel"):
                fresh = matching_blocks(blocks, needle, show_reasoning=shown, details=details)
                kept = index.matching(blocks, needle, show_reasoning=shown, details=details)
                assert kept == fresh
            stale = []


def test_a_long_transcript_is_folded_in_a_thread_while_keys_go_on_echoing(
    rig: Rig, monkeypatch: Any
):
    """The first key in a long session (more blocks to fold than ``FOLDED_ON_THE_LOOP``)
    leaves the folding to a thread: the bar says ``searching…`` and takes more keys
    meanwhile; once folded, it finds what a search on the event loop finds."""
    monkeypatch.setattr(find_module, "FOLDED_ON_THE_LOOP", 0)
    release = threading.Event()
    threads: list[str] = []
    refresh = SearchIndex.refresh

    def held(self: SearchIndex, *args: Any, **kwargs: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            threads.append(threading.current_thread().name)
            assert release.wait(SETTLE_TIMEOUT)
        refresh(self, *args, **kwargs)

    monkeypatch.setattr(SearchIndex, "refresh", held)
    app = rig.app([], resume=found_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, "kes")
        await settle(pilot, lambda: bool(threads))
        assert status(bar) == find_module.SEARCHING and view.found is None
        await type_needle(pilot, "trel")  # the event loop is free: the keys are taken
        assert bar.needle == "kestrel" and status(bar) == find_module.SEARCHING
        await pilot.press("enter")  # stepping waits for the folding too
        assert status(bar) == find_module.SEARCHING and len(threads) == 1
        release.set()
        await settle(pilot, lambda: status(bar) == "1 of 2")
        assert highlighted(view) == "● reply 3 about Kestrel"
        await type_needle(pilot, "x")  # folded: later keys search on the event loop
        assert status(bar) == "no match" and len(threads) == 1

    run(app, body)


def test_ctrl_f_finds_steps_and_wraps_and_esc_gives_the_prompt_back(rig: Rig):
    app = rig.app([], resume=found_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        assert not bar.display
        await pilot.press("ctrl+f")
        assert bar.display and bar.query_one("#find-input").has_focus
        assert "esc back to the prompt" in str(app.query_one("#hint").render())
        await type_needle(pilot, "kestrel")
        # opened at the end (turn 59): the search wraps round to the first match, turn 3
        assert status(bar) == "1 of 2"
        assert highlighted(view) == "● reply 3 about Kestrel"
        assert "● reply 3 about Kestrel" in screen_rows(view)
        await pilot.press("enter")
        await pilot.pause()
        assert status(bar) == "2 of 2" and "● reply 40 about Kestrel" in screen_rows(view)
        await pilot.press("down")  # past the last match: back to the first
        await pilot.pause()
        assert status(bar) == "1 of 2" and "● reply 3 about Kestrel" in screen_rows(view)
        await pilot.press("up")
        await pilot.pause()
        assert status(bar) == "2 of 2"
        await type_needle(pilot, "x")
        assert status(bar) == "no match" and view.found is None
        await pilot.press("escape")
        await pilot.pause()
        assert not bar.display and view.found is None
        assert app.query_one(PromptBox).has_focus
        assert str(app.query_one("#hint").render()).startswith("enter send · ")
        assert not app.running  # esc closed the bar; it did not reach the app's cancel

    run(app, body)


def test_a_match_in_a_collapsed_tool_result_opens_the_card_at_its_row(rig: Rig):
    app = rig.app([], resume=found_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, "WALRUS")
        assert status(bar) == "1 of 1"
        assert view.found is not None
        card = view.model.blocks[view.found[0]]
        assert card.kind == "tool" and card.expanded
        assert highlighted(view).strip() == "the walrus config"
        assert "the walrus config" in [r.strip() for r in screen_rows(view)]

    run(app, body)


def test_find_snapshot(snap_compare, rig: Rig):
    app = rig.app([], resume=found_session(rig.store, str(rig.workspace)))

    async def find(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready and app.transcript.unmeasured == 0)
        await pilot.press("ctrl+f")
        await type_needle(pilot, "kestrel")
        await pilot.press("enter")
        await settle(pilot, lambda: status_at_rest(app))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=find)


def reasoned_session(store: JsonlStore, cwd: str) -> str:
    """A reply that thought at length before it said "Kestrel"."""
    session = Session.create(store, cwd=cwd)
    for i in range(6):
        append_chat_turn(session, f"prompt {i}", f"reply {i}")
    thought = "\n".join(f"thinking step {n}" for n in range(8))
    turn = next_turn(session)
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(user_message("prompt 6"))
    said = assistant_message("the Kestrel answer", reasoning=thought)
    session.append(AssistantMessage(turn=turn, step=1, message=said))
    session.append(StepEnd(turn=turn, step=1))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
    append_chat_turn(session, "prompt 7", "reply 7")
    session.close()
    return session.id


def test_the_highlight_stays_on_the_matching_row_when_reasoning_is_shown_or_the_width_changes(
    rig: Rig,
):
    app = rig.app([], resume=reasoned_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, "kestrel")
        assert highlighted(view) == "● the Kestrel answer"
        await pilot.press("ctrl+t")  # eight reasoning rows now come before the reply's text
        await pilot.pause()
        assert view.show_reasoning and highlighted(view) == "● the Kestrel answer"
        await pilot.resize_terminal(40, SIZE[1])
        await settle(pilot, lambda: view.size.width == 40)
        assert "Kestrel" in highlighted(view)

    run(app, body)


def test_stepping_finds_again_so_blocks_logged_since_the_last_key_are_reached(rig: Rig):
    app = rig.app([], resume=found_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, "kestrel")
        assert status(bar) == "1 of 2"
        view.add_note("a note that names Kestrel once more")  # arrives after the search
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert status(bar) == "2 of 3" and "● reply 40 about Kestrel" in screen_rows(view)
        await pilot.press("enter")
        await pilot.pause()
        assert status(bar) == "3 of 3" and highlighted(view).strip().endswith("Kestrel once more")

    run(app, body)


def test_a_word_of_a_pass_summary_is_found_at_its_marker_which_opens(rig: Rig):
    """As the web's find does: a compaction marker is searched in its pass's summaries."""
    from dsh.events import CompactionSummaryEvent
    from tests.tui import scenarios

    session_id, _ = scenarios.record(rig, SIZE)
    log = rig.store.open(session_id)
    try:
        summary = next(e for e in log.events if isinstance(e, CompactionSummaryEvent))
    finally:
        log.close()
    needle = next(w for w in summary.data.summary.split() if len(w) > 6 and w.isalpha())
    app = scenarios.cold_app(rig, session_id)

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, needle)
        markers = [i for i in bar.matches if view.model.blocks[i].kind == "marker"]
        assert markers  # the pass's summary holds the word
        for _ in range(len(bar.matches)):
            if view.found is not None and view.found[0] == markers[0]:
                break
            await pilot.press("enter")
            await pilot.pause()
        assert view.found is not None and view.found[0] == markers[0]
        assert view.model.blocks[markers[0]].expanded
        assert needle.casefold() in highlighted(view).casefold()

    run(app, body)
