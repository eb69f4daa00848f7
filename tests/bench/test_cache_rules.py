"""The provider cache rules on hand-made request sequences; every expected hit is worked out
next to its assertion. Segments are (key, tokens): same key, same bytes."""

from __future__ import annotations

import pytest

from dsh.bench.cache_rules import (
    AnthropicRule,
    DeepSeekRule,
    OpenAIRule,
    Price,
    Served,
    load_prices,
    make_rule,
)
from dsh.bench.trace import Trace
from dsh.errors import ConfigError
from dsh.llm.types import ModelRequest
from tests.helpers import assistant_message, checkpoint_message, user_message

T, S = ("tools", 800), ("system", 400)  # 1,200 tokens of header
M1, M2, M3, M4 = ("m1", 300), ("m2", 200), ("m3", 100), ("m4", 60)
X = ("x", 50)


# ---- DeepSeek --------------------------------------------------------------------------------


def test_deepseek_hits_the_longest_saved_unit_only() -> None:
    rule = DeepSeekRule()
    assert rule.request([T, S, M1]) == Served(0)  # cold; saves T+S+M1
    rule.response([T, S, M1, M2])  # the reply: saves T+S+M1+M2
    # T+S+M1+M2 is a saved unit and a full prefix: 800+400+300+200 = 1700.
    assert rule.request([T, S, M1, M2, M3]) == Served(1700)
    # T+S+X…: no saved unit ends at T+S (units are whole requests/replies): 0.
    assert rule.request([T, S, X, M3]) == Served(0)


# ---- OpenAI ----------------------------------------------------------------------------------


def test_openai_caches_nothing_below_1024_tokens() -> None:
    rule = OpenAIRule()
    small = [("a", 500), ("b", 400)]  # 900 tokens
    assert rule.request(small) == Served(0)
    assert rule.request(small) == Served(0)  # identical, still under the minimum


def test_openai_hits_the_common_prefix_rounded_down_to_128() -> None:
    rule = OpenAIRule()
    assert rule.request([T, S, M1]) == Served(0)  # cold
    # LCP with the first request: T+S+M1 = 1,500 -> floor(1500/128)*128 = 11*128 = 1,408.
    assert rule.request([T, S, M1, M2]) == Served(1408)
    # LCP: T+S+M1+M2 = 1,700 -> 13*128 = 1,664.
    assert rule.request([T, S, M1, M2, M3]) == Served(1664)


def test_openai_uses_the_best_earlier_request_and_ignores_replies() -> None:
    rule = OpenAIRule()
    rule.request([T, S, M1, M2])
    rule.response([T, S, M1, M2, M3])  # replies are not cached prompts
    rule.request([T, S, X])
    # Against [T,S,M1,M2] the LCP is T+S+M1 = 1,500 (M3 was only a reply) -> 1,408.
    assert rule.request([T, S, M1, M3]) == Served(1408)
    # Against [T,S,X] the LCP is T+S+X = 1,250 -> 9*128 = 1,152.
    assert rule.request([T, S, X, M4]) == Served(1152)


def test_openai_needs_1024_common_tokens() -> None:
    rule = OpenAIRule()
    rule.request([("a", 1000), ("b", 500)])
    # LCP 1,000 < 1,024 although the prompt is 1,600 tokens: 0.
    assert rule.request([("a", 1000), ("c", 600)]) == Served(0)


# ---- Anthropic -------------------------------------------------------------------------------


def test_anthropic_writes_at_breakpoints_then_reads_them() -> None:
    rule = AnthropicRule()
    # Breakpoints at the system block (#1) and the last message (#3). Cold: nothing read;
    # entries at #1 (1,200) and #3 (1,700) are written: 1,700 tokens billed as writes.
    assert rule.request([T, S, M1, M2], [1, 3]) == Served(read=0, write=1700)
    # Next turn: the breakpoint at #4 looks back to the entry at #3 (1,700 read); the
    # write runs from there to #4: 100 tokens.
    assert rule.request([T, S, M1, M2, M3], [1, 4]) == Served(read=1700, write=100)


def test_anthropic_after_a_rewrite_reads_only_the_system_entry() -> None:
    rule = AnthropicRule()
    rule.request([T, S, M1, M2], [1, 3])
    # M1 replaced by X (a new checkpoint): only the entry at #1 (1,200) is still a prefix.
    # Written: up to the last breakpoint, 800+400+50+200+100 = 1,550, minus 1,200 = 350.
    assert rule.request([T, S, X, M2, M3], [1, 4]) == Served(read=1200, write=350)


