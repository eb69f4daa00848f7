"""The browser ``dsh web`` starts opens ``/?launch=CODE``; in Debian's chromium the page trades
the code for the token by a ``fetch`` and works, and no URL the browser visits holds the token
(a redirect to ``/?token=…`` put it in the profile's history database, which replaceState does
not clean). A spent code opens the page with the token this browser kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.surface import Session
from dsh.web import BackgroundServer, create_app
from dsh.web.auth import LaunchCodes
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded

STORED = "() => localStorage.getItem('dsh-token')"


def test_a_launch_code_opens_the_page_without_the_token_in_any_visited_url(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        append_chat_turn(session, "a question", "an answer")
        sid = session.id
    codes = LaunchCodes()
    server = BackgroundServer(create_app(env.registry(), token=TOKEN, launch_codes=codes)).start()
    context = browser.new_context()
    visited: list[str] = []
    try:
        tab = context.new_page()
        tab.on("framenavigated", lambda frame: visited.append(frame.url))
        code = codes.new()
        tab.goto(f"{server.base_url}/?launch={code}#s={sid}")
        first_page_loaded(tab)
        assert tab.inner_text("#session-title") == "a question"
        assert tab.evaluate(STORED) == TOKEN
        assert tab.url == f"{server.base_url}/#s={sid}"  # the code left the address bar
        assert visited and not any(TOKEN in url for url in visited), visited
        again = context.new_page()  # the spent code: the page uses the kept token
        again.goto(f"{server.base_url}/?launch={code}#s={sid}")
        first_page_loaded(again)
        assert again.inner_text("#session-title") == "a question"
    finally:
        context.close()
        server.stop()
