"""The provider cache rules on hand-made request sequences; every expected hit is worked out
next to its assertion. Segments are (key, tokens): same key, same bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.bench.cache_rules import (
    AnthropicRule,
    DeepSeekRule,
    DeepSeekStrictRule,
    OpenAIRule,
    Price,
    Served,
    anthropic_read,
    deepseek_units,
    load_prices,
    make_rule,
    openai_hit,
)
from dsh.bench.trace import Trace
from dsh.errors import ConfigError
from dsh.events import Message, ModelSource, ReasoningBlock, TextBlock
from dsh.llm.anthropic_wire import to_wire_messages
from dsh.llm.types import ModelRequest
from dsh.surface.tokens import block_tokens
from tests.helpers import assistant_message, checkpoint_message, tool_call_block, user_message

T, S = ("tools", 800), ("system", 400)  # 1,200 tokens of header
M1, M2, M3, M4 = ("m1", 300), ("m2", 200), ("m3", 100), ("m4", 60)
X = ("x", 50)


# ---- DeepSeek --------------------------------------------------------------------------------

A, B, C, D = ("A", 1000), ("B", 300), ("C", 200), ("D", 100)


def test_deepseek_documented_example_a_b_then_a_c_then_a_d() -> None:
    """The KV-cache guide's example: after A+B, a request A+C does not hit A (only A+B was
    persisted), but the two share A, so A is persisted and a later A+D hits it."""
    rule = DeepSeekRule(interval=None)
    assert rule.request([A, B]) == Served(0)  # cold; persists A+B (1,300 -> 1,280 in units)
    assert rule.request([A, C]) == Served(0)  # A alone was never persisted
    # A is now a persisted unit (common to both): 1,000 tokens -> 15 units of 64 = 960.
    assert rule.request([A, D]) == Served(960)


def test_deepseek_persists_whole_requests_and_replies_in_64_token_units() -> None:
    rule = DeepSeekRule(interval=None)
    rule.request([A, B])  # unit A+B: 1,300 -> 20 × 64 = 1,280
    assert rule.request([A, B, C]) == Served(1280)
    rule.response([A, B, C, D])  # the reply persists A+B+C+D: 1,600 = 25 × 64
    assert rule.request([A, B, C, D, ("E", 5)]) == Served(1600)


def test_deepseek_fixed_interval_units_credit_a_long_shared_prefix() -> None:
    """Rule (c): a request of 2,200 tokens persists units at 512, 1,024, 1,536 and 2,048
    tokens; a later request sharing only its first segment (1,000 tokens) hits the 512 unit
    (the 1,024 unit ends inside B, which differs)."""
    long = [A, ("B2", 1200)]
    rule = DeepSeekRule(interval=512)
    rule.request(long)
    assert rule.request([A, ("Z", 50)]) == Served(512)
    strict = DeepSeekRule(interval=None)
    strict.request(long)
    assert strict.request([A, ("Z", 50)]) == Served(0)


def test_deepseek_units_are_a_pure_function_of_the_documented_rules() -> None:
    # (a) 1,300 -> 1,280; (b) common 1,000 -> 960; (c) every 512: 512, 1,024.
    assert deepseek_units(1300, 1000, interval=512) == [512, 960, 1024, 1280]
    assert deepseek_units(1300, 0, interval=None) == [1280]
    assert deepseek_units(40, 20, interval=None) == []  # under one 64-token unit: not stored


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(1, 400)), min_size=1, max_size=6),
        min_size=1,
        max_size=8,
    )
)
def test_deepseek_hits_are_whole_units_and_never_exceed_a_matched_prefix(
    requests: list[list[tuple[str, int]]],
) -> None:
    rule = DeepSeekRule(interval=256)
    seen: list[list[tuple[str, int]]] = []
    for raw in requests:
        # the same key always carries the same size (same bytes)
        request = [(key, 50 + ord(key)) for key, _ in raw]
        hit = rule.request(request).read
        assert hit % 64 == 0
        longest = max((_lcp(request, old) for old in seen), default=0)
        assert hit <= longest
        seen.append(request)


def _lcp(a: list[tuple[str, int]], b: list[tuple[str, int]]) -> int:
    total = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        total += x[1]
    return total


def test_deepseek_strict_hits_the_longest_saved_unit_only() -> None:
    rule = DeepSeekStrictRule()
    assert rule.request([T, S, M1]) == Served(0)  # cold; saves T+S+M1
    rule.response([T, S, M1, M2])  # the reply: saves T+S+M1+M2
    # T+S+M1+M2 is a saved unit and a full prefix: 800+400+300+200 = 1700.
    assert rule.request([T, S, M1, M2, M3]) == Served(1700)
    # T+S+X…: no saved unit ends at T+S (units are whole requests/replies): 0.
    assert rule.request([T, S, X, M3]) == Served(0)
    # … and, unlike the documented rule, A+C never persists the shared A.
    rule.request([T, S, X])
    assert rule.request([T, S, M4]) == Served(0)


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


def test_openai_hit_is_a_pure_function_of_the_documented_rule() -> None:
    # The guide: caching starts at 1,024 tokens and grows in 128-token increments.
    assert openai_hit(1500, 1500) == 1408
    assert openai_hit(1000, 2000) == 0 and openai_hit(1500, 900) == 0
    assert openai_hit(1024, 1024) == 1024


def test_openai_evicts_a_prefix_unused_for_n_simulated_minutes() -> None:
    rule = OpenAIRule(evict_minutes=5)
    rule.request([T, S, M1], now=0)
    # 4 minutes later: still cached (LCP T+S+M1 = 1,500 -> 1,408), and the hit refreshes it.
    assert rule.request([T, S, M1, M2], now=240) == Served(1408)
    # 9 minutes after the start but only 5 after the last use: the prefix is still live.
    assert rule.request([T, S, M1, M3], now=540) == Served(1408)
    # 6 minutes idle: evicted, a miss (and cached again from now).
    assert rule.request([T, S, M1, M4], now=900) == Served(0)
    never = OpenAIRule()
    never.request([T, S, M1], now=0)
    assert never.request([T, S, M1, M2], now=86_400) == Served(1408)


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


def test_anthropic_entries_live_five_minutes_refreshed_on_read() -> None:
    rule = AnthropicRule()
    rule.request([T, S, M1, M2], [1, 3], now=0)  # written at t=0, live until 300 s
    # Read at 299 s (T+S+M1+M2 = 1,700); the new entry at #4 lives until 599 s.
    assert rule.request([T, S, M1, M2, M3], [1, 4], now=299).read == 1700
    # At 590 s the entry at #4 (written at 299 s) is still live.
    assert rule.request([T, S, M1, M2, M3, M4], [1, 5], now=590).read == 1800
    # 301 s after the last touch everything has expired: nothing is read, all is written.
    assert rule.request([T, S, M1, M2, M3, M4], [1, 5], now=891) == Served(read=0, write=1860)


def test_anthropic_read_is_a_pure_function_of_live_entries() -> None:
    sums = [100 * (i + 1) for i in range(30)]
    live = [i == 2 for i in range(30)]
    assert anthropic_read(live, sums, [22]) == (300, 2)  # exactly 20 blocks back
    assert anthropic_read(live, sums, [23]) == (0, None)  # 21 blocks back: out of reach
    assert anthropic_read(live[:10], sums, [25]) == (0, None)  # matched only 10 blocks


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


@pytest.mark.parametrize(
    ("override", "field"),
    [({"input": -0.28}, "input"), ({"cache_read": 1.5}, "cache_read"), ({"output": -1}, "output")],
)
def test_a_negative_price_or_a_read_dearer_than_a_miss_is_refused(override, field) -> None:
    with pytest.raises(ConfigError, match=rf"prices\.deepseek: .*{field}"):
        load_prices({"deepseek": override})


def test_price_overrides_and_unknown_rules() -> None:
    prices = load_prices({"deepseek": {"cache_read": 0.026}})
    assert prices["deepseek"].cache_read == 0.026 and prices["deepseek"].input == 0.28
    assert prices["deepseek-strict"] == prices["deepseek"]  # follows deepseek unless overridden
    with pytest.raises(ConfigError, match="unknown cache rule"):
        load_prices({"gemini": {"input": 1.0}})
    with pytest.raises(ConfigError, match="unknown cache rule"):
        make_rule("gemini")
    names = ("deepseek", "deepseek-strict", "openai", "anthropic")
    assert tuple(make_rule(n).name for n in names) == names


# ---- requests as segments --------------------------------------------------------------------


def _request(*messages: object, system: str = "be brief") -> ModelRequest:
    return ModelRequest(
        provider="p",
        model="m",
        system=system,
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
    assert trace.replay(DeepSeekRule()) == [Served(0)]


def test_anthropic_counts_content_blocks_as_the_adapter_sends_them() -> None:
    """A step with text and three tool calls is four blocks; reasoning is not sent; the
    breakpoints are the system block and the last block of the last message."""
    step = Message(
        id="a1",
        role="assistant",
        content=(
            ReasoningBlock("thinking it over"),
            TextBlock("Let me look."),
            *(tool_call_block(f"c{i}", "read_file", f'{{"path": "f{i}"}}') for i in range(3)),
        ),
        source=ModelSource(provider="p", model="m"),
    )
    trace = Trace()
    index = trace.begin(_request(user_message("go"), step))
    record = trace.calls[index]
    assert len(record.messages.segments) == 4  # tools, system, two messages
    assert len(record.blocks.segments) == 7  # tools, system, 1 + 4 blocks
    assert record.blocks.breakpoints == (1, 6)
    reasoning = block_tokens(ReasoningBlock("thinking it over"))
    assert record.blocks.tokens == record.messages.tokens - reasoning
    # An empty system prompt gets no breakpoint (the adapter sends no system block).
    bare = trace.calls[trace.begin(_request(user_message("go"), system=""))]
    assert bare.blocks.breakpoints == (2,)


def test_the_simulated_clock_advances_per_conversation_request() -> None:
    trace = Trace(step_seconds=30)
    first = trace.begin(_request(user_message("a")))
    summary = trace.begin(_request(user_message("b")), "compaction")
    second = trace.begin(_request(user_message("c")))
    assert [trace.calls[i].at for i in (first, summary, second)] == [0, 30, 30]


def _wire_marks(request: ModelRequest) -> tuple[int, ...]:
    """Block indexes (tools and system first, as the bench counts them) that carry a
    ``cache_control`` in what ``dsh.llm.anthropic`` sends for ``request``."""
    header = int(bool(request.tools)) + int(request.system is not None)
    marks = [header - 1] if request.system else []
    blocks = [b for m in to_wire_messages(request.messages) for b in m["content"]]
    marks += [header + i for i, block in enumerate(blocks) if "cache_control" in block]
    return tuple(marks)


@pytest.mark.parametrize(
    "messages",
    [
        (user_message("go"),),
        (checkpoint_message("<compacted-summary>s</compacted-summary>", "p1"), user_message("q")),
        (
            checkpoint_message("<compacted-index-stub>\none\n", "p1"),
            checkpoint_message("<compacted-index-stub>\ntwo\n", "p1"),
            checkpoint_message("<compacted-summary>state</compacted-summary>", "p1"),
            user_message("next question"),
            assistant_message("an answer", tool_calls=[tool_call_block("c1")]),
        ),
    ],
)
def test_anthropic_breakpoints_are_where_the_adapter_puts_cache_control(messages) -> None:
    """The simulated Anthropic rule marks exactly the blocks ``dsh.llm.anthropic`` marks: the
    system block, the end of the frozen stub region, and the last block."""
    for system in ("be brief", ""):
        request = _request(*messages, system=system)
        trace = Trace()
        record = trace.calls[trace.begin(request)]
        assert record.blocks.breakpoints == _wire_marks(request)


def test_the_stub_breakpoint_keeps_the_stub_prefix_after_a_pass() -> None:
    """dsh marks the system block, the last stub and the last message, so after a pass (a new
    state after unchanged stubs) the stubs are read from cache; the what-if without the stub
    breakpoint (what dsh sent before it marked the stubs) reads nothing past the header."""
    stub = checkpoint_message("<compacted-index-stub>\n" + "k" * 6000 + "\n", "p1", id="stub")
    before = [stub, checkpoint_message("<compacted-summary>old</compacted-summary>", "p1")]
    after = [stub, checkpoint_message("<compacted-summary>new</compacted-summary>", "p2")]

    def run(stub_breakpoint: bool) -> list[Served]:
        trace = Trace()
        for messages in (before, after):
            index = trace.begin(_request(*messages, user_message("go on")))
            trace.end(index, assistant_message("ok"))
        assert trace.calls[0].blocks.stub_end == 2  # tools #0, system #1, the stub's block #2
        return trace.replay(AnthropicRule(), stub_breakpoint=stub_breakpoint)

    header_and_stub = Trace().segments(_request(stub))[0]
    stub_prefix = sum(tokens for _, tokens in header_and_stub)
    assert stub_prefix >= 1024
    assert run(stub_breakpoint=True)[1].read == stub_prefix
    assert run(stub_breakpoint=False)[1].read == 0  # the header alone is under 1,024 tokens
