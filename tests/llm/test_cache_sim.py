"""The DeepSeek cache rule on hand-made segment sequences, and request serialisation."""

from __future__ import annotations

import pytest

from dsh.errors import ConfigError
from dsh.events import PluginSource
from dsh.llm.cache_sim import DeepSeekCache, make_cache, message_segment, request_segments
from dsh.llm.types import ModelRequest
from dsh.surface import message_tokens, system_tokens, tools_tokens
from tests.helpers import assistant_message, user_message

A, B, C, D = ("A", 100), ("B", 20), ("C", 7), ("D", 3)


def test_a_cold_cache_hits_nothing() -> None:
    assert DeepSeekCache().serve([A, B]) == 0


def test_a_saved_prefix_is_hit_by_any_request_that_extends_it() -> None:
    cache = DeepSeekCache()
    cache.serve([A, B])  # saves A+B
    # A+B is a full prefix of A+B+C: the hit is A+B's 100 + 20 tokens.
    assert cache.serve([A, B, C]) == 120


def test_a_request_that_diverges_inside_a_saved_unit_misses_it() -> None:
    cache = DeepSeekCache()
    cache.serve([A, B])  # saves A+B only; A alone was never a unit
    # A+C shares A with the saved unit, but A+B is not a full prefix of A+C: 0.
    assert cache.serve([A, C]) == 0


def test_a_diverging_request_still_hits_a_shorter_saved_unit() -> None:
    cache = DeepSeekCache()
    cache.serve([A])  # saves A
    cache.serve([A, B])  # hits A (100), saves A+B
    # A+C: A+B is not its prefix, A is: 100.
    assert cache.serve([A, C]) == 100


def test_the_longest_saved_prefix_wins() -> None:
    cache = DeepSeekCache()
    cache.serve([A])
    cache.serve([A, B, C])  # hits A; saves A+B+C (not A+B)
    # A+B+C+D: saved units A and A+B+C are both prefixes; the longer gives 127.
    assert cache.serve([A, B, C, D]) == 127
    # A+B+D: only A is a saved full prefix (A+B was never saved): 100.
    assert cache.serve([A, B, D]) == 100


def test_saving_the_output_makes_the_next_turns_prefix_hit() -> None:
    system, user1, reply1, user2 = ("sys", 50), ("u1", 10), ("a1", 30), ("u2", 5)
    cache = DeepSeekCache()
    assert cache.serve([system, user1]) == 0  # cold; saves sys+u1
    cache.save_output([system, user1, reply1])  # saves sys+u1+a1
    # sys+u1+a1 is a full prefix of the next request: 50 + 10 + 30.
    assert cache.serve([system, user1, reply1, user2]) == 90


def test_without_the_output_saved_the_next_turn_hits_only_the_user_input() -> None:
    system, user1, reply1, user2 = ("sys", 50), ("u1", 10), ("a1", 30), ("u2", 5)
    cache = DeepSeekCache()
    cache.serve([system, user1])  # saves sys+u1
    # sys+u1 is the longest saved prefix of sys+u1+a1+u2: 60.
    assert cache.serve([system, user1, reply1, user2]) == 60


def test_an_empty_request_hits_nothing_and_saves_nothing() -> None:
    cache = DeepSeekCache()
    assert cache.serve([]) == 0
    assert cache.serve([A]) == 0


def test_rules_are_looked_up_by_name() -> None:
    assert isinstance(make_cache("deepseek"), DeepSeekCache)
    with pytest.raises(ConfigError, match="deepseek"):
        make_cache("nonesuch")


# ---- request serialisation ------------------------------------------------------------------

TOOLS = ({"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},)


def _request(*messages: object, system: str | None = "You are a coding agent.") -> ModelRequest:
    return ModelRequest(
        provider="p",
        model="m",
        system=system,
        tools=TOOLS,
        messages=tuple(messages),  # type: ignore[arg-type]
    )


def test_request_segments_follow_provider_order_with_heuristic_tokens() -> None:
    user, reply = user_message("hello"), assistant_message("hi there")
    segments = request_segments(_request(user, reply))

    assert [text.split(":", 1)[0] for text, _ in segments] == [
        "tools",
        "system",
        "message",
        "message",
    ]
    assert [tokens for _, tokens in segments] == [
        tools_tokens(TOOLS),
        system_tokens("You are a coding agent."),
        message_tokens(user),
        message_tokens(reply),
    ]


def test_request_segments_omit_absent_tools_and_system() -> None:
    request = ModelRequest(
        provider="p", model="m", system=None, tools=(), messages=(user_message("x"),)
    )
    assert len(request_segments(request)) == 1


def test_request_serialisation_is_deterministic_and_ignores_message_ids_and_sources() -> None:
    first = user_message("same words", id="u-1")
    again = user_message("same words", id="u-2")
    plugin = first.__class__(
        id="c-9", role="user", content=first.content, source=PluginSource(plugin="compact")
    )
    assert request_segments(_request(first)) == request_segments(_request(first))
    assert message_segment(first) == message_segment(again) == message_segment(plugin)
    assert message_segment(first) != message_segment(user_message("other words"))
