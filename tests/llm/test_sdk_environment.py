"""What the provider SDKs read from the environment on their own reaches only the service it is
set for, read off a real HTTP server on 127.0.0.1 that records every header line.

The OpenAI SDK turns ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID`` into ``OpenAI-Organization`` /
``OpenAI-Project`` and ``OPENAI_CUSTOM_HEADERS`` into headers of their own (an
``Authorization`` among them replacing the client's key); the Anthropic SDK does the same with
``ANTHROPIC_CUSTOM_HEADERS``. A route to any other server gets none of them and its own key."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from dsh.llm.registry import make_provider
from tests.llm.fake_server import FakeServer, Recorded, anthropic_text, openai_text
from tests.llm.provider_helpers import collect, make_request

ORG = "org-of-the-user-0123"
PROJECT = "proj_of_the_user_4567"
GATEWAY = "gateway-secret-89ab"
ENV_BEARER = "bearer-from-the-environment-cdef"
ADMIN = "sk-admin-of-the-user-0123"
AUTH_TOKEN = "sk-ant-auth-token-of-the-user-4567"
SECRETS = (ORG, PROJECT, GATEWAY, ENV_BEARER, ADMIN, AUTH_TOKEN)
CUSTOM = f"Authorization: Bearer {ENV_BEARER}\nX-Gateway: {GATEWAY}"
NOWHERE = "http://127.0.0.1:9/v1"
"""A port nothing listens on: a request sent there fails, so the test server's answer proves
the SDK's own base-URL variable was not used."""
ROUTE_KEY = "route-key-of-this-server"
OPENAI_KEY = "sk-openai-of-the-user-0123456789"
ENVIRON = {"OPENAI_API_KEY": OPENAI_KEY, "DEEPSEEK_API_KEY": ROUTE_KEY}
"""The environment ``make_provider`` chooses each route's key from."""


@pytest.fixture
def openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's OpenAI settings, where the OpenAI SDK reads them: the process environment."""
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    monkeypatch.setenv("OPENAI_PROJECT_ID", PROJECT)
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", CUSTOM)
    monkeypatch.setenv("OPENAI_ADMIN_KEY", ADMIN)
    monkeypatch.setenv("OPENAI_BASE_URL", NOWHERE)


@pytest.fixture
def anthropic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", CUSTOM)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", AUTH_TOKEN)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", NOWHERE.removesuffix("/v1"))


def lines_of(recorded: Recorded, *names: str) -> list[str]:
    """The values of every header line named one of ``names`` (any case)."""
    wanted = {name.lower() for name in names}
    return [value for name, value in recorded.header_lines if name.lower() in wanted]


def leaks(recorded: Recorded) -> list[tuple[str, str]]:
    """The header lines of ``recorded`` that carry something of the environment's."""
    environmental = {"openai-organization", "openai-project", "x-gateway"}
    return [
        (name, value)
        for name, value in recorded.header_lines
        if name.lower() in environmental or any(secret in value for secret in SECRETS)
    ]


def chat_once(server: FakeServer, name: str, *, api_key: str | None = None) -> Recorded:
    """Build ``name``'s route to ``server`` as dsh does and send one chat request."""
    base_url = server.url + ("" if name == "anthropic" else "/v1")
    provider, model, _ = make_provider(
        name, model="m", base_url=base_url, api_key=api_key, environ=ENVIRON
    )
    server.queue(anthropic_text("hi") if name == "anthropic" else openai_text("hi"))
    collect(provider.stream(make_request(provider=name, model=model), history=()))
    (recorded,) = server.requests
    return recorded


@pytest.mark.usefixtures("openai_environment")
@pytest.mark.parametrize(
    ("name", "api_key", "authorization"),
    [
        ("openai-compatible", None, "Bearer none"),  # a keyless server, as it has always been
        ("openai-compatible", "server-key-123", "Bearer server-key-123"),
        ("deepseek", None, f"Bearer {ROUTE_KEY}"),
        ("openai", None, f"Bearer {OPENAI_KEY}"),  # the openai provider, on another server
    ],
)
def test_a_server_that_is_not_openais_gets_no_header_of_the_openai_environment(
    server: FakeServer, name: str, api_key: str | None, authorization: str
):
    recorded = chat_once(server, name, api_key=api_key)

    assert recorded.path == "/v1/chat/completions"
    assert leaks(recorded) == []
    assert lines_of(recorded, "Authorization") == [authorization]


