"""The access token on every request and on the live stream; no CORS; binding rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient, WebSocketDenialResponse

from dsh.cli import web as web_cli
from dsh.errors import UsageError
from dsh.web.auth import check_bind, is_loopback, new_token, token_matches
from tests.web.conftest import TOKEN, WebEnv, error_of
from tests.web.real_command import dsh_web_process

API_ROUTES = [
    ("GET", "/api/sessions"),
    ("POST", "/api/sessions"),
    ("GET", "/api/sessions/{sid}"),
    ("GET", "/api/sessions/{sid}/history"),
    ("GET", "/api/sessions/{sid}/paths"),
    ("POST", "/api/sessions/{sid}/resume"),
    ("POST", "/api/sessions/{sid}/close"),
    ("POST", "/api/sessions/{sid}/prompt"),
    ("POST", "/api/sessions/{sid}/cancel"),
    ("POST", "/api/sessions/{sid}/compact"),
    ("POST", "/api/sessions/{sid}/approvals/x"),
    ("GET", "/api/warnings"),
]


@pytest.fixture
def bare(env: WebEnv) -> Any:
    """A client that sends no token by itself, and an open session id."""
    with TestClient(env.app()) as c:
        sid = c.post("/api/sessions", headers={"Authorization": f"Bearer {TOKEN}"}).json()[
            "session"
        ]["id"]
        yield c, sid


@pytest.mark.parametrize(("method", "path"), API_ROUTES)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["missing", "wrong", "not-bearer"],
)
def test_api_routes_need_the_token(
    bare: Any, method: str, path: str, headers: dict[str, str]
) -> None:
    client, sid = bare
    response = client.request(method, path.format(sid=sid), headers=headers, json={})
    assert error_of(response) == (401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"] == "Bearer"


def test_query_token_is_not_accepted_on_the_api(bare: Any) -> None:
    client, _ = bare
    assert error_of(client.get(f"/api/sessions?token={TOKEN}")) == (401, "UNAUTHORIZED")


def test_the_right_bearer_token_is_accepted(bare: Any) -> None:
    client, _ = bare
    ok = client.get("/api/sessions", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200


def test_the_page_and_its_files_are_public_and_never_set_a_cookie(bare: Any) -> None:
    """The page's script keeps the token in its origin's storage: a cookie for 127.0.0.1 would
    be sent to every other server on that address, whatever its port."""
    client, _ = bare
    for url in ("/", "/?token=nope", f"/?token={TOKEN}"):
        page = client.get(url)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert 'src="/s/app.js"' in page.text and TOKEN not in page.text
        assert "set-cookie" not in page.headers
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert not client.cookies


def test_static_files_are_served_without_the_token_and_odd_paths_are_404(bare: Any) -> None:
    client, _ = bare
    script = client.get("/s/app.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    vendor = client.get("/s/vendor/marked/marked.esm.js")
    assert vendor.status_code == 200 and "marked" in vendor.text
    assert error_of(client.get("/s/nope.js")) == (404, "NOT_FOUND")
    assert error_of(client.get("/s/%2e%2e/app.py")) == (404, "NOT_FOUND")
    assert error_of(client.post("/s/app.js")) == (401, "UNAUTHORIZED")


@pytest.mark.parametrize("stream", ["/api/sessions/{sid}/live", "/api/live"])
def test_live_streams_need_the_token(bare: Any, stream: str) -> None:
    """A session's live stream and the server's (its warnings) alike."""
    client, sid = bare
    path = stream.format(sid=sid)
    wrong = ["dsh", "dsh.token.wrong"]
    for query, protocols in (("", None), (f"?token={TOKEN}", None), ("", wrong)):
        with (
            pytest.raises(WebSocketDenialResponse) as denied,
            client.websocket_connect(f"{path}{query}", subprotocols=protocols),
        ):
            pass
        assert denied.value.status_code == 401
        assert denied.value.json()["error"]["code"] == "UNAUTHORIZED"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with client.websocket_connect(path, headers=headers) as ws:
        assert ws.accepted_subprotocol is None
        assert ws.receive_json()["kind"] == "hello"
    page = ["dsh", f"dsh.token.{TOKEN}"]  # what the page offers (it cannot set headers)
    with client.websocket_connect(path, subprotocols=page) as ws:
        assert ws.accepted_subprotocol == "dsh"
        assert ws.receive_json()["kind"] == "hello"


def test_no_cors_headers_ever(bare: Any) -> None:
    client, _ = bare
    origin = {"Origin": "http://evil.example"}
    responses = [
        client.get("/api/sessions", headers={**origin, "Authorization": f"Bearer {TOKEN}"}),
        client.get("/api/sessions", headers=origin),
        client.options(
            "/api/sessions",
            headers={**origin, "Access-Control-Request-Method": "POST"},
        ),
    ]
    for response in responses:
        assert not any(k.lower().startswith("access-control-") for k in response.headers)


def test_security_headers_on_every_answer(bare: Any) -> None:
    client, _ = bare
    for response in (client.get("/api/sessions"), client.get(f"/?token={TOKEN}")):
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-content-type-options"] == "nosniff"


def test_tokens_are_random_and_compared_exactly() -> None:
    first, second = new_token(), new_token()
    assert first != second and len(first) >= 40
    assert token_matches(first, first)
    assert not token_matches(first, first[:-1])
    assert not token_matches(first, None)


# ---- binding --------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts_bind_without_a_token(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, explicit_token=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_non_loopback_needs_an_explicit_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(UsageError, match="--token"):
        check_bind(host, explicit_token=False)
    check_bind(host, explicit_token=True)


def test_cli_refuses_a_non_loopback_host_without_token_exit_2() -> None:
    result = CliRunner().invoke(web_cli.web, ["--host", "0.0.0.0", "--no-open"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsh: error: refusing to bind 0.0.0.0")


def test_cli_refuses_a_token_that_cannot_travel_in_a_url() -> None:
    result = CliRunner().invoke(web_cli.web, ["--token", "a/b c", "--no-open"])
    assert result.exit_code == 2 and "--token" in result.stderr


def test_cli_binds_non_loopback_with_an_explicit_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served: list[Any] = []

    class FakeServer:
        stopped_by = None  # served until its end, no signal

        def run(self, sockets: list[Any]) -> None:
            served.extend(sockets)

    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(web_cli, "make_server", lambda app: FakeServer())
    token = "an-explicit-token-of-some-length"
    result = CliRunner().invoke(
        web_cli.web, ["--host", "0.0.0.0", "--port", "0", "--token", token, "--no-open"]
    )
    assert result.exit_code == 0, result.output
    port = served[0].getsockname()[1]
    assert f"http://0.0.0.0:{port}/?token={token}" in result.stdout
    for sock in served:
        sock.close()


def test_dsh_web_serves_until_interrupted(tmp_path: Path) -> None:
    """The real command in a process: prints the URL with a fresh token, answers with it,
    refuses without it, and exits cleanly on Ctrl-C."""
    with dsh_web_process(tmp_path) as web:
        assert len(web.token) >= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", web.token)
        with httpx.Client(base_url=web.base, timeout=10) as http:
            assert http.get("/api/sessions").status_code == 401
            ok = http.get("/api/sessions", headers={"Authorization": f"Bearer {web.token}"})
            assert ok.status_code == 200 and ok.json() == {"sessions": []}
            assert http.get(f"/?token={web.token}").status_code == 200
