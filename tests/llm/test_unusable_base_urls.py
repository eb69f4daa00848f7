"""A base URL no request can be sent to, given to an adapter directly (config validation
bypassed), fails each call with a mapped ``INVALID_URL`` provider error, never an httpx
exception; httpx's and httpx2's URL and request errors map in ``dsh.llm.errors`` however they
arrive (raised bare, or wrapped by an SDK as a connection error)."""

from __future__ import annotations

import anthropic
import httpx
import httpx2
import openai
import pytest

from dsh.errors import ProviderError
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.errors import ErrorCode, map_anthropic_error, map_openai_error
from dsh.llm.openai_compat import OpenAICompatProvider
from tests.llm.provider_helpers import collect_until_error, make_request

BAD_URLS = [
    "bad\x1b[31m",  # the SDK's own parser refuses it (httpx2.InvalidURL) when the client is built
    "ftp://x",
    "http://",
    "not a url",
    "http://127.0.0.1:99999/v1",
]


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize("adapter", [OpenAICompatProvider, AnthropicProvider])
def test_an_adapter_given_an_unusable_base_url_fails_each_call_with_invalid_url(adapter, url):
    provider = adapter("openai-compatible", "m", url, "k")

    for _ in range(2):  # every call, not only the first
        _, error = collect_until_error(provider.stream(make_request(), history=()))
        assert (error.code, error.retryable) == (ErrorCode.INVALID_URL, False)
        assert repr(url) in error.detail and "\x1b" not in str(error)


@pytest.mark.parametrize("library", [httpx, httpx2])
@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("InvalidURL", ErrorCode.INVALID_URL),
        ("UnsupportedProtocol", ErrorCode.INVALID_URL),
        ("LocalProtocolError", ErrorCode.BAD_REQUEST),
    ],
)
@pytest.mark.parametrize("mapper", [map_openai_error, map_anthropic_error])
def test_an_http_library_error_raised_bare_maps_to_a_code_that_is_not_retried(
    library, name, code, mapper
):
    exc = getattr(library, name)("Request URL has an unsupported protocol 'ftp://'.")

    error = mapper(exc)

    assert isinstance(error, ProviderError)
    assert (error.code, error.retryable) == (code, False)
    assert f"{name}: Request URL has an unsupported protocol" in error.detail


@pytest.mark.parametrize("sdk", [openai, anthropic])
def test_an_unsupported_protocol_the_sdk_wrapped_as_a_connection_error_is_invalid_url(sdk):
    request = httpx2.Request("GET", "http://127.0.0.1/v1")
    try:
        raise sdk.APIConnectionError(request=request) from httpx2.UnsupportedProtocol(
            "Request URL is missing an 'http://' or 'https://' protocol."
        )
    except sdk.APIConnectionError as wrapped:
        error = (map_openai_error if sdk is openai else map_anthropic_error)(wrapped)

    assert (error.code, error.retryable) == (ErrorCode.INVALID_URL, False)
    assert "missing an 'http://' or 'https://' protocol" in error.detail


@pytest.mark.parametrize("library", [httpx, httpx2])
def test_a_broken_connection_of_either_http_library_stays_a_retried_connection_error(library):
    error = map_openai_error(library.ReadError("peer closed the connection"))

    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, True)
