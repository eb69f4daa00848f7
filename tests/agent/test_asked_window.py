"""Whose a session's recorded window is (``dsh.agent.asked_window``): the server's is asked
again on reopen, the user's is kept; a log recorded before dsh said which is asked again only on
a route that asks its server."""

from __future__ import annotations

import msgspec
import pytest

from dsh.agent import session_settings
from dsh.agent.asked_window import asks_again
from dsh.config import CompactionSettings, ProviderSettings, Settings
from dsh.events import SessionSettings

URL = "http://127.0.0.1:8080/v1"


def recorded(
    provider: str = "openai-compatible",
    *,
    base_url: str | None = URL,
    window: int = 8192,
    asked: bool | None = True,
) -> SessionSettings:
    settings = Settings(
        provider=ProviderSettings(name=provider, base_url=base_url, model="m"),
        compaction=CompactionSettings(summarizer="extractive"),
    )
    made = session_settings.snapshot(
        settings, provider, "m", window, "/w", window_asked=bool(asked)
    )
    return msgspec.structs.replace(made, window_asked=asked)


@pytest.mark.parametrize(
    ("record", "again"),
    [
        (recorded(asked=True), True),
        (recorded(asked=False), False),  # --context-window or provider.context_window
        (recorded(asked=None), True),  # an older record on a server's base URL
        (recorded("scripted", base_url=None, asked=None), False),  # nothing to ask
        (recorded("deepseek", base_url="https://api.deepseek.com", asked=None), False),  # known
    ],
)
def test_a_recorded_window_is_asked_again_when_its_server_gave_it(
    record: SessionSettings, again: bool
) -> None:
    assert asks_again(record) is again


def test_a_server_window_is_left_to_ask_and_the_budgets_scaled_to_it_follow() -> None:
    record = recorded()
    assert (record.compaction.chunk_tokens, record.compaction.state_max_tokens) == (1024, 409)
    resolved = session_settings.effective(Settings(), record)
    assert resolved.settings.provider.context_window is None  # resolve_route asks the server
    assert resolved.settings.provider.model == "m" and resolved.changes == ()
    compaction = resolved.settings.compaction
    assert (compaction.chunk_tokens, compaction.state_max_tokens) == (None, None)  # rescaled
    kept = session_settings.effective(Settings(), recorded(asked=False))
    assert kept.settings.provider.context_window == 8192
    assert kept.settings.compaction.chunk_tokens == 1024


def test_a_window_the_user_sets_now_wins_over_one_its_server_gave() -> None:
    configured = Settings(provider=ProviderSettings(context_window=6000))
    resolved = session_settings.effective(configured, recorded())
    assert resolved.settings.provider.context_window == 6000 and resolved.changes == ()
    flagged = session_settings.effective(
        Settings(provider=ProviderSettings(context_window=16000)),
        recorded(),
        {"provider": {"context_window": 16000}},
    )
    assert flagged.settings.provider.context_window == 16000
    assert [c.describe() for c in flagged.changes] == ["provider.context_window 8192 -> 16000"]
