"""Every route flag that has a config key, as flags and as ``config.toml``: the faces' tests
check that both make a session record the same settings (``has_the_flag_values``)."""

from __future__ import annotations

from typing import Any

SUMMARIZER_URL = "http://127.0.0.1:9/v1"
"""Never called: the sessions here are too short to compact."""

FLAGS = (
    "--provider", "scripted",
    "--model", "m-flag",
    "--base-url", "http://127.0.0.1:9/v1",
    "--context-window", "20000",
    "--compaction", "basic",
    "--summarizer", "openai-compatible:qwen",
    "--summarizer-base-url", SUMMARIZER_URL,
)  # fmt: skip
"""Every route flag with a config key (the scripted provider ignores the base URL, and records
it as any provider does)."""

CONFIG = f"""\
[provider]
name = "scripted"
model = "m-flag"
base_url = "http://127.0.0.1:9/v1"
context_window = 20000

[compaction]
backend = "basic"
summarizer = "openai-compatible:qwen"
summarizer_base_url = "{SUMMARIZER_URL}"
"""
"""``FLAGS`` as the keys of ``config.toml``."""


def has_the_flag_values(settings: dict[str, Any]) -> bool:
    """Whether a session recorded what ``FLAGS`` set."""
    compaction = settings["compaction"]
    return (
        (settings["provider"], settings["model"]) == ("scripted", "m-flag")
        and settings["baseUrl"] == "http://127.0.0.1:9/v1"
        and settings["contextWindow"] == 20_000
        and compaction["backend"] == "basic"
        and compaction["summarizer"] == "openai-compatible:qwen"
        and compaction["summarizerBaseUrl"] == SUMMARIZER_URL
    )
