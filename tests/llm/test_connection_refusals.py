"""Which failed connections are retried (``dsh.llm.errors``): a connection refused by a
loopback address fails the call at once, naming the address; any other connection error (a
remote server refusing during a restart, a connection that broke) stays a retried
``CONNECTION``."""

from __future__ import annotations

import asyncio
import socket

import anthropic
import httpx2
import openai
import pytest

from dsh.errors import ProviderError
from dsh.llm.errors import ErrorCode, map_anthropic_error, map_openai_error
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.retry import stream_with_retry
from tests.llm.provider_helpers import make_request

SDKS = [(openai, map_openai_error), (anthropic, map_anthropic_error)]


def _refused(sdk: object, url: str) -> BaseException:
    """What an SDK raises when the server at ``url`` refused the connection: its connection
    error, caused by the HTTP library's, caused by the socket's ``ECONNREFUSED``."""
    request = httpx2.Request("POST", url)
    library = httpx2.ConnectError("All connection attempts failed", request=request)
    library.__cause__ = ConnectionRefusedError(111, "Connect call failed")
    wrapped = sdk.APIConnectionError(request=request)  # type: ignore[attr-defined]
    wrapped.__cause__ = library
    return wrapped


@pytest.mark.parametrize(("sdk", "mapper"), SDKS)
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8080/v1/chat/completions", "127.0.0.1:8080"),
        ("http://127.0.0.2:11434/v1/chat/completions", "127.0.0.2:11434"),
        ("http://localhost:8000/v1/chat/completions", "localhost:8000"),
        ("http://[::1]:8000/v1/chat/completions", "[::1]:8000"),
        ("http://localhost/v1/chat/completions", "localhost:80"),
    ],
)
def test_a_connection_refused_by_this_machine_is_not_retried(sdk, mapper, url, shown):
    error = mapper(_refused(sdk, url))
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, False)
    assert error.detail == (
        f"nothing listens at {shown} (connection refused): is the server running?"
    )


@pytest.mark.parametrize(("sdk", "mapper"), SDKS)
@pytest.mark.parametrize(
    "url", ["http://10.0.0.5:8000/v1/chat/completions", "https://llm.example.com/v1/messages"]
)
def test_a_connection_refused_by_another_machine_is_retried(sdk, mapper, url):
    """A remote server refusing (a restart behind a proxy) is a blip retries are for."""
    error = mapper(_refused(sdk, url))
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, True)
    assert error.detail == "Connection error. (ConnectError: All connection attempts failed)"


@pytest.mark.parametrize(("sdk", "mapper"), SDKS)
def test_a_connection_to_this_machine_that_broke_without_a_refusal_is_retried(sdk, mapper):
    request = httpx2.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    wrapped = sdk.APIConnectionError(request=request)
    wrapped.__cause__ = httpx2.RemoteProtocolError("Server disconnected", request=request)
    error = mapper(wrapped)
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, True)


def test_the_first_call_to_a_local_server_that_is_not_running_is_made_once():
    """Was four attempts with back-off (about 1.75 s of sleeps on average) before the error."""
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatProvider("openai-compatible", "m", f"http://127.0.0.1:{port}/v1", "k")
    retried: list[int] = []

    async def call() -> None:
        async for _ in stream_with_retry(
            provider,
            make_request(),
            history=(),
            on_retry=lambda attempt, error, delay: retried.append(attempt),
        ):
            pass

    with pytest.raises(ProviderError) as failed:
        asyncio.run(call())
    assert (failed.value.code, failed.value.retryable) == ("CONNECTION", False)
    assert retried == []
