"""Secrets dsh is given other than in a secret-named variable are masked in tool output too: a
base URL's password (``--base-url https://user:pass@host`` is on a command line ``ps aux``
shows) and what dsh was told on its own command line (``dsh web --token``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh.agent.mcp_servers import tool_secrets
from dsh.config import CompactionSettings, ProviderSettings, Settings
from dsh.tools import secrets

PASSWORD = "s3cret-pass-0123456789"


@pytest.fixture(autouse=True)
def _no_own_secrets() -> Iterator[None]:
    saved = dict(secrets._OWN_SECRETS)
    secrets._OWN_SECRETS.clear()
    yield
    secrets._OWN_SECRETS.clear()
    secrets._OWN_SECRETS.update(saved)


def test_a_base_url_s_password_is_masked() -> None:
    settings = Settings(
        provider=ProviderSettings(base_url=f"https://me:{PASSWORD}@llm.example/v1"),
        compaction=CompactionSettings(summarizer_base_url="https://other:pass-of-summariser@h"),
    )
    policy = tool_secrets(settings, environ={})
    shown = policy.mask(
        f"dsh run --base-url https://me:{PASSWORD}@llm.example/v1 pass-of-summariser"
    )
    assert shown == (
        "dsh run --base-url https://me:[masked provider.base_url password]@llm.example/v1 "
        "[masked compaction.summarizer_base_url password]"
    )
    assert tool_secrets(Settings(), environ={}).values == ()


def test_a_secret_dsh_was_given_on_its_command_line_is_masked_from_then_on() -> None:
    before = tool_secrets(Settings(), environ={})
    secrets.add_own_secret("dsh web token", "tok-0123456789abcdef")
    after = tool_secrets(Settings(), environ={})
    assert before.mask("--token tok-0123456789abcdef") == "--token tok-0123456789abcdef"
    assert after.mask("--token tok-0123456789abcdef") == "--token [masked dsh web token]"
