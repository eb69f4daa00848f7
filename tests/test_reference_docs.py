"""The generated configuration reference says only what the configuration does."""

from __future__ import annotations

import re

from dsh.config import Settings, load_settings, validate_settings
from dsh.errors import ConfigError
from dsh.reference import render_config


def test_a_user_only_section_names_no_environment_variable():
    """``[trust]`` is refused from the environment, so its row names no ``DSH_TRUST_*``."""
    text = render_config()
    assert "DSH_TRUST_" not in text
    (row,) = [line for line in text.splitlines() if line.startswith("| `directories` |")]
    assert "| — |" in row


def test_every_ratio_rule_the_validation_enforces_is_listed(tmp_path):
    validation = next(line for line in render_config().splitlines() if "Validation:" in line)
    for key, bad in (
        ("low_watermark_ratio", 0.9),
        ("stub_region_ratio", 0.95),
        ("min_stale_ratio", 0.0),
    ):
        overrides = {"compaction": {key: bad}}
        try:
            load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path, overrides=overrides)
        except ConfigError as exc:
            assert key in str(exc)
        else:
            raise AssertionError(f"{key}={bad} was accepted")
        assert re.search(rf"`{key}` in ", validation), key
    validate_settings(Settings())


# Every rule config validation enforces, broken once: (overrides, the key the error names).
REFUSED: list[tuple[dict[str, dict[str, object]], str]] = [
    ({"compaction": {"threshold_ratio": 0}}, "compaction.threshold_ratio"),
    ({"compaction": {"retain_ratio": 1.0}}, "compaction.retain_ratio"),
    ({"compaction": {"threshold_ratio": 0.5, "retain_ratio": 0.6}}, "compaction.retain_ratio"),
    ({"compaction": {"low_watermark_ratio": 0.9}}, "compaction.low_watermark_ratio"),
    ({"compaction": {"min_stale_ratio": 0.0}}, "compaction.min_stale_ratio"),
    ({"compaction": {"summarizer_timeout_s": 0}}, "compaction.summarizer_timeout_s"),
    ({"compaction": {"summarizer_context_window": 100}}, "compaction.summarizer_context_window"),
    ({"compaction": {"summarizer_context_window": 10**9}}, "compaction.summarizer_context_window"),
    ({"compaction": {"stub_region_ratio": 0.95}}, "compaction.stub_region_ratio"),
    ({"compaction": {"stub_region_ratio": 0.0}}, "compaction.stub_region_ratio"),
    ({"compaction": {"retain_tokens": -1}}, "compaction.retain_tokens"),
    ({"compaction": {"chunk_tokens": 50}}, "compaction.chunk_tokens"),
    ({"compaction": {"stub_tokens": 10}}, "compaction.stub_tokens"),
    ({"compaction": {"chunk_tokens": 1000, "stub_tokens": 300}}, "compaction.stub_tokens"),
    ({"compaction": {"state_max_tokens": 50}}, "compaction.state_max_tokens"),
    ({"compaction": {"max_concurrency": 0}}, "compaction.max_concurrency"),
    ({"compaction": {"compaction_retries": -1}}, "compaction.compaction_retries"),
    ({"compaction": {"max_overflow_retries": -1}}, "compaction.max_overflow_retries"),
    ({"compaction": {"prune_head_chars": 10**9}}, "compaction.prune_head_chars"),
    ({"compaction": {"summarizer": ":model"}}, "compaction.summarizer"),
    ({"compaction": {"summarizer_base_url": "localhost"}}, "compaction.summarizer_base_url"),
    ({"compaction": {"summarizer_api_key_env": "A-B"}}, "compaction.summarizer_api_key_env"),
    (
        {"provider": {"context_window": 8000}, "compaction": {"retain_tokens": 7000}},
        "compaction.retain_tokens",
    ),
    (
        {"provider": {"context_window": 8000}, "compaction": {"state_max_tokens": 7000}},
        "compaction.state_max_tokens",
    ),
    ({"recall": {"read_budget_chars": 10}}, "recall.read_budget_chars"),
    ({"recall": {"search_limit": 0}}, "recall.search_limit"),
    ({"tools": {"max_repeated_calls": 1}}, "tools.max_repeated_calls"),
    ({"provider": {"context_window": 100}}, "provider.context_window"),
    ({"provider": {"context_window": 10**9}}, "provider.context_window"),
    ({"provider": {"max_output_tokens": 0}}, "provider.max_output_tokens"),
    ({"provider": {"temperature": 3}}, "provider.temperature"),
    ({"provider": {"top_p": 0}}, "provider.top_p"),
    ({"provider": {"stream_idle_timeout": 0}}, "provider.stream_idle_timeout"),
    ({"provider": {"call_timeout": 0}}, "provider.call_timeout"),
    ({"provider": {"base_url": "localhost"}}, "provider.base_url"),
    ({"provider": {"api_key_env": "A-B"}}, "provider.api_key_env"),
    (
        {"mcp": {"servers": {"x": {"command": ["x"], "timeout_s": 0}}}},
        "mcp.servers.NAME.timeout_s",
    ),
    (
        {"mcp": {"servers": {"x": {"command": ["x"], "startup_timeout_s": 0}}}},
        "mcp.servers.NAME.startup_timeout_s",
    ),
]


def _rule(message: str) -> tuple[str, str]:
    """The key a ``config key KEY RULE`` error names (a server's name as ``NAME``) and the rule
    as its key's description must say it: without ``must be``, the value it shows, nor a
    closing explanation in brackets or the figures of one window."""
    found = re.fullmatch(r"config key (\S+) (.*?)(?: \(set in .*\))?", message)
    assert found is not None, message
    key, rule = found.groups()
    key = re.sub(r"^mcp\.servers\.[^.]+\.", "mcp.servers.NAME.", key)
    rule = rule.split("; ")[0].removeprefix("must be ")
    rule = re.sub(r" \((?:the|a|no) [^()]*\)$", "", rule)
    return key, re.sub(r" \(\d+ tokens in a \d+-token window\)$", "", rule)


def test_every_rule_the_validation_enforces_is_said_in_the_keys_description(tmp_path):
    """docs/config.md said "0: no limit" of ``max_repeated_calls`` and not that 1 is refused,
    and nothing of ``max_concurrency`` at least 1 or the provider's timeouts positive. Each
    key's description now states every rule the validation holds it to, in its words; the
    Validation paragraph names each such key."""
    from dsh.config.descriptions import DESCRIPTIONS

    validation = next(line for line in render_config().splitlines() if "Validation:" in line)
    unsaid = []
    for overrides, expected in REFUSED:
        try:
            load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path, overrides=overrides)
        except ConfigError as exc:
            message = str(exc)
        else:
            raise AssertionError(f"{overrides} was accepted")
        key, rule = _rule(message)
        assert key == expected, message
        if rule.lower() not in DESCRIPTIONS[key].lower():
            unsaid.append(f"{key}: {rule}")
        if f"`{key}`" not in validation and f"`{key.rpartition('.')[2]}`" not in validation:
            unsaid.append(f"{key} not in the Validation paragraph")
    assert unsaid == []
