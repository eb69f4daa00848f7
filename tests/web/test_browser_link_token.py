"""A link's ``?token=`` in Debian's chromium against a real server: tried first, kept once the
server accepts it; when the server refuses it and the token this browser kept works, the page
uses the kept one and says so once; a refused link token is never kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from dsh.web import BackgroundServer
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded

STORED = "() => localStorage.getItem('dsh-token')"
NOTICE = "The link's access token was wrong: this page uses the one this browser kept."

# Every text the page's toast shows, in order, from the first script on (the page is loaded
# after this runs, so nothing it says can come before the observer).
RECORD_TOASTS = """
window.__toasts = [];
new MutationObserver((records) => {
  const box = document.getElementById('toast');
  if (!box || !records.some((r) => r.target === box || box.contains(r.target))) return;
  if (!box.hidden && box.textContent) window.__toasts.push(box.textContent);
}).observe(document, {
  subtree: true, childList: true, characterData: true, attributes: true,
  attributeFilter: ['hidden'],
});
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[BackgroundServer, str]]:
    """A real server, and a stored session with one exchange in it."""
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        append_chat_turn(session, "a question", "an answer")
        sid = session.id
    server = BackgroundServer(env.app()).start()
    try:
        yield server, sid
    finally:
        server.stop()


@pytest.fixture
def tabs(browser: Any) -> Iterator[Any]:
    """One browser profile (one localStorage) whose tabs record their toasts; a refused token
    logs a console error, expected here."""
    context = browser.new_context()
    context.add_init_script(RECORD_TOASTS)
    try:
        yield context
    finally:
        context.close()


def session_shown(tab: Any) -> None:
    first_page_loaded(tab)
    assert tab.inner_text("#session-title") == "a question"
    tab.wait_for_function("() => window.dsh.socket?.readyState === 1")
    tab.wait_for_function("() => window.dsh.warnings.socket?.readyState === 1")


def test_a_wrong_link_token_falls_back_to_the_kept_one_and_says_so_once(
    served: tuple[BackgroundServer, str], tabs: Any
) -> None:
    """The user's tab keeps the right token; a second tab opened from a link with a wrong one (a
    stale launch URL, a link in a reply) shows the session with the kept token, its live
    streams open, says once that the link's token was wrong, and leaves the kept token as it
    was: a reload of either tab works and says nothing."""
    server, sid = served
    mine = tabs.new_page()
    mine.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
    session_shown(mine)
    assert mine.evaluate(STORED) == TOKEN
    assert mine.evaluate("() => window.__toasts") == []

    linked = tabs.new_page()
    linked.goto(f"{server.base_url}/?token=a-wrong-token#s={sid}")
    session_shown(linked)
    assert linked.url == f"{server.base_url}/#s={sid}"  # the link's token left the address bar
    assert linked.evaluate("() => window.__toasts") == [NOTICE]
    assert linked.get_attribute("#toast", "role") is None  # a notice, not an error (an alert)
    said = (
        "() => [...document.getElementById('state-announcer').children].map((n) => n.textContent)"
    )
    assert linked.evaluate(said) == [NOTICE]  # said politely
    assert not linked.evaluate("() => window.dsh.warnings.refused")
    assert linked.evaluate(STORED) == TOKEN

    for tab in (linked, mine):
        tab.reload()
        session_shown(tab)
        assert tab.evaluate("() => window.__toasts") == []
        assert tab.evaluate(STORED) == TOKEN


def test_a_wrong_link_token_with_no_working_kept_token_is_refused_and_never_kept(
    served: tuple[BackgroundServer, str], tabs: Any
) -> None:
    """No kept token, then a kept token the server refuses too (an earlier run's): the link's
    wrong token is refused as before, with no notice, and keeps nothing; a link with the right
    token then replaces the stale kept one."""
    server, sid = served
    tab = tabs.new_page()
    for kept in (None, "an-earlier-runs-token"):
        if kept is not None:
            tab.evaluate("(kept) => localStorage.setItem('dsh-token', kept)", kept)
        tab.goto(f"{server.base_url}/?token=a-wrong-token#s={sid}")
        tab.wait_for_function("() => window.dsh.warnings.refused")
        tab.wait_for_function(
            "() => document.getElementById('session-title').textContent === 'Session unavailable'"
        )
        assert NOTICE not in tab.evaluate("() => window.__toasts")
        assert tab.evaluate(STORED) == kept
    tab.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
    session_shown(tab)
    assert tab.evaluate(STORED) == TOKEN
