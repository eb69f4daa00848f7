"""The web token leaves the URL and is harder to abuse: rate limits, Origin/Host checks, a static
route that serves only its listed files, and no path echoed back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient, WebSocketDenialResponse

from dsh.cli import web as web_cli
from dsh.errors import UsageError
from dsh.web import BackgroundServer, create_app
from dsh.web.app import STATIC_DIR, static_files
from dsh.web.auth import FailureLimiter, check_bind, loopback_hosts
from tests.web.conftest import AUTH, TOKEN, WebEnv, error_of, make_env
from tests.web.real_command import dsh_web_process
from tests.web.test_failure_limit import CountingLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def app_for(env: WebEnv, **options: Any) -> Any:
    return create_app(env.registry(), token=TOKEN, **options)


def test_another_site_cannot_lock_the_user_out_through_the_failure_limit(env: WebEnv) -> None:
    """A page on another site (or another port of localhost) fetching the API with no-cors
    carries no cookie: its requests used to count as failed attempts, so any web page the user
    visited could lock the real page out with 429 for a minute, again and again."""
    limiter = FailureLimiter(limit=3, window=60.0, clock=Clock())
    with TestClient(app_for(env, limiter=limiter)) as client:
        for site in ("cross-site", "same-site"):
            for _ in range(5):
                fetched = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"}
                assert error_of(client.get("/api/sessions", headers=fetched)) == (
                    403,
                    "FORBIDDEN",
                )
                assert error_of(client.get(f"/?token={TOKEN}x", headers=fetched))[0] == 403
        assert client.get("/api/sessions", headers=AUTH).status_code == 200
        same = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
        assert client.get("/api/sessions", headers={**AUTH, **same}).status_code == 200
        # the launch URL followed from a link on another site still opens the page
        followed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
        opened = client.get(f"/?token={TOKEN}", headers={**followed, "Sec-Fetch-Dest": "document"})
        assert opened.status_code == 200


def test_a_cross_origin_state_change_or_websocket_is_refused(env: WebEnv) -> None:
    with TestClient(app_for(env)) as client:
        client.headers.update(AUTH)
        evil = {"Origin": "http://evil.example"}
        assert error_of(client.post("/api/sessions", json={}, headers=evil)) == (403, "FORBIDDEN")
        same = {"Origin": "http://testserver"}
        created = client.post("/api/sessions", json={}, headers=same)
        assert created.status_code == 201
        sid = created.json()["session"]["id"]
        assert client.get("/api/sessions", headers=evil).status_code == 200  # reads: token only
        with (
            pytest.raises(WebSocketDenialResponse) as denied,
            client.websocket_connect(f"/api/sessions/{sid}/live", headers=evil),
        ):
            pass
        assert denied.value.status_code == 403
        with client.websocket_connect(f"/api/sessions/{sid}/live", headers=same) as ws:
            assert ws.receive_json()["kind"] == "hello"


def test_a_loopback_server_answers_only_to_its_own_host_names(env: WebEnv) -> None:
    """DNS rebinding: evil.example resolving to 127.0.0.1 still sends Host: evil.example."""
    hosts = loopback_hosts("127.0.0.1", 3080)
    assert {"127.0.0.1:3080", "localhost:3080", "[::1]:3080"} <= hosts
    with TestClient(app_for(env, allowed_hosts=hosts), base_url="http://127.0.0.1:3080") as ok:
        assert ok.get("/api/sessions", headers=AUTH).status_code == 200
        rebound = ok.get("/api/sessions", headers={**AUTH, "Host": "evil.example:3080"})
        assert error_of(rebound) == (403, "FORBIDDEN")


def test_the_static_route_serves_only_listed_files_and_odd_paths_are_404(env: WebEnv) -> None:
    listed = static_files(STATIC_DIR)
    assert {"app.js", "api.js", "style.css", "vendor/marked/marked.esm.js"} <= set(listed)
    assert "index.html" not in listed
    with TestClient(app_for(env), raise_server_exceptions=False) as client:
        client.headers.update(AUTH)
        for name in listed:
            assert client.get(f"/s/{name}").status_code == 200, name
        for odd in (
            "/s/app.js%00.png",
            "/s/%00",
            "/s/../web/app.py",
            "/s/%2e%2e/auth.py",
            "/s/index.html",
            "/s/vendor",
            "/s//etc/passwd",
            "/s/app.js/",
            "/s/%ff%fe",
            "/s/" + "a" * 5000,
        ):
            response = client.get(odd)
            assert error_of(response) == (404, "NOT_FOUND"), odd
            assert "Traceback" not in response.text


def test_error_bodies_never_echo_a_path_holding_the_token(env: WebEnv) -> None:
    with TestClient(app_for(env)) as client:
        client.headers.update(AUTH)
        for path in (f"/s/{TOKEN}/app.js", f"/nope/{TOKEN}", f"/api/{TOKEN}"):
            response = client.get(path)
            assert response.status_code == 404 and TOKEN not in response.text
        wrong_method = client.delete(f"/api/sessions?token={TOKEN}")
        assert TOKEN not in wrong_method.text


def test_every_html_answer_carries_the_csp(env: WebEnv) -> None:
    with TestClient(app_for(env)) as client:
        for response in (client.get(f"/?token={TOKEN}"), client.get("/"), client.get("/nope")):
            assert "default-src 'none'" in response.headers["content-security-policy"]


def test_a_short_token_cannot_expose_the_server_to_a_network() -> None:
    with pytest.raises(UsageError, match="at least 32 characters"):
        check_bind("0.0.0.0", explicit_token=True, token="x" * 31)
    check_bind("0.0.0.0", explicit_token=True, token="x" * 32)
    check_bind("127.0.0.1", explicit_token=True, token="short")


def test_the_token_can_come_from_dsh_web_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served: list[Any] = []

    class FakeServer:
        stopped_by = None  # served until its end, no signal

        def run(self, sockets: list[Any]) -> None:
            served.extend(sockets)

    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(web_cli, "make_server", lambda app: FakeServer())
    monkeypatch.setenv("DSH_WEB_TOKEN", "short-token")
    refused = CliRunner().invoke(web_cli.web, ["--host", "0.0.0.0", "--port", "0", "--no-open"])
    assert refused.exit_code == 2 and "at least 32 characters" in refused.stderr
    token = "t" * 40
    monkeypatch.setenv("DSH_WEB_TOKEN", token)
    result = CliRunner().invoke(web_cli.web, ["--host", "0.0.0.0", "--port", "0", "--no-open"])
    assert result.exit_code == 0, result.output
    assert f"/?token={token}" in result.stdout
    for sock in served:
        sock.close()


def test_a_page_whose_server_came_back_with_another_token_never_sends_it_the_token(
    browser: Any, tmp_path: Path
) -> None:
    """``dsh web`` restarted with another token on the same port: the open page's live streams
    (the session's and the server's) drop; before either sends the token again the page asks
    the server to prove it knows it (``GET /api/hello``), which this one cannot, so the page
    stops reconnecting, says what to do, and the new server never sees the old token (no
    request of the page's is refused: none carried a token, nor asked without one)."""
    env = make_env(tmp_path)
    first = BackgroundServer(env.app()).start()
    port = first.port
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{first.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        first.stop()
        limiter = CountingLimiter()
        other = create_app(env.registry(), token="another-token-0123456789abcdef", limiter=limiter)
        second = BackgroundServer(other, port=port).start()
        try:
            toast = page.locator("#toast")
            toast.wait_for(state="visible", timeout=30_000)
            assert "is not the dsh web that opened this page" in toast.inner_text()
            assert page.evaluate("() => window.dsh.socket") is None  # no reconnect under way
            page.wait_for_function("() => window.dsh.warnings.refused")  # the server's stream
            assert page.evaluate("() => window.dsh.warnings.socket") is None
            assert page.inner_text("#connection").startswith("Disconnected: the server at this")
            assert limiter.failed == 0
        finally:
            second.stop()
    finally:
        context.close()


def test_no_api_answer_can_be_sniffed_as_html(env: WebEnv) -> None:
    """Every answer but the page is JSON with ``nosniff``, the errors that quote hostile text
    from the request too: a browser never renders one as a document of this origin."""
    hostile = "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"
    with TestClient(app_for(env), raise_server_exceptions=False) as client:
        client.headers.update(AUTH)
        sid = client.post("/api/sessions", json={}).json()["session"]["id"]
        answers = [
            client.get("/api/sessions"),
            client.get(f"/api/sessions/{hostile}"),
            client.get(f"/api/sessions/{sid}/find", params={"q": hostile}),
            client.get(f"/api/sessions/{sid}/find", params={"q": "x" * 201}),
            client.get(f"/api/sessions/{sid}/history", params={"before_seq": hostile}),
            client.post(f"/api/sessions/{sid}/prompt", content=hostile.encode()),
            client.post(f"/api/sessions/{sid}/prompt", json={"text": 1, hostile: 2}),
            client.post("/api/sessions", json={"cwd": hostile}),
            client.post(f"/api/sessions/{sid}/approvals/{hostile}", json={"answer": "once"}),
            client.get(f"/api/{hostile}"),
            client.get(f"/s/{hostile}"),
            client.delete("/api/sessions"),
            client.get("/api/sessions", headers={"Authorization": f"Bearer {hostile}"}),
        ]
        for answer in answers:
            assert answer.headers["content-type"] == "application/json", answer.request.url
            assert answer.headers["x-content-type-options"] == "nosniff"
            answer.json()
        assert [a.status_code for a in answers] == [
            200, 404, 200, 400, 400, 400, 400, 400, 404, 404, 404, 405, 401,
        ]  # fmt: skip
        page = client.get("/")
        assert page.headers["content-type"] == "text/html; charset=utf-8"


def test_dsh_web_refuses_a_host_name_it_does_not_answer_to(tmp_path: Path) -> None:
    """DNS rebinding, through the real command: a page of evil.example, its name resolving to
    127.0.0.1 again, reaches the server as the same origin, but its requests say
    ``Host: evil.example:PORT``; they are refused before the token is looked at."""
    with dsh_web_process(tmp_path) as web:
        bearer = {"Authorization": f"Bearer {web.token}"}
        port = web.port
        with httpx.Client(base_url=web.base, timeout=30) as http:
            for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
                for path, headers in (("/", {}), ("/s/app.js", {}), ("/api/sessions", bearer)):
                    refused = http.get(path, headers={**headers, "Host": host})
                    assert error_of(refused) == (403, "FORBIDDEN"), (host, path)
                created = http.post("/api/sessions", json={}, headers={**bearer, "Host": host})
                assert error_of(created) == (403, "FORBIDDEN")
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                assert http.get("/api/sessions", headers={**bearer, "Host": host}).is_success
