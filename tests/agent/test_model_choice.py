"""``/model``'s check and list (``dsh.agent.model_choice``), the words both faces say."""

from __future__ import annotations

import pytest

from dsh.agent.model_choice import checked_choice, close_matches, listing_note
from dsh.errors import UsageError
from dsh.llm.model_list import Listed, NotListed

MODELS = ("qwen2.5-coder:7b", "Qwen3-32B", "llama3.1:8b", "deepseek-chat")


def test_close_matches_take_case_containment_then_spelling() -> None:
    assert close_matches("qwen3-32b", MODELS) == ["Qwen3-32B"]
    assert close_matches("qwen", MODELS)[:2] == ["qwen2.5-coder:7b", "Qwen3-32B"]
    assert close_matches("deepseek-caht", MODELS) == ["deepseek-chat"]
    assert close_matches("gpt-5", MODELS) == []


def test_a_listed_name_passes_an_unlisted_one_is_refused_in_one_line() -> None:
    assert checked_choice("llama3.1:8b", "ollama", Listed(MODELS)) is None
    with pytest.raises(UsageError) as refused:
        checked_choice("gpt-5", "ollama", Listed(MODELS))
    assert (
        str(refused.value) == "ollama does not list the model gpt-5 (/model lists the 4 it offers)"
    )
    assert "\n" not in str(refused.value)
    assert checked_choice("x", "scripted", None) is None  # no server to ask: any name
    warning = checked_choice("x", "ollama", NotListed("the server answered 404"))
    assert (
        warning
        == "warning: could not list ollama's models (the server answered 404): x not checked."
    )


def test_an_alias_of_a_listed_snapshot_is_listed() -> None:
    """Anthropic lists dated snapshots only and takes their aliases (the default model)."""
    listed = Listed(("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805"))
    assert checked_choice("claude-opus-4-1", "anthropic", listed) is None
    with pytest.raises(UsageError):
        checked_choice("claude-opus-4", "anthropic", listed)  # not a snapshot's alias
    note = listing_note("claude-sonnet-4-5", "anthropic", 200_000, listed)
    assert note.endswith("(in use: claude-sonnet-4-5, the alias of a listed snapshot)")


def test_the_list_marks_the_model_in_use_and_says_one_not_listed() -> None:
    note = listing_note("deepseek-chat", "deepseek", 128_000, Listed(MODELS)).splitlines()
    assert note[1:] == [
        "deepseek lists 4 model(s) (* in use):",
        "    qwen2.5-coder:7b",
        "    Qwen3-32B",
        "    llama3.1:8b",
        "  * deepseek-chat",
    ]
    other = listing_note("mine", "deepseek", 128_000, Listed(MODELS))
    assert other.endswith("(the model in use, mine, is not among them)")
