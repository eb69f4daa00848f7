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
