"""A tab opened on a session while its reply streams, and a tab whose live stream reconnects
then, show the reply from its start, each piece once (``test_live_joined`` for the frames)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.llm.scripted import ScriptedProvider
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, wait_turn_over
from tests.web.test_live_joined import HELD_AFTER, REPLY, HeldReply

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SO_FAR = REPLY[: 5 * HELD_AFTER]
TAIL_IS = "(text) => document.querySelector('#live-tail .stream-text').textContent === text"
KEEP_TAILS = """() => {
    window.tails = [];
    const tail = document.querySelector('#live-tail .stream-text');
    new MutationObserver(() => window.tails.push(tail.textContent))
        .observe(tail, { childList: true, characterData: true, subtree: true });
}"""


def test_a_tab_joining_or_reconnecting_mid_reply_shows_it_whole_once(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    provider = HeldReply(ScriptedProvider([{"text": REPLY}], model="scripted", chunk_size=5))
    server = BackgroundServer(env.app(WebRuntime(env.settings, Route(provider, "s", 4000))))
    server.start()
    try:
        with open_page(browser) as page, open_page(browser) as joined:
            page.goto(f"{server.base_url}/?token={TOKEN}")
            page.click("#new-session")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
            send(page, "talk")
            page.wait_for_function(TAIL_IS, arg=SO_FAR)  # the model holds the rest
            sid = page.evaluate("() => window.dsh.sessionId")
            joined.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
            first_page_loaded(joined)
            joined.wait_for_function(TAIL_IS, arg=SO_FAR)
            # the first tab's stream drops and reconnects: what streamed comes again, once
            page.evaluate(KEEP_TAILS)
            page.evaluate("() => { window.dropped = window.dsh.socket; window.dropped.close(); }")
            page.wait_for_function(
                "() => window.dsh.socket && window.dsh.socket !== window.dropped"
                " && window.dsh.socket.readyState === 1"
            )
            provider.release.set()
            for tab in (page, joined):
                wait_turn_over(tab, REPLY)
                tab.wait_for_function("() => document.getElementById('live-tail').hidden")
                assert (tab.locator("#log").text_content() or "").count(REPLY) == 1
            tails = page.evaluate("() => window.tails")
            assert SO_FAR in tails  # shown again after the reconnect
            assert all(REPLY.startswith(tail) for tail in tails), tails
    finally:
        provider.release.set()
        server.stop()
