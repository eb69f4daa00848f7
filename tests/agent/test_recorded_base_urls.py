"""A base URL a session recorded that config validation refuses today (an older dsh logged
whatever ``--base-url`` it was given) gives way on reopen to the configured one, said in one
escaped line without the configured credentials; the log is not rewritten."""

from __future__ import annotations

import msgspec
import pytest

from dsh.agent import session_settings as ss
from dsh.config import CompactionSettings, ProviderSettings, Settings, session_problems

CONFIGURED = "http://user:secret@127.0.0.1:8080/v1"


def _configured(**compaction: object) -> Settings:
    return Settings(
        provider=ProviderSettings(name="openai-compatible", model="m", base_url=CONFIGURED),
        compaction=CompactionSettings(**compaction),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("recorded_url", "shown", "why"),
    [
        ("ftp://x", "ftp://x", "'ftp://x' has the scheme 'ftp'"),
        ("bad\x1b[31m", "bad\\x1b[31m", "'bad\\x1b[31m' holds a control character"),
        ("http://", "http://", "'http://' has no host"),
    ],
)
def test_a_recorded_provider_base_url_refused_today_gives_way_to_the_configured_one(
    recorded_url: str, shown: str, why: str
):
    configured = _configured()
    recorded = msgspec.structs.replace(
        ss.snapshot(configured, "openai-compatible", "m", 32_000, "/w"), base_url=recorded_url
    )
    resolved = ss.effective(configured, recorded)
    assert resolved.settings.provider.base_url == CONFIGURED  # credentials and all
    assert session_problems(resolved.settings) == []
    (replaced,) = resolved.replaced
    line = ss.replaced_warning("S1", resolved.replaced)
    assert replaced.describe() == (
        f"provider.base_url {shown} -> http://127.0.0.1:8080/v1 (must be an http:// or "
        f"https:// URL with a host; {why})"
    )
    assert line.isprintable() and "secret" not in line
    assert recorded.base_url == recorded_url  # the record itself is never rewritten


def test_a_recorded_summariser_base_url_refused_today_gives_way_to_the_configured_one():
    configured = _configured(summarizer="m2", summarizer_base_url="http://127.0.0.1:9090/v1")
    snapshot = ss.snapshot(configured, "openai-compatible", "m", 32_000, "/w")
    recorded = msgspec.structs.replace(
        snapshot,
        compaction=msgspec.structs.replace(snapshot.compaction, summarizer_base_url="not a url"),
    )
    resolved = ss.effective(configured, recorded)
    assert resolved.settings.compaction.summarizer_base_url == "http://127.0.0.1:9090/v1"
    assert [item.key for item in resolved.replaced] == ["compaction.summarizer_base_url"]
    assert "'not a url' holds white space" in resolved.replaced[0].describe()
