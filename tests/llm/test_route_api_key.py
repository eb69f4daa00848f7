"""``route_api_key``: which key a route sends, decided in one place. A key goes only to the
endpoint it belongs to: ``OPENAI_API_KEY`` reaches an openai-compatible server only when that
server is ``https://api.openai.com``; a named provider keeps its own variable."""

from __future__ import annotations

import pytest

from dsh.errors import MissingApiKeyError
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.registry import make_provider, route_api_key

OPENAI = "sk-openai-user-key"
DEEPSEEK = "sk-deepseek-user-key"
ANTHROPIC = "sk-ant-user-key"
MINE = "server-key-of-my-own"
ENV = {"OPENAI_API_KEY": OPENAI, "DEEPSEEK_API_KEY": DEEPSEEK, "ANTHROPIC_API_KEY": ANTHROPIC}
LOCAL = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("name", "base_url", "api_key", "api_key_env", "environ", "expected"),
    [
        # an openai-compatible server gets no OpenAI key unless it is OpenAI's own
        ("openai-compatible", LOCAL, None, None, ENV, None),
        ("openai-compatible", "http://localhost:11434/v1", None, None, ENV, None),
        ("openai-compatible", "https://vllm.example.com/v1", None, None, ENV, None),
        ("openai-compatible", "https://api.openai.com/v1", None, None, ENV, OPENAI),
        ("openai-compatible", "https://API.OpenAI.com:443/v1", None, None, ENV, OPENAI),
        ("openai-compatible", "http://api.openai.com/v1", None, None, ENV, None),  # plain text
        ("openai-compatible", "https://api.openai.com.evil.example/v1", None, None, ENV, None),
        ("openai-compatible", "https://evil.example/api.openai.com/v1", None, None, ENV, None),
        ("openai-compatible", "https://api.openai.com@evil.example/v1", None, None, ENV, None),
        ("openai-compatible", "http://[::1/v1", None, None, ENV, None),  # does not parse
        ("openai-compatible", LOCAL, None, None, {}, None),
        # the variable named by api_key_env, whatever the provider and endpoint
        ("openai-compatible", LOCAL, None, "MY_SERVER_KEY", {**ENV, "MY_SERVER_KEY": MINE}, MINE),
        ("deepseek", None, None, "MY_SERVER_KEY", {**ENV, "MY_SERVER_KEY": MINE}, MINE),
        # an explicit key wins over both variables
        (
            "openai-compatible",
            LOCAL,
            "sk-conf",
            "MY_SERVER_KEY",
            {"MY_SERVER_KEY": MINE},
            "sk-conf",
        ),
        ("deepseek", None, "sk-conf", None, ENV, "sk-conf"),
        ("openai-compatible", LOCAL, "", None, ENV, None),  # an empty key is no key
        # named providers read their own variable, on their endpoint or another the user set
        ("deepseek", None, None, None, ENV, DEEPSEEK),
        ("deepseek", "http://127.0.0.1:9/v1", None, None, ENV, DEEPSEEK),
        ("openai", None, None, None, ENV, OPENAI),
        ("openai", "https://gateway.example/v1", None, None, ENV, OPENAI),
        ("anthropic", None, None, None, ENV, ANTHROPIC),
    ],
)
def test_the_key_a_route_sends(name, base_url, api_key, api_key_env, environ, expected):
    chosen = route_api_key(
        name, base_url, api_key=api_key, api_key_env=api_key_env, environ=environ
    )
    assert chosen == expected


@pytest.mark.parametrize(
    ("name", "base_url", "api_key_env", "environ", "variable"),
    [
        ("openai-compatible", LOCAL, "MY_SERVER_KEY", ENV, "MY_SERVER_KEY"),  # missing
        ("openai-compatible", LOCAL, "MY_SERVER_KEY", {"MY_SERVER_KEY": ""}, "MY_SERVER_KEY"),
        ("deepseek", None, "MY_SERVER_KEY", ENV, "MY_SERVER_KEY"),  # no fallback to its own
        ("deepseek", None, None, {}, "DEEPSEEK_API_KEY"),
        ("deepseek", None, None, {"DEEPSEEK_API_KEY": ""}, "DEEPSEEK_API_KEY"),
        ("anthropic", None, None, {"OPENAI_API_KEY": OPENAI}, "ANTHROPIC_API_KEY"),
    ],
)
def test_a_missing_key_is_one_line_naming_the_variable_to_set(
    name, base_url, api_key_env, environ, variable
):
    with pytest.raises(MissingApiKeyError) as info:
        route_api_key(name, base_url, api_key_env=api_key_env, environ=environ)
    assert info.value.variable == variable
    message = str(info.value)
    assert variable in message and "\n" not in message
    assert all(secret not in message for secret in (OPENAI, DEEPSEEK, ANTHROPIC))


def test_make_provider_sends_none_to_a_local_server_and_the_named_variable_when_asked():
    keyless, _, _ = make_provider(
        "openai-compatible", model="m", base_url=LOCAL, api_key=None, environ=ENV
    )
    keyed, _, _ = make_provider(
        "openai-compatible",
        model="m",
        base_url=LOCAL,
        api_key=None,
        api_key_env="MY_SERVER_KEY",
        environ={**ENV, "MY_SERVER_KEY": MINE},
    )
    assert isinstance(keyless, OpenAICompatProvider) and isinstance(keyed, OpenAICompatProvider)
    assert keyless.sdk_client()[0].api_key == "none"  # type: ignore[union-attr]
    assert keyed.sdk_client()[0].api_key == MINE  # type: ignore[union-attr]
