"""A session's own settings: recorded in its log, read back, and winning over the config on
reopen unless a flag says otherwise (``dsh.agent.session_settings``)."""

from __future__ import annotations

import logging

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent import session_settings as ss
from dsh.agent.settings_view import describe
from dsh.config import (
    CompactionOverride,
    CompactionSettings,
    ProviderSettings,
    Settings,
    session_problems,
)
from dsh.errors import UsageError
from dsh.events import NO_ROUTE, RecordedCompaction, SessionSettings, SessionSettingsEvent
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
ratios = st.floats(min_value=0, max_value=1, allow_nan=False, allow_infinity=False)
sizes = st.integers(min_value=0, max_value=10**9)
compactions = st.builds(
    RecordedCompaction,
    backend=st.sampled_from(["recallable", "basic", "off"]),
    threshold_ratio=ratios,
    low_watermark_ratio=ratios,
    retain_ratio=ratios,
    chunk_tokens=sizes,
    stub_tokens=sizes,
    state_max_tokens=sizes,
    stub_region_ratio=ratios,
    min_stale_ratio=ratios,
    summarizer=texts,
    retain_tokens=st.none() | sizes,
    summarizer_provider=st.none() | texts,
    summarizer_base_url=st.none() | texts,
    summarizer_context_window=st.none() | st.integers(min_value=-5, max_value=10**7),
)
recorded_settings = st.builds(
    SessionSettings,
    provider=texts,
    model=texts,
    compaction=compactions,
    workspace=texts,
    base_url=st.none() | texts,
    context_window=st.none() | st.integers(min_value=-5, max_value=10**7),
)


def _recorded(**changes: object) -> SessionSettings:
    base = ss.snapshot(
        Settings(compaction=CompactionSettings(backend="basic", chunk_tokens=1000)),
        "deepseek",
        "deepseek-chat",
        8000,
        "/work/a",
    )
    return msgspec.structs.replace(base, **changes)


@settings(max_examples=60, deadline=None)
@given(sequence=st.lists(recorded_settings, min_size=1, max_size=4))
def test_record_then_read_round_trips_through_a_real_log_file(tmp_path_factory, sequence):
    store = JsonlStore(tmp_path_factory.mktemp("home"))
    with Session.create(store, cwd="/w") as session:
        for recorded in sequence:
            ss.record(session, recorded)
        session_id = session.id
    read = ss.read(store, session_id)
    assert read is not None
    assert msgspec.structs.replace(read, changed=()) == sequence[-1]


def test_the_same_settings_are_recorded_once_and_a_change_names_its_keys():
    session = Session.create(MemoryStore(), cwd="/w")
    first = _recorded()
    assert ss.record(session, first) is not None
    assert ss.record(session, first) is None  # unchanged: nothing appended
    moved = msgspec.structs.replace(
        first,
        context_window=16_000,
        compaction=msgspec.structs.replace(first.compaction, backend="recallable"),
    )
    event = ss.record(session, moved)
    assert event is not None
    assert event.data.changed == ("provider.context_window", "compaction.backend")
    assert len(session.of_type(SessionSettingsEvent)) == 2
    assert ss.latest(session) == event.data


def test_recorded_settings_win_over_a_changed_config():
    config = Settings(
        provider=ProviderSettings(name="anthropic", model="claude", context_window=200_000),
        compaction=CompactionSettings(
            backend="recallable",
            chunk_tokens=4000,
            overrides={"deepseek:deepseek-chat": CompactionOverride(chunk_tokens=2000)},
        ),
    )
    resolved = ss.effective(config, _recorded())
    provider, compaction = resolved.settings.provider, resolved.settings.compaction
    assert (provider.name, provider.model, provider.context_window) == (
        "deepseek",
        "deepseek-chat",
        8000,
    )
    assert (compaction.backend, compaction.chunk_tokens) == ("basic", 1000)
    # the recorded budgets already hold the per-model override: the config's is not re-applied
    assert compaction.for_route("deepseek", "deepseek-chat").chunk_tokens == 1000
    assert resolved.changes == ()


def test_a_flag_overrides_a_recorded_setting_and_says_so():
    flags = {"provider": {"context_window": 16_000}, "compaction": {"summarizer": "m"}}
    resolved = ss.effective(Settings(), _recorded(), flags)
    assert resolved.settings.provider.context_window == 16_000
    assert resolved.settings.provider.model == "deepseek-chat"  # the rest stays recorded
    assert [c.describe() for c in resolved.changes] == [
        "provider.context_window 8000 -> 16000",
        "compaction.summarizer extractive -> m",
    ]


