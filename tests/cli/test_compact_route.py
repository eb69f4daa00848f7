"""``dsh compact``'s route: a summariser on a provider of its own never needs the conversation's
provider (a session recorded on the keyless scripted provider compacts with a real model)."""

from __future__ import annotations

from typing import Any, cast

import msgspec
import pytest

from dsh.agent import session_settings
from dsh.cli.compact import _summarizes_on, _Unreachable, session_route
from dsh.config import Settings
from dsh.errors import ConfigError
from dsh.events import RecordedCompaction, SessionSettings
from tests.agent.test_asked_window import recorded as asked_window_record


def _settings(summarizer: str, provider: str | None = None) -> Settings:
    base = Settings()
    compaction = msgspec.structs.replace(
        base.compaction, summarizer=summarizer, summarizer_provider=provider
    )
    return msgspec.structs.replace(base, compaction=compaction)


def _recorded(provider: str) -> SessionSettings:
    compaction = RecordedCompaction(
        backend="recallable", threshold_ratio=0.8, low_watermark_ratio=0.4, retain_ratio=0.16,
        chunk_tokens=4000, stub_tokens=200, state_max_tokens=4096, stub_region_ratio=0.3,
        min_stale_ratio=0.0625, summarizer="m",
    )  # fmt: skip
    return SessionSettings(
        provider=provider, model="scripted", compaction=compaction, workspace="/w",
        context_window=8000,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("summarizer", "provider", "calls_conversation"),
    [
        ("extractive", None, False),
        ("qwen2.5-coder:0.5b", None, True),  # a bare model name (tags and all): its provider
        ("openai-compatible:m", None, False),  # a known provider's prefix: that provider
        ("scripted:m", None, True),
        ("m", "openai-compatible", False),
        ("m", "scripted", True),
    ],
)
def test_the_summariser_calls_the_conversations_provider_only_when_it_is_on_it(
    summarizer: str, provider: str | None, calls_conversation: bool
) -> None:
    assert _summarizes_on(_settings(summarizer, provider), "scripted") is calls_conversation


def test_a_scripted_session_compacts_with_a_summariser_of_its_own_without_a_script() -> None:
    no_session = cast(Any, None)  # the recorded settings name the route; the log is not read
    settings = _settings("m", "openai-compatible")
    route = session_route(settings, no_session, cast(Any, None), _recorded("scripted"))
    assert isinstance(route.provider, _Unreachable) and route.context_window == 8000
    # a summariser on the conversation's own provider still resolves that provider (here the
    # configured default, which has no key)
    with pytest.raises(ConfigError):
        session_route(_settings("m"), no_session, cast(Any, None), _recorded("scripted"))


def test_dsh_compact_keeps_a_server_window_the_servers() -> None:
    """An extractive pass asks no server: it compacts in the recorded window, and the settings
    it records still say the server gave it (its next reopen asks again)."""
    record = asked_window_record()
    settings = session_settings.effective(Settings(), record).settings
    no_session = cast(Any, None)  # the recorded settings name the route; the log is not read
    route = session_route(settings, no_session, cast(Any, None), record)
    assert (route.context_window, route.window_from) == (8192, "server")
    user_set = asked_window_record(asked=False)
    settings = session_settings.effective(Settings(), user_set).settings
    route = session_route(settings, no_session, cast(Any, None), user_set)
    assert (route.context_window, route.window_from) == (8192, "settings")
