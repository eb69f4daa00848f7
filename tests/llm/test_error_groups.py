"""An exception group (a task group's failure) maps as its first leaf that maps to a known code,
depth first, in order (``dsh.llm.errors``): a refused connection is ``CONNECTION`` inside a
group as outside it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import anyio
import httpx2
import openai
import pytest

from dsh.errors import ProviderError
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.errors import ErrorCode, map_anthropic_error, map_openai_error, provider_error
from dsh.llm.openai_compat import OpenAICompatProvider
from tests.llm.provider_helpers import collect_until_error, make_request

MAPPERS = [map_openai_error, map_anthropic_error]


def _refused_port() -> int:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _connect_in_a_task_group(url: str) -> None:
    async with httpx2.AsyncClient(trust_env=False) as client, anyio.create_task_group() as group:
        group.start_soon(client.get, url)


@pytest.mark.parametrize("mapper", MAPPERS)
def test_a_refused_port_inside_a_task_group_is_a_connection_error(mapper):
    url = f"http://127.0.0.1:{_refused_port()}/v1"
    with pytest.raises(ExceptionGroup) as raised:
        anyio.run(_connect_in_a_task_group, url)
    (leaf,) = raised.value.exceptions
    assert isinstance(leaf, httpx2.ConnectError)  # the real refusal, inside the group
    grouped, plain = mapper(raised.value), mapper(leaf)
    # refused by 127.0.0.1: not retried (dsh.llm.errors), inside the group as outside it
    assert (grouped.code, grouped.retryable) == (ErrorCode.CONNECTION, False)
    assert (grouped.code, grouped.detail, grouped.retryable) == (
        plain.code,
        plain.detail,
        plain.retryable,
    )


@pytest.mark.parametrize("mapper", MAPPERS)
def test_the_first_mappable_leaf_of_nested_groups_decides(mapper):
    timeout = httpx2.ReadTimeout("read timed out")
    refused = httpx2.ConnectError("connection refused")
    group = ExceptionGroup(
        "outer", [ExceptionGroup("inner", [RuntimeError("not mappable"), timeout]), refused]
    )
    error = mapper(group)
    assert (error.code, error.detail) == (ErrorCode.TIMEOUT, mapper(timeout).detail)
    assert mapper(ExceptionGroup("g", [refused, timeout])).code == ErrorCode.CONNECTION


@pytest.mark.parametrize("mapper", MAPPERS)
def test_a_provider_error_inside_a_group_keeps_its_code(mapper):
    limited = provider_error(ErrorCode.RATE_LIMITED, "slow down", retry_after=2.0)
    error = mapper(ExceptionGroup("g", [KeyError("x"), limited]))
    assert error is limited


@pytest.mark.parametrize("mapper", MAPPERS)
def test_a_group_without_a_mappable_leaf_is_unknown_naming_its_first_leaf(mapper):
    error = mapper(ExceptionGroup("g", [RuntimeError("first"), KeyError("second")]))
    assert isinstance(error, ProviderError)
    assert (error.code, error.detail) == (ErrorCode.UNKNOWN, "RuntimeError: first")


class _RelayBody(httpx2.AsyncByteStream):
    """A reply body relayed from an upstream that a task group connects to, as a proxy in the
    client would: the upstream refuses, so the body breaks with the group's failure."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        await _connect_in_a_task_group(self.upstream)
        yield b""  # not reached: the upstream refused


class _RelayTransport(httpx2.AsyncBaseTransport):
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=headers, stream=_RelayBody(self.upstream))


def _relayed(sdk: Any, upstream: int) -> Any:
    http = httpx2.AsyncClient(transport=_RelayTransport(f"http://127.0.0.1:{upstream}"))
    return sdk(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, http_client=http)


@pytest.mark.parametrize(
    "provider",
    [
        lambda port: OpenAICompatProvider("deepseek", client=_relayed(openai.AsyncOpenAI, port)),
        lambda port: AnthropicProvider(model="m", client=_relayed(anthropic.AsyncAnthropic, port)),
    ],
    ids=["openai", "anthropic"],
)
def test_a_stream_a_task_group_breaks_is_the_connection_error_of_its_leaf(provider):
    upstream = _refused_port()
    _, error = collect_until_error(provider(upstream).stream(make_request(), history=()))
    # the upstream 127.0.0.1 refused: not retried, naming the address that refused
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, False)
    assert f"127.0.0.1:{upstream} (connection refused)" in error.detail
