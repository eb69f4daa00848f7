"""Where ``provider.headers`` go, read off real HTTP servers on 127.0.0.1: every request of the
conversation's route (its window probe and its chat requests, from ``dsh run`` as from the
route builder), a summariser on the conversation's provider and endpoint, and nowhere else; and
their values never reach the session's files, even when a tool prints one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.agent.runtime import resolve_route, summarizer_route
from dsh.config import Settings, load_settings
from dsh.llm import window as window_module
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    FakeServer,
    Recorded,
    json_ok,
    oa_chunk,
    oa_tool_call,
    openai_stream,
    openai_text,
)
from tests.llm.provider_helpers import collect, make_request

DSH = str(Path(sys.executable).with_name("dsh"))
TOKEN = "gateway-token-of-the-user-0123"
N_CTX = {"default_generation_settings": {"n_ctx": 8192}}


@pytest.fixture(autouse=True)
def _fresh_window_cache() -> Iterator[None]:
    window_module._CACHE.clear()
    yield
    window_module._CACHE.clear()


@pytest.fixture
def other() -> Iterator[FakeServer]:
    """A second server on 127.0.0.1 (the summariser's own endpoint)."""
    with FakeServer() as fake:
        yield fake


def received(fake: FakeServer) -> list[Recorded]:
    """Every request ``fake`` received, probes first."""
    return [*fake.fixed_requests, *fake.requests]


def tokens(fake: FakeServer) -> list[str | None]:
    """The gateway header of every request ``fake`` received, probes first."""
    return [r.headers.get("x-gateway-token") for r in received(fake)]


def _settings(tmp_path: Path, provider: dict, compaction: dict | None = None) -> Settings:
    overrides = {"provider": provider, "compaction": compaction or {}}
    return load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path, overrides=overrides)


def test_the_window_probe_and_the_chat_requests_carry_provider_headers(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok(N_CTX)
    server.queue(openai_text("one"), openai_text("two"))
    conversation = {
        "name": "openai-compatible",
        "base_url": server.url + "/v1",
        "model": "m",
        "headers": {"X-Gateway-Token": TOKEN},
    }
    route = resolve_route(_settings(tmp_path, conversation), environ={})
    for _ in range(2):
        collect(route.provider.stream(make_request(model="m"), history=()))

    assert route.context_window == 8192  # the probe was answered
    assert [r.path for r in received(server)] == ["/props", *["/v1/chat/completions"] * 2]
    assert tokens(server) == [TOKEN] * 3


def test_a_summariser_on_the_conversations_endpoint_sends_its_headers(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(openai_text("a summary"))
    conversation = {
        "name": "openai-compatible",
        "base_url": server.url + "/v1",
        "model": "big",
        "context_window": 8192,
        "headers": {"X-Gateway-Token": TOKEN},
    }
    compaction = {"summarizer": "small", "summarizer_base_url": server.url + "/v1"}
    settings = _settings(tmp_path, conversation, compaction)
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is not None and provider is not route.provider and model == "small"
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))

    paths = [r.path for r in received(server)]
    assert paths == ["/props", "/v1/models", "/v1/chat/completions"]  # its probe, its call
    assert tokens(server) == [TOKEN] * 3


def test_a_summariser_on_another_endpoint_gets_none_of_the_conversations_headers(
    tmp_path,
    server: FakeServer,  # noqa: F811
    other: FakeServer,
):
    for fake in (server, other):
        fake.fixed["/props"] = json_ok(N_CTX)
    other.queue(openai_text("a summary"))
    conversation = {
        "name": "openai-compatible",
        "base_url": server.url + "/v1",
        "model": "big",
        "headers": {"X-Gateway-Token": TOKEN},
    }
    compaction = {"summarizer": "small", "summarizer_base_url": other.url + "/v1"}
    settings = _settings(tmp_path, conversation, compaction)
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is not None and model is not None
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))

    assert tokens(server) == [TOKEN]  # the conversation's probe
    assert [r.path for r in received(other)] == ["/props", "/v1/chat/completions"]
    assert tokens(other) == [None, None]  # the summariser's probe and call
    assert not [line for r in received(other) for line in r.header_lines if TOKEN in line[1]]


def test_dsh_run_sends_provider_headers_and_keeps_their_values_out_of_the_session(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """Set from the environment (a TOML inline table): the probe and both chat requests carry
    the header and no platform header; a tool prints the value from a file of the workspace,
    and the logged result has it masked, so no file under ``DSH_HOME`` holds it."""
    server.fixed["/props"] = json_ok(N_CTX)
    (tmp_path / "gateway.env").write_text(f"TOKEN={TOKEN}\n")
    echo = json.dumps({"command": "cat gateway.env"})
    server.queue(
        openai_stream(
            oa_chunk(tool_calls=[oa_tool_call(0, id="c1", name="bash", arguments=echo)]),
            oa_chunk(finish="tool_calls"),
        ),
        openai_text("done"),
    )
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(
        {"DSH_HOME": str(home), "DSH_PROVIDER_HEADERS": f'{{ X-Gateway-Token = "{TOKEN}" }}'}
    )
    command = [DSH, "run", "--yes", "--base-url", server.url + "/v1", "--model", "m", "go"]
    result = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )

    assert result.stdout.splitlines()[0] == "done"
    assert [r.path for r in received(server)] == ["/props", *["/v1/chat/completions"] * 2]
    assert tokens(server) == [TOKEN] * 3
    sent = [name.lower() for r in received(server) for name, _ in r.header_lines]
    assert not [name for name in sent if name.startswith("x-stainless-")]
    tool_result = server.requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "[masked provider.headers.X-Gateway-Token]" in tool_result["content"]
    files = [path for path in home.rglob("*") if path.is_file()]
    assert files  # the session was stored
    assert not [path for path in files if TOKEN.encode() in path.read_bytes()]
    assert TOKEN not in result.stdout + result.stderr
