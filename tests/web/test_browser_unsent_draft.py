"""A draft typed in the page's composer and not sent, in a real browser: a reload brings it back
(what Tab completed included), each session shown gets its own back, a draft the page refused
stays, and one sent is gone after a reload. It is kept in the tab's sessionStorage only: no
request the page makes, nor any frame of its sockets, carries it, and the session's log never
holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import make_env
from tests.web.pages import first_page_loaded, open_page, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session, toast_says

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SECRET = "half a thought zqx"


def watch_traffic(page: Any) -> list[str]:
    """Everything the page sends from now on: each request's URL and body, each socket frame."""
    sent: list[str] = []

    def request(r: Any) -> None:
        sent.append(f"{r.url} {r.post_data or ''}")

    def socket(ws: Any) -> None:
        ws.on("framesent", lambda payload: sent.append(str(payload)))

    page.on("request", request)
    page.on("websocket", socket)
    return sent


def reload(page: Any) -> None:
    page.reload()
    first_page_loaded(page)


def draft(page: Any) -> str:
    return str(page.input_value("#prompt"))


def show(page: Any, session_id: str) -> None:
    page.evaluate("(id) => { location.hash = `#s=${encodeURIComponent(id)}`; }", session_id)
    page.wait_for_function(
        "(id) => window.dsh.info && window.dsh.info.id === id && window.dsh.sessionId === id",
        arg=session_id,
    )


def test_a_draft_survives_a_reload_per_session_and_never_leaves_the_browser(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)  # its workspace holds notes.txt
    env.script = [{"text": "got it"}]
    with serve(env) as server, open_page(browser) as page:
        first = open_new_session(page, server.base_url)
        sent = watch_traffic(page)
        prompt = page.locator("#prompt")
        prompt.press_sequentially(f"{SECRET} @no")
        page.keyboard.press("Tab")
        page.wait_for_function(
            "(d) => document.getElementById('prompt').value === d", arg=f"{SECRET} @notes.txt "
        )
        reload(page)
        assert draft(page) == f"{SECRET} @notes.txt "  # what Tab completed is kept too

        second = str(  # "New session" keeps the new one shown: another is asked for here
            page.evaluate(
                """async () => {
                    const { api } = await import('/s/api.js');
                    return (await api('POST', '/api/sessions', {})).session.id;
                }"""
            )
        )
        show(page, second)
        assert draft(page) == ""  # each session has its own
        page.locator("#prompt").press_sequentially("for the second")
        show(page, first)
        assert draft(page) == f"{SECRET} @notes.txt "
        show(page, second)
        assert draft(page) == "for the second"

        page.fill("#prompt", "/nosuch thing")  # refused by the page: the draft stays
        page.press("#prompt", "Enter")
        toast_says(page, "Unknown command /nosuch")
        reload(page)
        assert draft(page) == "/nosuch thing"

        show(page, first)
        assert not any(SECRET in text for text in sent), sent  # kept in the browser only
        assert not any("for the second" in text for text in sent)
        assert env.store.list() == []  # nothing was written: both are still new sessions

        page.press("#prompt", "Enter")
        wait_turn_over(page, "got it")
        assert any(SECRET in text for text in sent)  # sent now: the watch sees what is sent
        assert draft(page) == ""
        reload(page)
        assert draft(page) == ""  # sent: dropped
        kept = page.evaluate(
            "() => Object.keys(sessionStorage).filter((k) => k.startsWith('dsh-draft:'))"
        )
        assert kept == [f"dsh-draft:{second}"]
