"""The access token's failure limit, over real HTTP against a real server and in a real browser:
the right token is always served, however many wrong ones came before it from the same address
(a stranger cannot lock the user out); distinct wrong tokens past the limit, which are guesses,
are answered 429; a wrong token presented again and again (tabs opened with a wrong
``?token=``, from the user's own address) is never more than one guess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse

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


def test_distinct_wrong_tokens_past_the_limit_get_429_and_the_right_token_is_still_served(
    tmp_path: Path,
) -> None:
    """A stranger who can reach the port sends made-up tokens until its address is past the
    limit: its wrong tokens are answered 429 for the window, but the user's right token, from
    the same address, is served before, between and after them."""
    clock = Clock()
    server = served(make_env(tmp_path), FailureLimiter(limit=3, window=60.0, clock=clock))
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as http:

            def presenting(token: str) -> httpx.Response:
                return http.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})

            for guess in ("guess-1", "guess-2", "guess-1", "guess-3"):
                assert error_of(presenting(guess)) == (401, "UNAUTHORIZED")
            assert presenting(TOKEN).status_code == 200
            limited = presenting("guess-4")
            assert error_of(limited) == (429, "RATE_LIMITED")
            assert limited.headers["retry-after"] == "60"
            message = limited.json()["error"]["message"]
            assert "\n" not in message and "wrong access tokens" in message
            assert error_of(presenting("guess-1")) == (429, "RATE_LIMITED")
            assert error_of(http.get("/api/sessions")) == (401, "UNAUTHORIZED")  # no token
            assert presenting(TOKEN).status_code == 200
            clock.now += 61
            assert error_of(presenting("guess-5")) == (401, "UNAUTHORIZED")
    finally:
        server.stop()


def test_past_the_real_limit_the_right_token_opens_the_api_and_the_live_stream(
    env: WebEnv,
) -> None:
    """With the shipped limit: more distinct wrong tokens than ``MAX_FAILURES``, on API calls
    and WebSocket handshakes, then the right token on both is served; a new wrong one is not."""
    with TestClient(env.app()) as client:
        answers = [
            client.get("/api/sessions", headers={"Authorization": f"Bearer made-up-{n}"})
            for n in range(MAX_FAILURES + 5)
        ]
        assert [a.status_code for a in answers] == [401] * MAX_FAILURES + [429] * 5
        assert client.get("/api/sessions", headers=AUTH).status_code == 200
        with (
            pytest.raises(WebSocketDenialResponse) as denied,
            client.websocket_connect("/api/live", subprotocols=["dsh", "dsh.token.made-up-x"]),
        ):
            pass
        assert denied.value.status_code == 429
        page = ["dsh", f"dsh.token.{TOKEN}"]  # what the page offers
        with client.websocket_connect("/api/live", subprotocols=page) as ws:
            assert ws.receive_json()["kind"] == "hello"


def test_the_limiter_keeps_no_more_than_the_limit_of_wrong_tokens_per_address() -> None:
    """A flood of guesses does not grow what is kept: past the limit nothing is recorded."""
    limiter = FailureLimiter(limit=3, window=60.0, clock=Clock())
    for n in range(1000):
        limiter.record("127.0.0.1", f"guess-{n}")
    assert limiter.over_limit("127.0.0.1")
    assert len(limiter._failures["127.0.0.1"]) == 3
    assert not limiter.over_limit("10.0.0.2")


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
        for _ in range(3):
            tab = tabs.new_page()
            tab.goto(f"{server.base_url}/?token=a-wrong-token#s={sid}")
            tab.wait_for_function(
                "() => document.getElementById('session-title').textContent"
                " === 'Session unavailable'"
            )
        assert limiter.failed > limiter.limit
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