def test_budgets_scaled_to_the_recorded_window_follow_a_window_a_flag_changes():
    """A session begun in a 128k window records budgets scaled to it (a 4,096-token state
    cap); moved to an 8k model by ``--context-window``, it ran with that cap, which with the
    system prompt and tools leaves no room under the threshold (``dsh.agent.room``): the
    scaled budgets follow the new window, a set one stays, a flag's wins."""
    configured = Settings(compaction=CompactionSettings(stub_tokens=30))
    recorded = ss.snapshot(configured, "deepseek", "deepseek-chat", 128_000, "/w")
    assert (recorded.compaction.chunk_tokens, recorded.compaction.state_max_tokens) == (
        4000,
        4096,
    )
    flags = {"provider": {"context_window": 8000}, "compaction": {"chunk_tokens": 900}}
    resolved = ss.effective(configured, recorded, flags)
    compaction = resolved.settings.compaction
    assert compaction.state_max_tokens is None  # scaled to 128k: unset, scaled to 8k again
    assert compaction.for_window(8000).state_max == 400
    assert (compaction.chunk_tokens, compaction.stub_tokens) == (900, 30)  # the flag's, the set
    unmoved = ss.effective(configured, recorded, {"compaction": {"chunk_tokens": 900}})
    assert unmoved.settings.compaction.state_max_tokens == 4096  # the recorded window: kept


def test_another_provider_by_flag_takes_the_whole_route_from_flags_and_config():
    config = Settings(provider=ProviderSettings(name="openai", model="gpt-x"))
    resolved = ss.effective(config, _recorded(), {"provider": {"name": "openai"}})
    provider = resolved.settings.provider
    assert (provider.name, provider.model, provider.context_window) == ("openai", "gpt-x", None)
    assert resolved.settings.compaction.backend == "basic"  # compaction is still the session's


@pytest.mark.parametrize(
    "moved", [{"base_url": "http://127.0.0.1:9/v1"}, {"model": "other"}], ids=["server", "model"]
)
def test_a_window_set_stays_the_sessions_when_a_flag_moves_it_to_another_server_or_model(
    moved: dict[str, str],
) -> None:
    """``--context-window 8000`` on the first run, only ``--base-url`` (or ``--model``) on the
    reopen: the window and the budgets scaled to it stay (they used to give way to the
    configured window, unset, so a server that reports none ran the session in 128,000)."""
    configured = Settings(provider=ProviderSettings(name="openai-compatible"))
    first = msgspec.structs.replace(
        configured.provider, model="m", base_url="http://127.0.0.1:8/v1", context_window=8000
    )
    recorded = ss.snapshot(
        msgspec.structs.replace(configured, provider=first), "openai-compatible", "m", 8000, "/w"
    )
    resolved = ss.effective(configured, recorded, {"provider": moved})
    assert resolved.settings.provider.context_window == 8000
    assert resolved.settings.compaction.state_max_tokens == 400  # scaled to 8,000, kept
    assert [change.key for change in resolved.changes] == [f"provider.{next(iter(moved))}"]
    asked = msgspec.structs.replace(recorded, window_asked=True)  # its server's: asked again
    assert (
        ss.effective(configured, asked, {"provider": moved}).settings.provider.context_window
        is None
    )
    other = ss.effective(configured, recorded, {"provider": {"name": "deepseek"}})
    assert other.settings.provider.context_window is None  # another provider: its own route


def test_a_replay_runs_in_the_recorded_window():
    resolved = ss.effective(Settings(), _recorded(), {"provider": {"name": "replay"}})
    assert resolved.settings.provider.context_window == 8000


def test_a_backend_change_on_a_session_with_checkpoints_needs_the_explicit_switch():
    flags = {"compaction": {"backend": "recallable"}}
    with pytest.raises(UsageError, match="--backend recallable") as refused:
        ss.effective(Settings(), _recorded(), flags, checkpoints=True)
    assert "\n" not in str(refused.value)
    switched = ss.effective(Settings(), _recorded(), flags, checkpoints=True, switch=True)
    assert switched.settings.compaction.backend == "recallable"
    # no checkpoints yet: nothing to mix, the flag just applies
    assert ss.effective(Settings(), _recorded(), flags).settings.compaction.backend == "recallable"


def test_a_log_without_recorded_settings_gets_the_configured_ones():
    config = Settings(compaction=CompactionSettings(backend="basic", chunk_tokens=900))
    resolved = ss.effective(config, None, {"compaction": {"backend": "basic"}})
    assert resolved.settings is config and resolved.changes == ()
    assert "no settings recorded" in describe(None)[0]


