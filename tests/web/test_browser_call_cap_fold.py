"""The web page shows the calls ``tools.max_calls_per_reply`` kept from running as ONE dim card
(``dsh.transcript.call_fold``), not a red card each, live and drawn again from the log; opened,
it lists each call. The page's words (``unrun.js``) and fold are Python's. A real browser on a real
server, the scripted model asking for more calls than the limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.config import ToolSettings
from dsh.events import UserMessageEvent, encode_event
from dsh.transcript import (
    OverLimitItem,
    ToolCallItem,
    ToolResultItem,
    calls_by_name,
    over_limit_note,
    transcript_items,
)
from tests.transcript.test_call_fold import Reply, write
from tests.transcript.test_call_fold import _reply as reply_strategy
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import (
    first_page_loaded,
    open_page,
    same_as_one_pass,
    send,
    serve,
    view_rows,
    wait_turn_over,
)
from tests.web.test_browser_find_jump import find
from tests.web.test_browser_new_session import click_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RAN = [{"name": "read_file", "arguments": {"path": "notes.txt"}}] * 2
UNRUN = [
    *[{"name": "list_dir", "arguments": {"path": f"d{n}"}} for n in range(2)],
    *[{"name": "read_file", "arguments": {"path": f"f{n}.txt"}} for n in range(3)],
]
NOTE = over_limit_note(7, 2)
NAMES = "read_file ×3, list_dir ×2"
CALLS = ["list_dird0", "list_dird1", "read_filef0.txt", "read_filef1.txt", "read_filef2.txt"]
SHUT = {"note": NOTE, "names": NAMES, "calls": CALLS, "open": False}


def test_the_pages_words_are_pythons(browser: Any, tmp_path: Path) -> None:
    notes = [[7, 2], [300, 32], [33, 32]]
    names = [["bash"], ["bash", "read_file", "read_file"], ["a", "b", "b", "a", "c"], []]
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        shown = page.evaluate(
            """async ([notes, names]) => {
                const { overLimitNote, callsByName } = await import('/s/unrun.js');
                return [notes.map(([a, l]) => overLimitNote(a, l)), names.map(callsByName)];
            }""",
            [notes, names],
        )
    assert shown == [
        [over_limit_note(asked, limit) for asked, limit in notes],
        [calls_by_name(each) for each in names],
    ]


def unrun_rows(page: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate(
        """() => window.dsh.view.allRows().filter((r) => r.matches('.row.unrun')).map((r) => ({
            note: r.querySelector('.unrun-note').textContent,
            names: r.querySelector('.unrun-names').textContent,
            calls: [...r.querySelectorAll('.unrun-call')].map((c) => c.textContent),
            open: r.querySelector('details').open,
        }))"""
    )
    return rows


def test_the_calls_past_the_limit_are_one_card_live_and_after_a_reload(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.settings = msgspec.structs.replace(
        env.settings, tools=ToolSettings(approval="auto", max_calls_per_reply=2)
    )
    env.script = [{"toolCalls": RAN + UNRUN}, {"text": "all read"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        click_new_session(page)
        send(page, "read them")
        wait_turn_over(page, "all read")
        assert len(view_rows(page, ".row.tool")) == 2  # the two that ran
        assert unrun_rows(page) == [SHUT]
        assert not any("TOO_MANY_CALLS" in row for row in view_rows(page, ".row"))
        assert same_as_one_pass(page)  # live is the whole log fed at once
        page.reload()  # drawn again from the stored log
        first_page_loaded(page)
        page.wait_for_function("() => document.querySelector('.row.unrun') !== null")
        assert len(view_rows(page, ".row.tool")) == 2
        assert unrun_rows(page) == [SHUT]
        find(page, "f1.txt")  # a find goes to the card and opens it at the call
        assert page.evaluate("() => document.querySelector('.find-current').matches('.unrun')")
        page.wait_for_function("() => document.querySelector('.row.unrun details').open")
        shown = page.locator(".unrun-call").all_inner_texts()  # on screen now, a line each
        assert [" ".join(text.split()) for text in shown] == [
            "list_dir d0",
            "list_dir d1",
            "read_file f0.txt",
            "read_file f1.txt",
            "read_file f2.txt",
        ]


FEED = """async ([events, cuts]) => {
    const { Projector } = await import('/s/projection.js');
    const { TranscriptView } = await import('/s/view.js');
    const projector = new Projector();
    const items = [];
    for (const event of events) {
        for (const change of projector.feed(event)) {
            if (change.op !== 'add') continue;
            const item = change.item;
            if (item.kind === 'tool-call') items.push(['call', item.seq]);
            else if (item.kind === 'tool-result') items.push(['result', item.seq, item.cardSeq]);
            else if (item.kind === 'unrun') {
                items.push(['unrun', item.seq, item.asked, item.limit,
                    item.calls.map((c) => [c.callId, c.name, c.arguments])]);
            }
        }
    }
    const whole = new TranscriptView(document.createElement('div'), new Projector());
    whole.ingest(events);
    const paged = new TranscriptView(document.createElement('div'), new Projector());
    const bounds = [0, ...cuts, events.length];
    for (let i = bounds.length - 1; i > 0; i--) {  // newest page first, each in log order
        paged.ingest(events.slice(bounds[i - 1], bounds[i]));
    }
    return [items, whole.html() === paged.html()];
}"""


def test_the_pages_fold_is_pythons_over_random_logs(browser: Any, tmp_path: Path) -> None:
    """The page's projector folds what ``dsh.transcript.call_fold`` folds, over the random logs
    of ``tests/transcript/test_call_fold.py`` (a crash may cut them anywhere), fed whole or as
    history pages newest first (each page starts at a prompt, as the server cuts them)."""
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.wait_for_function("() => window.dsh !== undefined")

        @settings(max_examples=60, deadline=None)
        @given(st.lists(reply_strategy(), min_size=1, max_size=4), st.data())
        def check(replies: list[Reply], data: st.DataObject) -> None:
            events = write(replies).events
            log = events[: data.draw(st.integers(1, len(events)), label="crash after")]
            prompts = [e.seq for e in log if isinstance(e, UserMessageEvent) and e.seq]
            cuts = sorted(data.draw(st.sets(st.sampled_from(prompts)) if prompts else st.just(())))
            encoded = [json.loads(encode_event(e)) for e in log]
            shown, same = page.evaluate(FEED, [encoded, list(cuts)])
            expected: list[list[Any]] = []
            for item in transcript_items(log):
                if isinstance(item, ToolCallItem):
                    expected.append(["call", item.seq])
                elif isinstance(item, ToolResultItem):
                    expected.append(["result", item.seq, item.card_seq])
                elif isinstance(item, OverLimitItem):
                    calls = [[c.call_id, c.name, c.arguments] for c in item.calls]
                    expected.append(["unrun", item.seq, item.asked, item.limit, calls])
            assert shown == expected
            assert same

        check()
