"""A reply's C0 control characters (an escape sequence's ESC, BEL, a lone carriage return) are
dropped when the page draws it, as the terminal UI drops them, rather than drawn as boxes (a
lone CR no line break); tabs and line breaks stay, and a CR LF is one line break
(``static/dom.js`` ``plain``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.web import BackgroundServer, WebRuntime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPLY = "\x1b[31mred\x1b[0m and \x07bell\x1b]0;title\x07\r\nnext\rover\x00 done"
DRAWN = "[31mred[0m and bell]0;title\nnextover done"


def test_a_replys_control_characters_are_not_drawn(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": REPLY, "reasoning": "think\x1b[1m hard\rer"}]
    with serve(env) as web, open_page(browser) as page:
        open_new_session(page, web.base_url)
        send(page, "say \x1b[1mbold\x1b[0m")
        wait_turn_over(page, "nextover")
        row = page.locator("#log .row.assistant").last
        assert row.locator(".body").evaluate("(b) => b.innerText") == DRAWN
        reasoning = row.locator(".reasoning-text").evaluate("(b) => b.textContent")
        assert reasoning == "think[1m harder"
        prompt = page.locator("#log .row.user").last.locator(".body").inner_text()
        assert prompt == "say [1mbold[0m"


def test_a_streaming_replys_control_characters_are_not_drawn_either(
    browser: Any,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    at_rest = threading.Event()
    reply = openai_stream(
        oa_chunk(content="\x1b[31mred\x1b[0m and \x07bell\rover"),
        oa_chunk(content=" done"),
        oa_chunk(finish="stop"),
    )
    server.queue(Canned(reply.status, reply.headers, reply.parts, holds=((1, at_rest),)))
    env = make_env(tmp_path)
    provider = OpenAICompatProvider("openai-compatible", "m", server.url, "k")
    web = BackgroundServer(env.app(WebRuntime(env.settings, Route(provider, "m", 8000))))
    web.start()
    try:
        with open_page(browser) as page:
            page.goto(f"{web.base_url}/?token={TOKEN}")
            page.click("#new-session")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
            send(page, "colours?")
            page.wait_for_function(
                "() => { const t = document.getElementById('live-tail'); return !t.hidden"
                " && t.querySelector('.stream-text').textContent.includes('bell'); }"
            )
            streamed = page.evaluate(
                "() => document.querySelector('#live-tail .stream-text').textContent"
            )
            assert streamed == "[31mred[0m and bellover"  # as the logged reply is drawn
            at_rest.set()
            wait_turn_over(page, "bellover done")
    finally:
        at_rest.set()
        web.stop()
