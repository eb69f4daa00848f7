"""``provider.headers``: refused in one line naming the key (never showing the value) when dsh
would not send it, set only by the user (an untrusted project's is ignored, by name), and its
values masked in tool output like a configured key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh.agent.mcp_servers import tool_secrets
from dsh.config import load_settings, set_trust
from dsh.errors import ConfigError
from tests.test_config_trust import env_for, project

SECRET = "gateway-token-of-the-user-0123"


def user_config(tmp_path: Path, headers_toml: str) -> dict[str, str]:
    return env_for(tmp_path, f"[provider.headers]\n{headers_toml}\n")


@pytest.mark.parametrize(
    ("headers_toml", "error"),
    [
        (
            f'"X-Gateway" = "{SECRET}\\r\\nX-Injected: 1"',
            "config key provider.headers.X-Gateway must be printable ASCII, with no line break",
        ),
        (
            f'"X-Gateway" = "{SECRET}\\n"',
            "config key provider.headers.X-Gateway must be printable ASCII, with no line break",
        ),
        (
            f'"X-Gateway" = " {SECRET}"',
            "config key provider.headers.X-Gateway must be printable ASCII",
        ),
        (
            f'"X-Gateway" = "{SECRET}é"',
            "config key provider.headers.X-Gateway must be printable ASCII",
        ),
        (
            f'"X Gateway" = "{SECRET}"',
            'config key provider.headers names a header "X Gateway": a header name is letters',
        ),
        (
            f'"X-Gateway:" = "{SECRET}"',
            'config key provider.headers names a header "X-Gateway:"',
        ),
        (
            f'"X-Gate\\nway" = "{SECRET}"',
            'config key provider.headers names a header "X-Gate\\nway"',
        ),
        ('"" = "x"', 'config key provider.headers names a header ""'),
        (
            f'Authorization = "Bearer {SECRET}"',
            "config key provider.headers.Authorization is not sent: the route's key goes by "
            "provider.api_key or provider.api_key_env",
        ),
        (
            f'x-api-key = "{SECRET}"',
            "config key provider.headers.x-api-key is not sent: the route's key goes by",
        ),
        (
            'Host = "evil.example"',
            "config key provider.headers.Host is not sent: the HTTP client sets it",
        ),
        (
            'Content-Length = "0"',
            "config key provider.headers.Content-Length is not sent: the HTTP client sets it",
        ),
        (
            f'X-Gateway = "{SECRET}"\nx-gateway = "other"',
            "config key provider.headers.x-gateway names the header X-Gateway a second time",
        ),
    ],
)
def test_a_header_dsh_would_not_send_is_refused_in_one_line_naming_its_key(
    tmp_path: Path, headers_toml: str, error: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(environ=user_config(tmp_path, headers_toml), cwd=tmp_path)
    message = str(refused.value)
    assert message.startswith(error)
    assert "\n" not in message and "\r" not in message
    assert SECRET not in message
    assert message.endswith(f"(set in {tmp_path / 'home' / 'config.toml'})")


def test_a_header_value_that_is_not_text_is_refused_naming_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(environ=user_config(tmp_path, '"X-Retries" = 3'), cwd=tmp_path)
    assert str(refused.value).startswith(
        "config key provider.headers.X-Retries must be a string (a header's value), not int"
    )


def test_headers_dsh_sends_are_kept_as_written(tmp_path: Path) -> None:
    toml = (
        f'"X-Gateway-Token" = "{SECRET}"\n"OpenAI-Organization" = "org-1"\n'
        '"x-tenant" = "team\tblue  green"\n"X-Empty" = ""'
    )
    settings = load_settings(environ=user_config(tmp_path, toml), cwd=tmp_path)
    assert settings.provider.headers == {
        "X-Gateway-Token": SECRET,
        "OpenAI-Organization": "org-1",
        "x-tenant": "team\tblue  green",
        "X-Empty": "",
    }


def test_headers_may_come_from_the_environment_as_an_inline_table(tmp_path: Path) -> None:
    env = {**env_for(tmp_path), "DSH_PROVIDER_HEADERS": f'{{ "X-Gateway" = "{SECRET}" }}'}
    assert load_settings(environ=env, cwd=tmp_path).provider.headers == {"X-Gateway": SECRET}
    bad = {**env, "DSH_PROVIDER_HEADERS": '{ "X-Gateway" = "a\\nb" }'}
    with pytest.raises(ConfigError, match=r"\(set in environment variable DSH_PROVIDER_HEADERS\)"):
        load_settings(environ=bad, cwd=tmp_path)


def test_an_untrusted_project_cannot_set_provider_headers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Headers go with the user's key: a repository could choose the organisation it is billed
    to, or have a gateway route it elsewhere. The warning names the headers, not their values."""
    repo = project(tmp_path, f'[provider.headers]\n"X-Gateway" = "{SECRET}"\n')
    with caplog.at_level(logging.WARNING, logger="dsh"):
        settings = load_settings(environ=env_for(tmp_path), cwd=repo)
    assert settings.provider.headers == {}
    (warning,) = [r.getMessage() for r in caplog.records if "provider.headers" in r.getMessage()]
    assert 'ignored provider.headers = (headers "X-Gateway")' in warning
    assert "dsh trust" in warning and SECRET not in warning


