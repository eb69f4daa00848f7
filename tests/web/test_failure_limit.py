"""The access token's failure limit, over real HTTP against a real server and in a real browser:
a wrong token presented again and again (tabs opened with a wrong ``?token=``, from the user's
own address) never locks out the right one; distinct wrong tokens, which are guesses, still
lock the address out for the window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.surface import Session
from dsh.web import BackgroundServer, create_app
from dsh.web.auth import MAX_FAILURES, FailureLimiter
from tests.helpers import append_chat_turn
from tests.web.conftest import AUTH, TOKEN, WebEnv, error_of, make_env
from tests.web.pages import first_page_loaded, open_page

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingLimiter(FailureLimiter):
    """The limiter, counting every failed request too (it limits distinct wrong tokens)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.failed = 0

    def record(self, client: str, token: str | None) -> None:
        self.failed += 1
        super().record(client, token)


def served(env: WebEnv, limiter: FailureLimiter | None = None) -> BackgroundServer:
    return BackgroundServer(create_app(env.registry(), token=TOKEN, limiter=limiter)).start()


def test_a_wrong_token_presented_again_and_again_never_locks_out_the_right_one(
    tmp_path: Path,
) -> None:
    """Three times the limit of requests with one wrong token (and as many with none): each is
    refused as unauthorised, none as rate-limited, and the right token is served."""
    server = served(make_env(tmp_path))
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            wrong = {"Authorization": "Bearer an-old-launch-token"}
            for _ in range(3 * MAX_FAILURES):
                assert error_of(http.get("/api/sessions", headers=wrong)) == (401, "UNAUTHORIZED")
                assert error_of(http.get("/api/warnings")) == (401, "UNAUTHORIZED")
            assert http.get("/api/sessions", headers=AUTH).status_code == 200
    finally:
        server.stop()


def test_distinct_wrong_tokens_are_guesses_and_lock_the_address_out_for_the_window(
    tmp_path: Path,
) -> None:
    """The right token waits too once the address is locked out: were it served, a guesser
    would tell it by the answer that is no longer 429, and the limit would cap nothing."""
    clock = Clock()
    server = served(make_env(tmp_path), FailureLimiter(limit=3, window=60.0, clock=clock))
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            for guess in ("guess-1", "guess-2", "guess-1", "guess-3"):
                guessed = http.get("/api/sessions", headers={"Authorization": f"Bearer {guess}"})
                assert error_of(guessed) == (401, "UNAUTHORIZED")
            blocked = http.get("/api/sessions", headers=AUTH)
            assert error_of(blocked) == (429, "RATE_LIMITED")
            assert blocked.headers["retry-after"] == "60"
            again = http.get("/api/sessions", headers={"Authorization": "Bearer guess-4"})
            assert error_of(again) == (429, "RATE_LIMITED")
            clock.now += 61
            assert http.get("/api/sessions", headers=AUTH).status_code == 200
    finally:
        server.stop()


def test_tabs_opened_with_a_wrong_token_leave_the_users_page_working(
    browser: Any, tmp_path: Path
) -> None:
    """Tabs opened on ``/?token=WRONG`` (a stale launch URL, a link another site or a reply
    holds) until their refused requests outnumber the limit: the user's page still opens."""
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        append_chat_turn(session, "a question", "an answer")
        sid = session.id
    limiter = CountingLimiter(limit=5)
    server = served(env, limiter)
    tabs = browser.new_context()  # a refused request logs a console error: expected there
    try:
        opened = 0
        while limiter.failed <= limiter.limit:
            tab = tabs.new_page()
            tab.goto(f"{server.base_url}/?token=a-wrong-token#s={sid}")
            tab.wait_for_function(
                "() => document.getElementById('session-title').textContent"
                " === 'Session unavailable'"
            )
            opened += 1
        assert opened >= 2
        with open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
            page.wait_for_function(
                "() => window.dsh?.info || document.getElementById('session-title').textContent"
                " === 'Session unavailable'"
            )
            assert page.inner_text("#session-title") == "a question"
            first_page_loaded(page)
    finally:
        tabs.close()
        server.stop()
