"""Replies that all number their tool calls from ``call_0``, in a real browser: a result
arriving live joins its own card after older pages brought earlier ``call_0`` cards, and find
goes to the card of the call a hit belongs to."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.runtime import Route
from dsh.events import ToolCallEvent, encode_event
from dsh.store import MemoryStore
from dsh.tui.running_cards import ASKING
from dsh.web import BackgroundServer, WebRuntime
from tests.same_call_ids import PerReplyCallIds, ReplySpec, build_log, reply_specs
from tests.web.builders import long_session
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import (
    first_page_loaded,
    open_page,
    same_as_one_pass,
    scroll_to_beginning,
    send,
    serve,
    wait_idle,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TURNS = 40
"""Stored turns, each calling ``call_0`` (several history pages)."""


@contextlib.contextmanager
def serve_per_reply_ids(env: WebEnv) -> Iterator[BackgroundServer]:
    """The app with the scripted model renumbering each reply's calls from ``call_0``."""
    route = Route(PerReplyCallIds(env.provider()), "scripted", env.window)
    server = BackgroundServer(env.app(WebRuntime(env.settings, route))).start()
    try:
        yield server
    finally:
        server.stop()


def card_states(page: Any) -> list[tuple[int, str, str]]:
    """Every tool card in the conversation (parked ones included): (seq, status, output)."""
    rows: list[list[Any]] = page.evaluate(
        """() => window.dsh.view.allRows().filter((r) => r.matches('.row.tool')).map((r) => [
            +r.dataset.seq,
            r.querySelector('.tool-status').textContent,
            r.querySelector('.tool-output')?.textContent ?? '',
        ])"""
    )
    return [(seq, status, output) for seq, status, output in rows]


def test_a_live_result_joins_its_own_card_after_older_pages_brought_other_call_0_cards(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.window = 128_000  # no compaction: this is about the cards
    sid = long_session(env.store, env.workspace, turns=TURNS, call_id="call_0")
    env.script = [{"text": "stored"}] * (2 * TURNS) + [  # the stored turns' model calls
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo LATE-OUTPUT"}}]},
        {"text": "ran it"},
    ]
    with serve_per_reply_ids(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        assert page.evaluate("() => window.dsh.hasMore") is True
        send(page, "run the command")
        approval = page.locator("#approvals .approval")
        approval.wait_for()  # the bash card is running, waiting for its approval
        running = card_states(page)[-1]
        assert running[1] == ASKING

        scroll_to_beginning(page)  # older pages: every stored turn's call_0 card
        assert len(card_states(page)) == TURNS + 1
        approval.locator("button[data-answer='once']").click()
        page.wait_for_function(  # the newest rows are parked while the top is on screen
            "() => window.dsh.view.allRows().some((r) => r.textContent.includes('ran it'))"
        )
        wait_idle(page)

        cards = card_states(page)
        assert cards[-1][0] == running[0]
        assert cards[-1][1] == "done" and "LATE-OUTPUT" in cards[-1][2]
        for turn, (_, status, output) in enumerate(cards[:-1], start=1):
            assert status == "done" and f"def f{turn}_0()" in output, turn
            assert "LATE-OUTPUT" not in output
        assert same_as_one_pass(page)


def test_find_goes_to_the_card_of_the_call_a_hit_belongs_to(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=TURNS, call_id="call_0")
    log = env.store.open(sid)
    calls = [e.seq for e in log.events if isinstance(e, ToolCallEvent)]
    log.close()
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        for turn in (5, TURNS):  # a card pages back, and one of the first page
            page.keyboard.press("Control+f")
            page.fill("#find-input", f"f{turn}_3(): return {3 * turn}")
            page.press("#find-input", "Enter")
            page.wait_for_function(
                "() => document.getElementById('find-status').textContent === '1 of 1'"
                " && document.querySelector('#log .row.find-current')"
            )
            current = page.locator("#log .row.find-current")
            assert current.get_attribute("data-seq") == str(calls[turn - 1])
            assert re.search(rf"module_{turn}\.py", current.inner_text())
            page.press("#find-input", "Escape")


FEED_IN_CHUNKS = """async ([events, cuts]) => {
    const { Projector } = await import('/s/projection.js');
    const { TranscriptView } = await import('/s/view.js');
    const whole = new TranscriptView(document.createElement('div'), new Projector());
    whole.ingest(events);
    const paged = new TranscriptView(document.createElement('div'), new Projector());
    const bounds = [0, ...cuts, events.length];
    for (let i = bounds.length - 1; i > 0; i--) {  // newest chunk first, each in log order
        paged.ingest(events.slice(bounds[i - 1], bounds[i]));
    }
    const cards = paged.allRows().filter((r) => r.matches('.row.tool')).map((r) => [
        +r.dataset.seq, r.querySelector('.tool-output')?.textContent ?? null,
    ]);
    return [whole.html() === paged.html(), cards];
}"""


def test_chunks_fed_newest_first_pair_every_result_with_the_call_it_answers(
    browser: Any, tmp_path: Path
) -> None:
    """The browser's projector and view, fed a log in chunks newest first (as history pages
    and the live stream arrive), build the DOM one pass builds, and every card shows the result
    that answers its call by position, even a result a cut put on a newer chunk than its call."""
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh !== undefined")

        @settings(max_examples=60, deadline=None)
        @given(reply_specs(), st.data())
        def check(replies: list[ReplySpec], data: st.DataObject) -> None:
            built = build_log(MemoryStore(), replies)
            events = built.session.events
            # a page starts at a message, never between a reply and its tool/call events (the
            # server's cut); a result may land on a newer chunk than its call
            allowed = [i for i, e in enumerate(events) if i and not isinstance(e, ToolCallEvent)]
            cuts = sorted(data.draw(st.sets(st.sampled_from(allowed), max_size=6)))
            encoded = [json.loads(encode_event(e)) for e in events]
            same, cards = page.evaluate(FEED_IN_CHUNKS, [encoded, cuts])
            assert same
            expected: dict[int, str | None] = {}
            for call, result in built.call_results.items():
                expected[call] = built.texts[result] if result is not None else None
            for result, call in built.answers.items():
                if call is None:
                    expected[result] = built.texts[result]  # a card of its own
            assert dict(cards) == expected

        check()