def test_anthropic_looks_back_at_most_20_blocks() -> None:
    head = [T, S]
    tail = [(f"t{i}", 10) for i in range(25)]
    rule = AnthropicRule()
    rule.request(head, [1])  # entry at #1 (1,200 tokens)
    # Only a breakpoint at the end (#26): #1 is 25 blocks back, beyond the lookback: 0 read.
    assert rule.request(head + tail, [26]).read == 0
    rule = AnthropicRule()
    rule.request(head, [1])
    # A breakpoint at #21 is exactly 20 blocks after #1: found, 1,200 read.
    assert rule.request(head + tail, [21]).read == 1200


def test_anthropic_caches_nothing_below_1024_tokens_and_allows_four_breakpoints() -> None:
    rule = AnthropicRule()
    assert rule.request([("a", 600), ("b", 300)], [0, 1]) == Served(0, 0)  # 900 < 1,024
    assert rule.request([("a", 600), ("b", 300)], [0, 1]) == Served(0, 0)  # nothing was written
    with pytest.raises(ValueError, match="at most 4"):
        rule.request([("a", 1)] * 6, [0, 1, 2, 3, 4])


# ---- prices and the factory ------------------------------------------------------------------


def test_prices_bill_reads_and_writes_by_their_multipliers() -> None:
    deepseek = Price(model="d", input=0.28, output=0.42, cache_read=0.1)
    # 1,000 input of which 600 read: 400 + 600*0.1 = 460 units * 0.28 + 100 output * 0.42.
    assert deepseek.cost(input_tokens=1000, read=600, write=0, output_tokens=100) == pytest.approx(
        (460 * 0.28 + 100 * 0.42) / 1e6
    )
    anthropic = Price(model="a", input=3.0, output=15.0, cache_read=0.1, cache_write=1.25)
    # 2,000 input: 1,200 read, 500 written, 300 plain: 300 + 120 + 625 = 1,045 units * $3.
    assert anthropic.cost(
        input_tokens=2000, read=1200, write=500, output_tokens=0
    ) == pytest.approx(1045 * 3.0 / 1e6)


def test_price_overrides_and_unknown_rules() -> None:
    prices = load_prices({"deepseek": {"cache_read": 0.026}})
    assert prices["deepseek"].cache_read == 0.026 and prices["deepseek"].input == 0.28
    with pytest.raises(ConfigError, match="unknown cache rule"):
        load_prices({"gemini": {"input": 1.0}})
    with pytest.raises(ConfigError, match="unknown cache rule"):
        make_rule("gemini")
    assert {make_rule(n).name for n in ("deepseek", "openai", "anthropic")} == {
        "deepseek",
        "openai",
        "anthropic",
    }


# ---- requests as segments --------------------------------------------------------------------


def _request(*messages: object) -> ModelRequest:
    return ModelRequest(
        provider="p",
        model="m",
        system="be brief",
        tools=({"name": "t", "description": "d", "parameters": {}},),
        messages=tuple(messages),  # type: ignore[arg-type]
    )


def test_equal_messages_share_a_segment_and_breakpoints_follow_dsh() -> None:
    trace = Trace()
    first = user_message("hello", id="u1")
    same_text = user_message("hello", id="u2")  # ids never reach the provider
    other = checkpoint_message("summary", "p1")
    segments, breakpoints = trace.segments(_request(first, other))
    again, _ = trace.segments(_request(same_text, assistant_message("hi")))
    assert segments[2] == again[2] and segments[3] != again[3]
    assert breakpoints == (1, 3)  # system block and last message, as dsh.llm.anthropic marks
    index = trace.begin(_request(first))
    trace.end(index, assistant_message("hi"))
    served = trace.replay(DeepSeekRule())
    assert served == [Served(0)]


def test_a_breakpoint_after_the_last_stub_keeps_the_stub_prefix_after_a_pass() -> None:
    """The Anthropic what-if: dsh marks only the system block and the last message, so after a
    pass (a new state after unchanged stubs) nothing past the header is read; a third
    breakpoint after the last stub makes the stubs a cache entry of their own."""
    stub = checkpoint_message("<compacted-index-stub>\n" + "k" * 6000 + "\n", "p1", id="stub")
    before = [stub, checkpoint_message("<compacted-summary>old</compacted-summary>", "p1")]
    after = [stub, checkpoint_message("<compacted-summary>new</compacted-summary>", "p2")]

    def run(stub_breakpoint: bool) -> list[Served]:
        trace = Trace()
        for messages in (before, after):
            index = trace.begin(_request(*messages, user_message("go on")))
            trace.end(index, assistant_message("ok"))
        assert trace.calls[0].stub_end == 2  # tools #0, system #1, the stub #2
        return trace.replay(AnthropicRule(), stub_breakpoint=stub_breakpoint)

    header_and_stub = Trace().segments(_request(stub))[0]
    stub_prefix = sum(tokens for _, tokens in header_and_stub)
    assert stub_prefix >= 1024
    assert run(stub_breakpoint=False)[1].read == 0  # the header alone is under 1,024 tokens
    assert run(stub_breakpoint=True)[1].read == stub_prefix
