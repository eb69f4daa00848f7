"""What a route sends besides its key, read off a real HTTP server on 127.0.0.1 that records
every header line: the user's ``provider.headers`` on every request, whatever the server, and
none of the SDKs' platform headers (``X-Stainless-*``: the OS, the architecture, the Python and
package versions) to a server that is not the SDK's own, which is told ``dsh/<version>`` as the
``User-Agent`` rather than the SDK's name and version."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import anthropic
import openai
import pytest

from dsh.llm.registry import make_provider
from tests.llm.fake_server import FakeServer, Recorded, anthropic_text, openai_text
from tests.llm.provider_helpers import collect, make_request

GATEWAY_TOKEN = "gateway-token-of-the-user-0123"
HEADERS = {"X-Gateway-Token": GATEWAY_TOKEN, "X-Tenant": "team blue"}
ROUTES = [
    ("openai-compatible", None),
    ("openai-compatible", "server-key-123"),
    ("deepseek", "deepseek-key-456"),  # DeepSeek's SDK is OpenAI's: another's server
    ("openai", "openai-key-789"),  # the openai provider, on another server
    ("anthropic", "sk-ant-route-key"),
]


def platform_lines(recorded: Recorded) -> list[tuple[str, str]]:
    """The header lines of ``recorded`` that describe dsh's machine: the SDKs' own."""
    return [(n, v) for n, v in recorded.header_lines if n.lower().startswith("x-stainless-")]


def lines_named(recorded: Recorded, name: str) -> list[str]:
    return [value for line, value in recorded.header_lines if line.lower() == name.lower()]


def chat(
    server: FakeServer, name: str, *, api_key: str | None, headers: dict[str, str] | None
) -> list[Recorded]:
    """Build ``name``'s route to ``server`` as dsh does and send two chat requests."""
    base_url = server.url + ("" if name == "anthropic" else "/v1")
    provider, model, _ = make_provider(
        name, model="m", base_url=base_url, api_key=api_key, environ={}, headers=headers
    )
    for _ in range(2):
        server.queue(anthropic_text("hi") if name == "anthropic" else openai_text("hi"))
        collect(provider.stream(make_request(provider=name, model=model), history=()))
    return server.requests


@pytest.mark.parametrize(("name", "api_key"), ROUTES)
def test_provider_headers_go_with_every_request_of_the_route(
    server: FakeServer, name: str, api_key: str | None
):
    requests = chat(server, name, api_key=api_key, headers=HEADERS)

    assert len(requests) == 2
    for recorded in requests:
        assert lines_named(recorded, "X-Gateway-Token") == [GATEWAY_TOKEN]
        assert lines_named(recorded, "X-Tenant") == ["team blue"]


@pytest.mark.parametrize(("name", "api_key"), ROUTES)
def test_a_server_that_is_not_the_sdks_own_gets_no_platform_header(
    server: FakeServer, name: str, api_key: str | None
):
    for recorded in chat(server, name, api_key=api_key, headers=None):
        assert platform_lines(recorded) == []
        assert recorded.headers["content-type"] == "application/json"  # the request is whole


@pytest.mark.parametrize(("name", "api_key"), ROUTES)
def test_a_server_that_is_not_the_sdks_own_is_told_dsh_not_the_sdk_as_user_agent(
    server: FakeServer, name: str, api_key: str | None
):
    for recorded in chat(server, name, api_key=api_key, headers=None):
        (agent,) = lines_named(recorded, "User-Agent")
        assert agent == f"dsh/{version('dsh')}"


def test_a_user_agent_in_provider_headers_wins(server: FakeServer):
    headers = {"User-Agent": "corp-gateway-client/1"}
    for recorded in chat(server, "openai-compatible", api_key=None, headers=headers):
        assert lines_named(recorded, "User-Agent") == ["corp-gateway-client/1"]


def test_provider_headers_win_over_a_header_of_the_sdks_environment_they_name(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
):
    """A gateway header the user moved from ``OPENAI_CUSTOM_HEADERS`` to ``provider.headers``
    is sent once, with the configured value; the variable's others stay cancelled."""
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "x-gateway-token: stale\nX-Other: other-value")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-of-the-environment")
    headers = {"X-Gateway-Token": GATEWAY_TOKEN, "OpenAI-Organization": "org-for-the-gateway"}

    (recorded, _) = chat(server, "openai-compatible", api_key=None, headers=headers)

    assert lines_named(recorded, "X-Gateway-Token") == [GATEWAY_TOKEN]
    assert lines_named(recorded, "OpenAI-Organization") == ["org-for-the-gateway"]
    assert lines_named(recorded, "X-Other") == []
    assert lines_named(recorded, "Authorization") == ["Bearer none"]


def sent_by_default(client: Any) -> dict[str, str]:
    """The headers a built client adds to every request (an ``Omit`` one is not sent)."""
    return {name: value for name, value in client.default_headers.items() if isinstance(value, str)}


@pytest.mark.parametrize(
    ("name", "base_url", "sdk"),
    [
        ("openai", None, openai.AsyncOpenAI),
        ("openai-compatible", "https://api.openai.com/v1", openai.AsyncOpenAI),
        ("anthropic", None, anthropic.AsyncAnthropic),
    ],
)
def test_the_sdks_own_server_keeps_its_platform_headers_and_gets_provider_headers(
    name: str, base_url: str | None, sdk: type
):
    provider, _, _ = make_provider(
        name, model="m", base_url=base_url, api_key="key-0123", environ={}, headers=HEADERS
    )
    client = provider.sdk_client()[0]  # type: ignore[attr-defined]

    assert isinstance(client, sdk)
    sent = sent_by_default(client)
    assert sent["X-Stainless-Lang"] == "python"
    assert not sent["User-Agent"].startswith("dsh/")  # the SDK's own, as its service expects
    assert "X-Stainless-OS" in sent and "X-Stainless-Package-Version" in sent
    assert sent["X-Gateway-Token"] == GATEWAY_TOKEN and sent["X-Tenant"] == "team blue"
    assert provider.sdk_client()[1] == {}  # type: ignore[attr-defined]  # nothing dropped
