from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.config import (
    LARGE_WINDOW_CHUNK,
    LARGE_WINDOW_STATE,
    LARGE_WINDOW_STUB,
    CompactionSettings,
    Settings,
    compaction_misfit,
    dsh_home,
    load_settings,
    set_trust,
    validate_settings,
)
from dsh.errors import ConfigError


def test_defaults_apply_when_nothing_is_configured(tmp_path):
    settings = load_settings(environ={"DSH_HOME": str(tmp_path / "home")}, cwd=tmp_path)
    assert settings.compaction.backend == "recallable"
    assert settings.compaction.threshold_ratio == 0.8
    assert settings.store.backend == "jsonl"


def test_layers_apply_in_order_home_then_project_then_env_then_flags(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[compaction]\nchunk_tokens = 1000\nstub_tokens = 100\n")
    project = tmp_path / "project"
    (project / ".dsh").mkdir(parents=True)
    (project / ".dsh" / "config.toml").write_text("[compaction]\nchunk_tokens = 2000\n")
    env = {"DSH_HOME": str(home), "DSH_COMPACTION_STUB_TOKENS": "120"}
    settings = load_settings(environ=env, cwd=project)
    assert settings.compaction.chunk_tokens == 2000
    assert settings.compaction.stub_tokens == 120
    flagged = load_settings(environ=env, cwd=project, overrides={"compaction": {"stub_tokens": 90}})
    assert flagged.compaction.stub_tokens == 90


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[compaction]\nchunk_tokenz = 1\n", "compaction.chunk_tokenz"),
        ("[compactoin]\nx = 1\n", "[compactoin]"),
        ("[compaction]\nchunk_tokens = 'many'\n", "compaction.chunk_tokens"),
        ("[compaction]\nretain_ratio = 0.9\n", "compaction.retain_ratio"),
        ("[compaction]\nstub_tokens = 2000\n", "compaction.stub_tokens"),
        ("[tools]\nmax_repeated_calls = 1\n", "tools.max_repeated_calls"),
        ("[tools]\nmax_repeated_calls = -3\n", "tools.max_repeated_calls"),
        ("[tools]\nmax_calls_per_reply = -1\n", "tools.max_calls_per_reply"),
        ("[tools]\nmax_calls_per_reply = 'many'\n", "tools.max_calls_per_reply"),
        ('[provider]\napi_key_env = "MY-KEY"\n', "provider.api_key_env"),
        ('[provider]\napi_key_env = ""\n', "provider.api_key_env"),
        ('[compaction]\nsummarizer_api_key_env = "A=B"\n', "compaction.summarizer_api_key_env"),
    ],
)
def test_bad_config_is_refused_naming_the_key(tmp_path, toml, named):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(environ={"DSH_HOME": str(home)}, cwd=tmp_path)
    assert named in str(info.value)


def test_the_repeat_limit_defaults_to_five_and_comes_from_a_layer(tmp_path):
    home = {"DSH_HOME": str(tmp_path / "home")}
    assert load_settings(environ=home, cwd=tmp_path).tools.max_repeated_calls == 5
    env = {**home, "DSH_TOOLS_MAX_REPEATED_CALLS": "0"}  # 0: no limit
    assert load_settings(environ=env, cwd=tmp_path).tools.max_repeated_calls == 0


def test_the_per_reply_call_limit_defaults_to_32_and_is_refused_in_one_line_when_negative(
    tmp_path,
):
    home = {"DSH_HOME": str(tmp_path / "home")}
    assert load_settings(environ=home, cwd=tmp_path).tools.max_calls_per_reply == 32
    env = {**home, "DSH_TOOLS_MAX_CALLS_PER_REPLY": "0"}  # 0: no limit
    assert load_settings(environ=env, cwd=tmp_path).tools.max_calls_per_reply == 0
    bad = {**home, "DSH_TOOLS_MAX_CALLS_PER_REPLY": "-2"}
    with pytest.raises(ConfigError) as info:
        load_settings(environ=bad, cwd=tmp_path)
    assert str(info.value) == (
        "config key tools.max_calls_per_reply must be at least 1, or 0 for no limit "
        "(set in environment variable DSH_TOOLS_MAX_CALLS_PER_REPLY)"
    )


def test_an_unknown_environment_variable_is_a_warning_naming_it_not_a_refusal(tmp_path, caplog):
    environ = {
        "DSH_HOME": str(tmp_path),
        "DSH_NOPE_X": "1",
        "DSH_PROVIDER_MODLE": "typo",
        "DSH_PROVIDER_MODEL": "kept",
    }
    with caplog.at_level("WARNING", logger="dsh.config"):
        settings = load_settings(environ=environ, cwd=tmp_path)
        load_settings(environ=environ, cwd=tmp_path)  # said once, not on every load
    assert settings.provider.model == "kept"
    warnings = [r.getMessage() for r in caplog.records]
    assert sum("DSH_NOPE_X" in w and "no config section" in w for w in warnings) == 1
    assert (
        sum("DSH_PROVIDER_MODLE" in w and "[provider] has no such key" in w for w in warnings) == 1
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("CORP_*", ["CORP_*"]),
        ("CORP_*, VAULT_ADDR,", ["CORP_*", "VAULT_ADDR"]),
        ('["A", "B"]', ["A", "B"]),
    ],
)
def test_a_list_key_is_set_from_the_environment(tmp_path, value, expected):
    """``DSH_TOOLS_SCRUB_ENV`` (docs/config.md): comma-separated names or a TOML array."""
    environ = {"DSH_HOME": str(tmp_path), "DSH_TOOLS_SCRUB_ENV": value}
    assert load_settings(environ=environ, cwd=tmp_path).tools.scrub_env == expected