def test_credentials_in_a_base_url_never_enter_the_log_but_still_reach_the_endpoint():
    config = Settings(
        provider=ProviderSettings(
            name="openai-compatible", model="m", base_url="http://user:secret@127.0.0.1:8080/v1"
        )
    )
    recorded = ss.snapshot(config, "openai-compatible", "m", 4096, "/w")
    assert recorded.base_url == "http://127.0.0.1:8080/v1"
    assert "secret" not in msgspec.json.encode(recorded).decode()
    resolved = ss.effective(config, recorded)
    assert resolved.settings.provider.base_url == "http://user:secret@127.0.0.1:8080/v1"


def test_the_settings_view_prints_one_line_per_setting():
    lines = describe(_recorded(changed=("compaction.backend",)))
    assert any(line.split() == ["provider.context_window", "8000"] for line in lines)
    assert any(line.split() == ["compaction.backend", "basic"] for line in lines)
    assert any(line.split() == ["workspace", "/work/a"] for line in lines)
    assert lines[-1].split() == ["last", "changed", "compaction.backend"]


@pytest.mark.parametrize(
    ("configured", "logged"),
    [
        ("http://user:secret@[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("http://user:secret@[fe80::1]/v1", "http://[fe80::1]/v1"),
        ("http://user:secret@Gateway.Example:8443/v1", "http://gateway.example:8443/v1"),
    ],
)
def test_a_base_url_logged_without_its_credentials_is_still_the_same_endpoint(
    configured: str, logged: str
):
    """The logged URL is what a reopen without those credentials connects to: an IPv6 host
    keeps its brackets (``http://::1:8080/v1`` is no URL) and its port."""
    config = Settings(
        provider=ProviderSettings(name="openai-compatible", model="m", base_url=configured)
    )
    assert ss.snapshot(config, "openai-compatible", "m", 4096, "/w").base_url == logged


@settings(max_examples=200, deadline=None)
@given(recorded=recorded_settings)
def test_any_recorded_settings_reopen_as_valid_ones_keeping_every_valid_recorded_value(
    recorded: SessionSettings,
):
    """Whatever an older dsh recorded, a reopen neither crashes nor keeps a value config
    validation refuses; what it replaces becomes the configured value, the rest stays. A
    record without a route (an import dropped it) keeps no window or summariser either."""
    configured = Settings()
    resolved = ss.effective(configured, recorded)
    assert session_problems(resolved.settings) == []
    replaced = {item.key: item for item in resolved.replaced}
    route_free = recorded.provider == NO_ROUTE
    summariser = {*ss.SUMMARIZER_ROUTE_KEYS, "summarizer_context_window"}
    for key in ("provider.context_window", *(f"compaction.{k}" for k in ss.COMPACTION_KEYS)):
        section, _, name = key.partition(".")
        value = getattr(getattr(resolved.settings, section), name)
        if key in replaced or (route_free and (section == "provider" or name in summariser)):
            assert value == getattr(getattr(configured, section), name)
            assert key not in replaced or replaced[key].recorded != value
        elif section == "provider":
            assert value == recorded.context_window
        elif name != "summarizer_base_url":  # credentials may be put back on the URL
            assert value == getattr(recorded.compaction, name)


def test_a_recorded_window_under_the_bound_gives_way_to_the_configured_one_with_its_budgets():
    recorded = ss.snapshot(
        Settings(), "deepseek", "deepseek-chat", 512, "/w", summarizer_window=600
    )
    assert (recorded.compaction.chunk_tokens, recorded.compaction.state_max_tokens) == (100, 100)
    configured = Settings(provider=ProviderSettings(context_window=32_000))
    resolved = ss.effective(configured, recorded)
    assert resolved.settings.provider.context_window == 32_000
    assert resolved.settings.compaction.summarizer_context_window is None
    # the budgets scaled to 512 tokens scale to the new window again (unset in the config)
    assert resolved.settings.compaction.for_window(32_000).chunk_tokens == 4000
    assert [item.describe() for item in resolved.replaced] == [
        "compaction.summarizer_context_window 600 -> (unset) (must be at least 1024)",
        "provider.context_window 512 -> 32000 (must be at least 4096)",
        "compaction.chunk_tokens 100 -> (unset) (scaled to that window)",
        "compaction.stub_tokens 20 -> (unset) (scaled to that window)",
        "compaction.state_max_tokens 100 -> (unset) (scaled to that window)",
    ]
    assert resolved.changes == ()  # no flag changed anything


def test_a_rule_between_two_keys_replaces_the_recorded_one_and_never_a_flags():
    configured = Settings(
        compaction=CompactionSettings(
            threshold_ratio=0.3, low_watermark_ratio=0.2, retain_ratio=0.1
        )
    )
    recorded = _recorded()  # threshold 0.8, low watermark 0.4, retain 0.16: valid as recorded
    recorded = msgspec.structs.replace(
        recorded, compaction=msgspec.structs.replace(recorded.compaction, retain_ratio=0.25)
    )
    flags = {"compaction": {"threshold_ratio": 0.3}}
    resolved = ss.effective(configured, recorded, flags)
    compaction = resolved.settings.compaction
    assert compaction.threshold_ratio == 0.3  # the flag's, kept
    assert (compaction.retain_ratio, compaction.low_watermark_ratio) == (0.1, 0.2)
    assert compaction.stub_region_ratio == 0.03  # valid as recorded: kept
    assert compaction.chunk_tokens == 1000
    # the recorded low watermark is not under the flag's threshold; the configured one is not
    # over the recorded retained tail, which the rule involves: both go back to the config
    rule = "must be in [retain_ratio, threshold_ratio) (a pass compacts down to it)"
    assert [item.describe() for item in resolved.replaced] == [
        f"compaction.low_watermark_ratio 0.4 -> 0.2 ({rule})",
        f"compaction.retain_ratio 0.25 -> 0.1 (compaction.low_watermark_ratio {rule})",
    ]


def test_the_replacement_is_said_once_per_session_in_one_line(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="dsh")
    recorded = _recorded(context_window=100)
    assert ss.effective(Settings(), recorded).replaced  # no session named: nothing said
    for _ in range(3):  # a face resolves a session's settings several times as it opens it
        ss.effective(Settings(), recorded, session_id="s-said-once")
    ss.effective(Settings(), recorded, session_id="s-another")
    said = [r.getMessage() for r in caplog.records if "no longer valid" in r.getMessage()]
    assert said == [
        "session s-said-once recorded settings that are no longer valid; using the configured "
        "ones instead: provider.context_window 100 -> (unset) (must be at least 4096)",
        "session s-another recorded settings that are no longer valid; using the configured "
        "ones instead: provider.context_window 100 -> (unset) (must be at least 4096)",
    ]


def test_valid_recorded_settings_replace_nothing_and_say_nothing(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="dsh")
    resolved = ss.effective(Settings(), _recorded(), session_id="s-valid")
    assert resolved.replaced == () and caplog.records == []


def test_a_recorded_window_over_the_ceiling_gives_way_to_the_configured_one():
    """A session an older dsh recorded with a server's ``n_ctx: 1000000000000`` would never
    compact: the reopen replaces it, as config validation refuses it when given."""
    recorded = ss.snapshot(
        Settings(), "deepseek", "deepseek-chat", 10**12, "/w", summarizer_window=10**12
    )
    configured = Settings(provider=ProviderSettings(context_window=32_000))
    resolved = ss.effective(configured, recorded)
    assert resolved.settings.provider.context_window == 32_000
    assert resolved.settings.compaction.summarizer_context_window is None
    described = [item.describe() for item in resolved.replaced]
    ceiling = "(must be at most 16777216 (no model has a larger window))"
    assert described[:2] == [
        f"compaction.summarizer_context_window 1000000000000 -> (unset) {ceiling}",
        f"provider.context_window 1000000000000 -> 32000 {ceiling}",
    ]


def test_the_settings_view_says_where_the_window_came_from():
    """Set, its provider's known window, reported by its server, assumed when the server gave
    none, or asked of a server by a record made before dsh said whether it answered."""
    configured = Settings(provider=ProviderSettings(name="openai-compatible"))

    def shown(recorded: SessionSettings) -> str:
        (row,) = [line for line in describe(recorded) if line.startswith("window_asked")]
        return row.split(None, 1)[1]

    def made(provider: str, window: int, **where: bool) -> SessionSettings:
        return ss.snapshot(configured, provider, "m", window, "/w", **where)

    assert shown(made("openai-compatible", 8000)) == "no (set: kept on reopen)"
    assert shown(made("deepseek", 128_000)) == (
        "no (its provider's known window, or set: kept on reopen)"
    )
    reported = made("openai-compatible", 8192, window_asked=True, window_reported=True)
    assert shown(reported) == "yes (its server reported it: asked again on reopen)"
    assumed = made("openai-compatible", 128_000, window_asked=True, window_reported=False)
    assert shown(assumed) == (
        "yes (its server reported none: the 128,000 tokens dsh assumes; asked again on reopen)"
    )
    older = msgspec.structs.replace(reported, window_reported=None)
    assert shown(older) == "yes (asked of its server: asked again on reopen)"


def test_a_record_made_before_dsh_said_whether_the_server_answered_is_not_logged_again_for_it():
    session = Session.create(MemoryStore(), cwd="/w")
    configured = Settings(provider=ProviderSettings(name="openai-compatible"))
    older = ss.snapshot(configured, "openai-compatible", "m", 8192, "/w", window_asked=True)
    assert older.window_reported is None  # as an older dsh recorded it
    assert ss.record(session, older) is not None
    again = msgspec.structs.replace(older, window_reported=True)
    assert ss.record(session, again) is None
