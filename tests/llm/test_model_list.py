"""``dsh.llm.model_list`` against a real HTTP server on 127.0.0.1: DeepSeek's and every
OpenAI-compatible server's ``GET {base}/models`` and Anthropic's models list, asked with the
route's key through the adapter's own client; why there is no list, in dsh's words."""

from __future__ import annotations

import asyncio

from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.model_list import Listed, NotListed, list_models
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.scripted import ScriptedProvider, parse_script
from tests.llm.fake_server import FakeServer, json_error, json_ok


def test_deepseek_lists_at_its_base_with_its_key(server: FakeServer) -> None:
    server.fixed["/models"] = json_ok(
        {"object": "list", "data": [{"id": "deepseek-chat"}, {"id": "deepseek-reasoner"}]}
    )
    provider = OpenAICompatProvider("deepseek", "deepseek-chat", server.url, "sk-secret")
    listed = asyncio.run(list_models(provider))
    assert listed == Listed(("deepseek-chat", "deepseek-reasoner"))
    (asked,) = server.fixed_requests
    assert asked.path == "/models" and asked.headers["authorization"] == "Bearer sk-secret"


def test_anthropic_lists_its_models_in_one_large_page(server: FakeServer) -> None:
    server.fixed["/v1/models"] = json_ok(
        {
            "data": [
                {
                    "id": "claude-sonnet-4-5",
                    "type": "model",
                    "display_name": "Sonnet",
                    "created_at": "2025-09-29T00:00:00Z",
                },
                {
                    "id": "claude-opus-4-1",
                    "type": "model",
                    "display_name": "Opus",
                    "created_at": "2025-08-05T00:00:00Z",
                },
            ],
            "has_more": False,
            "first_id": "claude-sonnet-4-5",
            "last_id": "claude-opus-4-1",
        }
    )
    provider = AnthropicProvider("anthropic", "claude-sonnet-4-5", server.url, "ant-key")
    assert asyncio.run(list_models(provider)) == Listed(("claude-sonnet-4-5", "claude-opus-4-1"))
    (asked,) = server.fixed_requests
    assert asked.path == "/v1/models?limit=1000"
    sent = asked.headers  # the key as the SDK sends it to a server not Anthropic's own
    assert "ant-key" in (sent.get("x-api-key"), sent.get("authorization", "")[len("Bearer ") :])


def test_why_there_is_no_list_is_said_without_the_servers_words(server: FakeServer) -> None:
    server.fixed["/v1/models"] = json_error(401, {"error": {"message": "bad key sk-secret"}})
    provider = OpenAICompatProvider("openai-compatible", "m", f"{server.url}/v1", "sk-secret")
    assert asyncio.run(list_models(provider)) == NotListed("the server answered 401")
    server.fixed["/v1/models"] = json_ok({"nothing": "here"})
    assert asyncio.run(list_models(provider)) == Listed(())  # no models named: an empty list
    server.fixed["/v1/models"] = json_ok([1, 2])
    listed = asyncio.run(list_models(provider))
    assert listed == NotListed("its answer was not a list of models")


def test_a_provider_with_no_server_has_no_list() -> None:
    scripted = ScriptedProvider(parse_script([{"text": "hi"}]), model="scripted")
    assert asyncio.run(list_models(scripted)) is None