def test_a_table_key_is_set_from_the_environment_and_a_malformed_one_names_the_variable(
    tmp_path,
):
    environ = {
        "DSH_HOME": str(tmp_path),
        "DSH_PROVIDER_OVERRIDES": '{ "deepseek:tiny" = { max_output_tokens = 900 } }',
    }
    settings = load_settings(environ=environ, cwd=tmp_path)
    assert settings.provider.overrides["deepseek:tiny"].max_output_tokens == 900
    broken = {"DSH_HOME": str(tmp_path), "DSH_TOOLS_SCRUB_ENV": '["CORP_*"'}
    with pytest.raises(ConfigError, match=r"^DSH_TOOLS_SCRUB_ENV: expected a TOML array"):
        load_settings(environ=broken, cwd=tmp_path)


def test_invalid_toml_names_the_file(tmp_path):
    (tmp_path / "config.toml").write_text("[compaction\n")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path)


def test_dsh_home_comes_from_the_environment():
    assert dsh_home({"DSH_HOME": "/x/y"}) == Path("/x/y")
    assert dsh_home({}).name == "dsh"


def test_a_per_model_override_applies_only_to_its_route(tmp_path):
    (tmp_path / "config.toml").write_text(
        '[compaction]\nchunk_tokens = 4000\n[compaction.overrides."deepseek:deepseek-chat"]\n'
        "chunk_tokens = 1200\nstub_tokens = 100\n"
    )
    settings = load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path)
    assert settings.compaction.for_route("deepseek", "deepseek-chat").chunk_tokens == 1200
    assert settings.compaction.for_route("openai", "gpt-4.1").chunk_tokens == 4000


def test_an_invalid_override_is_refused_naming_the_override(tmp_path):
    (tmp_path / "config.toml").write_text('[compaction.overrides."x:y"]\nstub_tokens = 3000\n')
    with pytest.raises(ConfigError, match=r'compaction\.overrides\."x:y"\.stub_tokens'):
        load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path)


def test_summarizer_provider_and_model_come_as_a_pair(tmp_path):
    (tmp_path / "config.toml").write_text('[compaction]\nsummarizer = "deepseek:"\n')
    with pytest.raises(ConfigError, match=r"compaction\.summarizer"):
        load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path)


@settings(max_examples=300, deadline=None)
@given(small=st.integers(min_value=512, max_value=2_000_000), step=st.integers(0, 100_000))
def test_unset_budgets_scale_to_the_window_and_always_validate_and_fit(small, step):
    """Unset ``chunk_tokens``, ``stub_tokens`` and ``state_max_tokens`` resolve per window:
    valid, able to compact there, never above the large-window budgets (reached from 80k
    tokens), and never smaller in a larger window."""
    base = CompactionSettings()
    low, high = base.for_window(small), base.for_window(small + step)
    for resolved, window in ((low, small), (high, small + step)):
        validate_settings(Settings(compaction=resolved))
        assert compaction_misfit(resolved, window) is None
        assert resolved.chunk <= LARGE_WINDOW_CHUNK and resolved.stub <= LARGE_WINDOW_STUB
        assert resolved.state_max <= LARGE_WINDOW_STATE
    assert low.chunk <= high.chunk and low.stub <= high.stub and low.state_max <= high.state_max
    big = base.for_window(max(small, 82_000))
    assert (big.chunk, big.stub, big.state_max) == (4000, 200, 4096)


def test_a_set_budget_is_kept_and_a_chunk_grows_to_hold_four_set_stubs():
    resolved = CompactionSettings(stub_tokens=300, state_max_tokens=500).for_window(8000)
    assert (resolved.stub, resolved.state_max, resolved.chunk) == (300, 500, 1200)
    assert CompactionSettings(chunk_tokens=900).for_window(4096).chunk == 900
    assert CompactionSettings().chunk == 4000  # no window known: the large-window budget


@pytest.mark.parametrize(
    ("where", "text", "origin"),
    [
        ("user", "[provider]\ntemperature = 'warm'\n", "home/config.toml"),
        ("user", "[compaction]\nthreshold_ratio = 2\n", "home/config.toml"),
        ("trusted project", "[compaction]\nchunk_tokens = 'many'\n", ".dsh/config.toml"),
        ("env", "DSH_PROVIDER_TEMPERATURE=abc", "environment variable DSH_PROVIDER_TEMPERATURE"),
        ("env", "DSH_COMPACTION_RETAIN_RATIO=0.95", "DSH_COMPACTION_RETAIN_RATIO"),
    ],
)
def test_a_bad_value_is_refused_naming_where_it_was_set(tmp_path, where, text, origin):
    """The error names the file or the environment variable that set the bad value (a key
    can come from four layers; naming only the key left the user searching)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"DSH_HOME": str(home)}
    if where == "user":
        (home / "config.toml").write_text(text)
    elif where == "trusted project":  # an untrusted one is ignored: test_config_trust.py
        (tmp_path / ".dsh").mkdir()
        (tmp_path / ".dsh" / "config.toml").write_text(text)
        set_trust(tmp_path, True, env)
    else:
        name, _, value = text.partition("=")
        env[name] = value
    with pytest.raises(ConfigError) as info:
        load_settings(environ=env, cwd=tmp_path)
    message = str(info.value)
    assert origin in message and "\n" not in message