@pytest.mark.usefixtures("anthropic_environment")
def test_another_server_on_the_anthropic_route_gets_no_header_of_the_anthropic_environment(
    server: FakeServer,
):
    recorded = chat_once(server, "anthropic", api_key="sk-ant-route-key")

    assert recorded.path == "/v1/messages"
    assert leaks(recorded) == []
    assert lines_of(recorded, "Authorization", "X-Api-Key") == ["Bearer sk-ant-route-key"]


@pytest.mark.parametrize(
    "custom",
    [
        # CRLF lines, white space around names, a line without a colon, colons in a value
        f"  X-Gateway : {GATEWAY}\r\nno colon here\r\nX-Trace: a:b:{ORG}\r\n",
        # one name in three cases, a lowercase authorization, an empty name
        f"x-gateway: {GATEWAY}\nX-GATEWAY: {GATEWAY}\nX-Gateway: {GATEWAY}\n"
        f"authorization: Bearer {ENV_BEARER}\n: {PROJECT}",
    ],
)
def test_every_header_the_sdk_would_parse_from_the_variable_is_kept_off(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, custom: str
):
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", custom)

    recorded = chat_once(server, "openai-compatible")

    assert leaks(recorded) == []
    assert lines_of(recorded, "Authorization") == ["Bearer none"]


def sent_by_default(client: Any) -> dict[str, str]:
    """The headers a built client adds to every request (an ``Omit`` one is not sent)."""
    return {name: value for name, value in client.default_headers.items() if isinstance(value, str)}


@pytest.mark.usefixtures("openai_environment")
@pytest.mark.parametrize(
    ("name", "base_url"),
    [("openai", None), ("openai-compatible", "https://api.openai.com/v1")],
)
def test_openais_own_server_keeps_the_sdks_environment_headers(name: str, base_url: str | None):
    provider, _, _ = make_provider(
        name, model="m", base_url=base_url, api_key=None, environ=ENVIRON
    )
    client = provider.sdk_client()[0]  # type: ignore[attr-defined]

    assert isinstance(client, openai.AsyncOpenAI)
    assert str(client.base_url) == "https://api.openai.com/v1/"
    sent = sent_by_default(client)
    assert sent["OpenAI-Organization"] == ORG
    assert sent["OpenAI-Project"] == PROJECT
    assert sent["X-Gateway"] == GATEWAY
    assert sent["Authorization"] == f"Bearer {ENV_BEARER}"  # the SDK's own rule, kept


@pytest.mark.usefixtures("openai_environment")
@pytest.mark.parametrize(
    "base_url",
    [
        "http://api.openai.com/v1",  # plain text
        "https://api.openai.com.evil.example/v1",
        "https://api.openai.com@evil.example/v1",
    ],
)
def test_only_https_on_api_openai_com_counts_as_openais_server(base_url: str):
    provider, _, _ = make_provider(
        "openai", model="m", base_url=base_url, api_key=None, environ=ENVIRON
    )
    sent = sent_by_default(provider.sdk_client()[0])  # type: ignore[attr-defined]

    assert not {"OpenAI-Organization", "OpenAI-Project", "X-Gateway"} & set(sent)
    assert sent["Authorization"] == f"Bearer {OPENAI_KEY}"


@pytest.mark.usefixtures("anthropic_environment")
def test_the_anthropic_route_goes_to_anthropic_whatever_anthropic_base_url_says():
    environ = {"ANTHROPIC_API_KEY": "sk-ant-route-key"}
    provider, _, _ = make_provider(
        "anthropic", model="m", base_url=None, api_key=None, environ=environ
    )
    client = provider.sdk_client()[0]  # type: ignore[attr-defined]

    assert isinstance(client, anthropic.AsyncAnthropic)
    assert str(client.base_url).rstrip("/") == "https://api.anthropic.com"
    sent = sent_by_default(client)
    assert sent["X-Gateway"] == GATEWAY  # Anthropic's own server: the SDK's headers are kept
    assert AUTH_TOKEN not in repr(sent)
