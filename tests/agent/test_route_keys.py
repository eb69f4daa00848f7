"""Which key reaches which server, read off a real HTTP server on 127.0.0.1: the user's
``OPENAI_API_KEY`` never goes to an openai-compatible server that is not OpenAI's (neither the
chat request nor the window probe), nor any header the OpenAI SDK makes of the user's OpenAI
environment, ``provider.api_key_env`` / ``compaction.
summarizer_api_key_env`` send the variable they name, and the conversation's key stays on the
conversation's endpoint."""

from __future__ import annotations

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
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.llm.provider_helpers import collect, make_request

DSH = str(Path(sys.executable).with_name("dsh"))
OPENAI_KEY = "sk-openai-of-the-user-0123456789"
SERVER_KEY = "vllm-server-key-abcdefgh"
SUMMARISER_KEY = "summariser-server-key-ijklmnop"
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


def authorizations(fake: FakeServer) -> list[str | None]:
    """The Authorization header of every request ``fake`` received (probes first)."""
    received = [*fake.fixed_requests, *fake.requests]
    return [r.headers.get("authorization") for r in received]


def dsh_run(tmp_path: Path, url: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update({"DSH_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": OPENAI_KEY, **environ})
    command = [DSH, "run", "--provider", "openai-compatible", "--base-url", url, "--model", "m"]
    return subprocess.run(
        [*command, "hi"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        check=True,
    )  # fmt: skip


def test_an_openai_compatible_server_gets_no_openai_key(tmp_path, server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok(N_CTX)
    server.queue(openai_text("answer"))
    result = dsh_run(tmp_path, server.url + "/v1")
    assert result.stdout.splitlines()[0] == "answer"
    assert [r.path for r in server.fixed_requests] == ["/props"]  # the window probe
    assert len(server.requests) == 1  # the chat request
    probe, chat = authorizations(server)
    assert probe is None  # the probe sends no key at all
    assert chat == "Bearer none"  # what a keyless local server has always been sent


def test_an_openai_compatible_server_gets_nothing_of_the_openai_environment(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok(N_CTX)
    server.queue(openai_text("answer"))
    secrets = ["org-of-the-user", "proj-of-the-user", "gateway-secret", "env-bearer", "sk-admin"]
    result = dsh_run(
        tmp_path,
        server.url + "/v1",
        OPENAI_ORG_ID=secrets[0],
        OPENAI_PROJECT_ID=secrets[1],
        OPENAI_CUSTOM_HEADERS=f"X-Gateway: {secrets[2]}\nAuthorization: Bearer {secrets[3]}",
        OPENAI_ADMIN_KEY=secrets[4],
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # nothing listens there: never used
    )
    assert result.stdout.splitlines()[0] == "answer"
    received = [*server.fixed_requests, *server.requests]
    assert [r.path for r in received] == ["/props", "/v1/chat/completions"]
    sent = [line for r in received for line in r.header_lines]
    assert [line for line in sent if any(s in line[1] for s in [*secrets, OPENAI_KEY])] == []
    names = {name.lower() for name, _ in sent}
    assert not names & {"openai-organization", "openai-project", "x-gateway"}
    assert authorizations(server) == [None, "Bearer none"]


def test_api_key_env_sends_the_variable_it_names(tmp_path, server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok(N_CTX)
    server.queue(openai_text("answer"))
    dsh_run(
        tmp_path,
        server.url + "/v1",
        DSH_PROVIDER_API_KEY_ENV="MY_VLLM_CREDENTIAL",
        MY_VLLM_CREDENTIAL=SERVER_KEY,
    )
    assert authorizations(server) == [f"Bearer {SERVER_KEY}", f"Bearer {SERVER_KEY}"]


def test_an_api_key_env_naming_an_unset_variable_stops_before_any_request(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.pop("MY_VLLM_CREDENTIAL", None)
    env.update(
        {"DSH_HOME": str(tmp_path / "home"), "DSH_PROVIDER_API_KEY_ENV": "MY_VLLM_CREDENTIAL"}
    )
    command = [DSH, "run", "--base-url", server.url + "/v1", "--model", "m", "hi"]
    result = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    (line,) = [line for line in result.stderr.splitlines() if "MY_VLLM_CREDENTIAL" in line]
    assert "no API key for openai-compatible: set MY_VLLM_CREDENTIAL" in line
    assert authorizations(server) == []


def _settings(tmp_path: Path, provider: dict, compaction: dict) -> Settings:
    overrides = {"provider": provider, "compaction": compaction}
    return load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path, overrides=overrides)


def _summarise_once(settings: Settings, environ: dict[str, str]) -> None:
    """Resolve the route (the summariser's window probe) and send one summariser call."""
    route = resolve_route(settings, environ=environ)
    provider, model = summarizer_route(settings, route, environ=environ)
    assert provider is not None and model is not None and provider is not route.provider
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))


def test_a_summariser_on_its_own_server_gets_neither_the_openai_nor_the_conversations_key(
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
        "api_key_env": "MY_VLLM_CREDENTIAL",
    }
    settings = _settings(
        tmp_path, conversation, {"summarizer": "small", "summarizer_base_url": other.url + "/v1"}
    )
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "MY_VLLM_CREDENTIAL": SERVER_KEY}
    _summarise_once(settings, environ)
    assert authorizations(server) == [f"Bearer {SERVER_KEY}"]  # the conversation's probe
    assert authorizations(other) == [None, "Bearer none"]  # the summariser's probe and call


def test_summarizer_api_key_env_sends_its_variable_to_the_summarisers_server_only(
    tmp_path,
    server: FakeServer,  # noqa: F811
    other: FakeServer,
):
    for fake in (server, other):
        fake.fixed["/props"] = json_ok(N_CTX)
    other.queue(openai_text("a summary"))
    conversation = {"name": "openai-compatible", "base_url": server.url + "/v1", "model": "big"}
    summariser = {
        "summarizer": "small",
        "summarizer_base_url": other.url + "/v1",
        "summarizer_api_key_env": "MY_SUMMARISER_CREDENTIAL",
    }
    settings = _settings(tmp_path, conversation, summariser)
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "MY_SUMMARISER_CREDENTIAL": SUMMARISER_KEY}
    _summarise_once(settings, environ)
    assert authorizations(server) == [None]  # the conversation's server: no key of anyone's
    assert authorizations(other) == [f"Bearer {SUMMARISER_KEY}", f"Bearer {SUMMARISER_KEY}"]


def test_a_summariser_on_the_conversations_endpoint_shares_its_key_variable(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(openai_text("a summary"))
    conversation = {
        "name": "openai-compatible",
        "base_url": server.url + "/v1",
        "model": "big",
        "context_window": 8192,
        "api_key_env": "MY_VLLM_CREDENTIAL",
    }
    settings = _settings(
        tmp_path,
        conversation,
        {"summarizer": "small", "summarizer_base_url": server.url + "/v1"},
    )
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "MY_VLLM_CREDENTIAL": SERVER_KEY}
    route = resolve_route(settings, environ=environ)
    provider, model = summarizer_route(settings, route, environ=environ)
    assert provider is not None and model == "small"
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))
    assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {SERVER_KEY}"]