def test_an_untrusted_project_keeps_the_users_headers_and_may_repeat_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    user = user_config(tmp_path, f'"X-Gateway" = "{SECRET}"')
    other = project(tmp_path, '[provider.headers]\n"X-Gateway" = "the-projects-own"\n')
    with caplog.at_level(logging.WARNING, logger="dsh"):
        assert load_settings(environ=user, cwd=other).provider.headers == {"X-Gateway": SECRET}
    assert any("provider.headers" in r.getMessage() for r in caplog.records)
    caplog.clear()
    same = project(tmp_path, f'[provider.headers]\n"X-Gateway" = "{SECRET}"\n')
    with caplog.at_level(logging.WARNING, logger="dsh"):
        assert load_settings(environ=user, cwd=same).provider.headers == {"X-Gateway": SECRET}
    assert not caplog.records


def test_a_trusted_project_sets_provider_headers(tmp_path: Path) -> None:
    repo = project(tmp_path, f'[provider.headers]\n"X-Gateway" = "{SECRET}"\n')
    env = env_for(tmp_path)
    set_trust(repo, True, env)
    assert load_settings(environ=env, cwd=repo).provider.headers == {"X-Gateway": SECRET}


def test_header_values_are_masked_in_tool_output(tmp_path: Path) -> None:
    env = user_config(tmp_path, f'"X-Gateway" = "{SECRET}"\n"X-Short" = "abc"')
    settings = load_settings(environ=env, cwd=tmp_path)
    policy = tool_secrets(settings, environ={})
    masked = policy.mask(f"token={SECRET} short=abc")
    assert masked == "token=[masked provider.headers.X-Gateway] short=abc"


def test_a_headers_variable_never_reaches_a_command_whole(tmp_path: Path) -> None:
    """Only the header values inside were masked: ``echo $DSH_PROVIDER_HEADERS | base64`` carried
    the token into the log encoded. The variable is scrubbed from commands as a whole."""
    env = {**env_for(tmp_path, ""), "DSH_PROVIDER_HEADERS": f'{{ X-Gateway = "{SECRET}" }}'}
    settings = load_settings(environ=env, cwd=tmp_path)
    assert settings.provider.headers == {"X-Gateway": SECRET}
    scrubbed = tool_secrets(settings, environ=env).scrubbed_environment(env)
    assert "DSH_PROVIDER_HEADERS" not in scrubbed
    assert "DSH_HOME" in scrubbed


def test_an_mcp_servers_secret_env_value_is_masked_in_tool_output(tmp_path: Path) -> None:
    """The docs put a server's key in its ``env``; ``cat $DSH_HOME/config.toml`` showed it."""
    server_key = "ghp_mcp-server-secret-0123456789"
    config = (
        '[mcp.servers.gh]\ncommand = ["true"]\n'
        f'env = {{ GITHUB_TOKEN = "{server_key}", LOG_FORMAT = "json-lines-please" }}\n'
    )
    settings = load_settings(environ=env_for(tmp_path, config), cwd=tmp_path)
    policy = tool_secrets(settings, environ={})
    masked = policy.mask(
        f'env = {{ GITHUB_TOKEN = "{server_key}", LOG_FORMAT = "json-lines-please" }}'
    )
    assert server_key not in masked
    assert "[masked mcp.servers.gh.env.GITHUB_TOKEN]" in masked
    assert "json-lines-please" in masked  # not a secret's name: left as it is
