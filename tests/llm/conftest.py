"""Fixtures for the provider tests: a fake HTTP server per test, no proxies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeServer

_PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A running fake server; proxy variables are cleared so the SDKs talk to it directly."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as fake:
        yield fake
