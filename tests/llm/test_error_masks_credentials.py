"""A server that echoes the credentials it received in an error (``Incorrect API key provided:
Bearer sk-…``, a gateway quoting its token) does not get them into dsh's error text, which the
log, an export, the web page and the terminal all show: each route masks its own key and its
``provider.headers`` values. Read off a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import pytest

from dsh.llm.errors import MASKED_CREDENTIAL, credentials_of
from dsh.llm.registry import make_provider
from tests.llm.fake_server import FakeServer, json_error
from tests.llm.provider_helpers import collect_until_error, make_request

KEY = "sk-route-key-0123456789"
TOKEN = "gateway-token-9876543210"
ROUTES = ["openai-compatible", "deepseek", "openai", "anthropic"]


@pytest.mark.parametrize("name", ROUTES)
@pytest.mark.parametrize("status", [401, 400])
def test_an_error_echoing_the_key_and_a_header_is_masked(
    server: FakeServer, name: str, status: int
) -> None:
    echo = f"Incorrect API key provided: Bearer {KEY} gw={TOKEN}; key again {KEY[:-1]}!"
    server.queue(json_error(status, {"error": {"message": echo, "type": "invalid_request"}}))
    base_url = server.url + ("" if name == "anthropic" else "/v1")
    provider, model, _ = make_provider(
        name,
        model="m",
        base_url=base_url,
        api_key=KEY,
        environ={},
        headers={"X-Gateway-Token": TOKEN, "X-Short": "abc"},
    )
    _, error = collect_until_error(
        provider.stream(make_request(provider=name, model=model), history=())
    )
    assert KEY not in error.detail and TOKEN not in error.detail
    assert KEY not in str(error) and TOKEN not in str(error)
    assert f"Bearer {MASKED_CREDENTIAL} gw={MASKED_CREDENTIAL}" in error.detail
    assert KEY[:-1] in error.detail  # only whole values are masked: no guessing at parts


def test_short_values_are_not_looked_for() -> None:
    """A placeholder key (``none``) or a short header would mask ordinary words."""
    assert credentials_of("none", {"X-Tenant": "blue", "X-Token": "long-enough"}) == (
        "long-enough",
    )
    assert credentials_of(None, {}) == ()
