"""``/context`` and ``/cost`` (the TUI) and the context panel and cost (the web), for every face:
dsh.agent.context_report and dsh.agent.billing. The next request by part (system, tools, stubs,
state, tail) adds up to the heuristic size of exactly what the model would be sent; billed tokens
are the logged usage, priced with dsh.llm.prices. Checked against independent computations over
real sessions: the keyless demo, which compacts and recalls, and a session compacted by the
recallable backend."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import msgspec
import pytest

from dsh.agent.billing import cost_estimate, cost_report, price_of, render_cost
from dsh.agent.context_report import context_report, next_request_tokens, render_context
from dsh.compaction import CompactionEngine, make_backend, make_summarizer, run_compact_command
from dsh.config import CompactionSettings
from dsh.demo import DEMO_WINDOW, prepare_workspace, run_demo
from dsh.events import (
    AssistantMessage,
    Message,
    ModelSource,
    RequestConfig,
    RequestContext,
    RequestHeader,
    RequestHeaderBody,
    StepEnd,
    StepStart,
    TextBlock,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
    UserSource,
    is_checkpoint_event,
    surface_message,
)
from dsh.llm.prices import DEFAULT_PRICES, Price
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session
from dsh.surface.tokens import message_tokens, system_tokens, tools_tokens
from dsh.transcript.stats import session_stats
from dsh.web.figures import session_figures
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    new_session,
    user_message,
)
from tests.web.builders import run_apart

SYSTEM = "You are dsh, a careful coding agent. " * 20
TOOLS = (
    {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},
    {"name": "bash", "description": "Run a command", "parameters": {"type": "object"}},
)


def compacted_session(tmp_path: Path) -> Session:
    session = new_session(JsonlStore(tmp_path))
    header = RequestHeaderBody(
        config=RequestConfig(provider="deepseek", model="deepseek-chat"), system=SYSTEM, tools=TOOLS
    )
    session.append(RequestHeader(header=header, reason="initial"))
    session.append(
        RequestContext(provider="deepseek", model="deepseek-chat", context_window=64_000)
    )
    usage = Usage(input_tokens=300, output_tokens=50, cache_read_tokens=1200)
    for i in range(12):
        append_tool_turn(session, f"look at part {i} " * 30, usage=usage, final_usage=usage)
        append_chat_turn(session, f"and now {i} " * 20, "noted " * 40, usage=usage)
    settings = CompactionSettings(backend="recallable", retain_tokens=300, chunk_tokens=400)
    backend = make_backend(settings, make_summarizer(settings, None, None, history=session.events))
    assert backend is not None
    ok, _ = run_apart(
        run_compact_command(CompactionEngine(session, backend, settings), window=64_000)
    )
    assert ok
    return session


def test_the_parts_add_up_to_the_next_request_in_model_order(tmp_path: Path) -> None:
    session = compacted_session(tmp_path)
    report = context_report(session, default_window=1_000)
    assert (report.provider, report.model, report.window) == ("deepseek", "deepseek-chat", 64_000)
    assert report.part_tokens["system"] == system_tokens(SYSTEM)
    assert report.part_tokens["tools"] == tools_tokens(TOOLS)
    assert [name for name, _ in report.tools] == ["read_file", "bash"]
    assert [item.seq for item in report.items] == session.nodes
    messages = [surface_message(session.events[seq]) for seq in session.nodes]
    node_sum = sum(0 if m is None or not m.content else message_tokens(m) for m in messages)
    assert sum(report.part_tokens[p] for p in ("stubs", "state", "tail")) == node_sum
    assert report.heuristic_tokens == system_tokens(SYSTEM) + tools_tokens(TOOLS) + node_sum
    # the compaction left index stubs and one state checkpoint ahead of the verbatim tail
    stubs, tail = report.counts["stubs"], report.counts["tail"]
    assert report.counts["state"] == 1 and stubs >= 1 and tail >= 1
    assert [item.part for item in report.items] == ["stubs"] * stubs + ["state"] + ["tail"] * tail
    assert report.used_tokens == session.measure().total_tokens
    assert report.stats == session_stats(session.events)
    public = report.public()
    assert public["usedTokens"] == report.used_tokens
    assert {p["part"] for p in public["parts"]} == {"system", "tools", "stubs", "state", "tail"}


def test_a_session_without_a_logged_route_takes_the_callers(tmp_path: Path) -> None:
    session = new_session(JsonlStore(tmp_path))
    append_chat_turn(session, "hello", "hi")
    report = context_report(session, default_window=8_000, route=("scripted", "scripted"))
    assert (report.provider, report.model, report.window) == ("scripted", "scripted", 8_000)
    assert report.part_tokens["system"] == report.part_tokens["tools"] == 0
    assert report.cost.usd == 0.0
    assert context_report(session, default_window=8_000).cost.usd is None  # no route, no price


def test_the_cost_prices_each_kind_of_token_and_admits_an_unknown_model(tmp_path: Path) -> None:
    session = compacted_session(tmp_path)
    stats = session_stats(session.events)
    # $/M: 2.0 uncached input, 0.5 cache read, 3.0 cache write, 10.0 output
    price = Price(model="m", input=2.0, cache_read=0.25, cache_write=1.5, output=10.0)
    cost = cost_estimate(stats, price)
    expected = (
        stats.input_tokens * 2.0
        + stats.cache_read_tokens * 0.5
        + stats.cache_write_tokens * 3.0
        + stats.output_tokens * 10.0
    ) / 1e6
    assert cost.usd == pytest.approx(expected) and expected > 0
    assert f"{stats.model_calls} conversation calls" in cost.basis
    assert price_of("deepseek", "deepseek-chat") is not None
    assert price_of("somewhere", "deepseek-chat") is None
    assert cost_estimate(stats, None).usd is None


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory):
    # Module-scoped: it runs before the per-test private home is set, so it sets its own (the
    # demo's compaction keeps derived files, span and anchor index, in the home).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DSH_HOME", str(tmp_path_factory.mktemp("demo-home")))
        workspace = prepare_workspace(tmp_path_factory.mktemp("w"))
        session, _ = run_demo(MemoryStore(), workspace=workspace)
    return session


def test_the_parts_add_up_to_the_heuristic_size_of_the_next_request(demo_session):
    report = context_report(demo_session, window=DEMO_WINDOW)
    parts = {part.name: part for part in report.parts}
    header = demo_session.request_header
    assert header is not None
    assert parts["system"].tokens == system_tokens(header.system)
    assert parts["tools"].tokens == tools_tokens(header.tools)
    assert parts["tools"].items == len(header.tools or ())
    checkpoints = [s for s in demo_session.nodes if is_checkpoint_event(demo_session.events[s])]
    assert parts["stubs"].items + parts["state"].items == len(checkpoints)
    # the demo's pass: a stub for each of turns 1 and 2; turn 3's prompt (the open turn's)
    # stays verbatim, its first exchange becomes the state
    assert parts["stubs"].items == 2 and parts["state"].items == 1
    nodes = sum(demo_session.node_tokens(seq) for seq in demo_session.nodes)
    assert report.heuristic_tokens == parts["system"].tokens + parts["tools"].tokens + nodes
    assert parts["tail"].items == len(demo_session.nodes) - len(checkpoints)


def test_the_cache_figures_are_the_session_stats(demo_session):
    report = context_report(demo_session, window=DEMO_WINDOW)
    stats = session_stats(demo_session.events)
    assert report.calls == stats.model_calls
    assert report.cache_read == stats.cache_read_tokens
    assert report.cache_ratio == pytest.approx(stats.cache_hit_ratio)
    text = render_context(report)
    for name in ("system", "tools", "stubs", "state", "tail", "Cache hits so far"):
        assert name in text
    assert f"of {DEMO_WINDOW:,}" in text


def test_the_bill_sums_the_logged_usage_and_prices_it_by_the_provider_rule(demo_session):
    report = cost_report(demo_session.events)
    stats = session_stats(demo_session.events)
    (bill,) = report.bills  # the extractive summariser bills nothing
    assert (bill.provider, bill.model, bill.role) == ("scripted", "demo", "conversation")
    assert bill.calls == stats.model_calls and bill.output == stats.output_tokens
    assert (bill.uncached, bill.cache_read) == (stats.input_tokens, stats.cache_read_tokens)
    price = DEFAULT_PRICES["deepseek"]
    by_hand = (
        bill.uncached * price.input
        + bill.cache_read * price.input * price.cache_read
        + bill.output * price.output
    ) / 1e6
    assert report.cost == pytest.approx(by_hand)
    assert "priced at deepseek-chat list prices" in render_cost(report)


def test_a_provider_without_a_list_price_is_billed_but_not_estimated():
    session = new_session(MemoryStore())  # the helpers' provider is "fake": no list price
    append_chat_turn(session, usage=Usage(input_tokens=100, output_tokens=7, cache_read_tokens=20))
    append_chat_turn(session, usage=Usage(input_tokens=10, output_tokens=3, cache_write_tokens=5))
    report = cost_report(session.events)
    (bill,) = report.bills
    assert (bill.calls, bill.uncached, bill.cache_read, bill.cache_write) == (2, 110, 20, 5)
    assert bill.output == 10 and bill.cost is None and report.cost is None
    assert price_of(bill.provider, bill.model) is None
    assert f"no list price known for {bill.provider}:{bill.model}" in render_cost(report)


@pytest.mark.parametrize(
    ("provider", "model", "listed"),
    [
        ("deepseek", "deepseek-chat", "deepseek-chat"),
        ("deepseek", "deepseek-reasoner", "deepseek-chat"),  # the same list price
        ("openai", "gpt-4.1", "gpt-4.1"),
        ("openai", "gpt-4.1-2025-04-14", "gpt-4.1"),
        ("anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("scripted", "demo", "deepseek-chat"),  # the keyless model stands in for DeepSeek
        ("openai", "gpt-4.1-mini", None),  # another model: no price rather than gpt-4.1's
        ("openai", "gpt-4o", None),
        ("anthropic", "claude-opus-4-1", None),
        ("anthropic", "claude-sonnet-4-5-fast", None),
        ("openai-compatible", "gpt-4.1", None),  # a local server has no list price
        ("openai", None, None),
    ],
)
def test_a_list_price_is_used_only_for_the_model_it_is_the_price_of(provider, model, listed):
    price = price_of(provider, model)
    assert (price.model if price is not None else None) == listed


def test_nothing_called_yet_says_so():
    session = new_session(MemoryStore())
    assert "no model call yet" in render_context(context_report(session, window=1000))
    assert "No billed tokens yet" in render_cost(cost_report(session.events))


def test_both_faces_price_with_the_one_list_price_table(demo_session):
    report = context_report(demo_session, default_window=DEMO_WINDOW)  # the web's call
    (bill,) = cost_report(demo_session.events).bills  # the TUI's /cost
    price = DEFAULT_PRICES["deepseek"]  # the scripted model is priced as DeepSeek
    assert report.cost.price == bill.price == price
    assert report.cost.usd == pytest.approx(bill.cost) and report.cost.usd > 0
    assert report.public()["cost"]["price"] == {
        "input": price.input,
        "cacheRead": pytest.approx(price.input * price.cache_read),
        "cacheWrite": pytest.approx(price.input * price.cache_write),
        "output": price.output,
    }
    assert "at deepseek-chat list prices" in report.cost.basis


def test_after_a_provider_switch_each_call_is_priced_as_its_own_provider() -> None:
    """The web's cost (``context_report``) agrees with ``/cost`` (``cost_report``) after a
    switch: the DeepSeek calls keep their price, the local model's calls are not priced as the
    latest route's (it priced every call at the newest provider's list price, or none)."""
    session = new_session(MemoryStore())
    usage = Usage(input_tokens=1_000, output_tokens=200, cache_read_tokens=3_000)
    for turn, provider in enumerate(("deepseek", "openai-compatible", "deepseek", "local"), 1):
        session.append(TurnStart(turn=turn))
        session.append(StepStart(turn=turn, step=1))
        session.append(
            Message(
                id=f"u{turn}", role="user", content=(TextBlock(text="hi"),), source=UserSource()
            )
        )
        model = "deepseek-chat" if provider == "deepseek" else "m"
        session.append(RequestContext(provider=provider, model=model))
        reply = Message(
            id=f"a{turn}",
            role="assistant",
            content=(TextBlock(text="hello"),),
            source=ModelSource(provider=provider, model=model),
        )
        session.append(AssistantMessage(turn=turn, step=1, message=reply, usage=usage))
        session.append(StepEnd(turn=turn, step=1))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
    billed = cost_report(session.events)
    report = context_report(session, default_window=8_000)
    assert report.provider == "local" and billed.cost is not None and billed.cost > 0
    assert report.cost.usd == pytest.approx(billed.cost)
    single = cost_estimate(session_stats(session.events), DEFAULT_PRICES["deepseek"])
    assert report.cost.usd == pytest.approx(single.usd / 2)  # two of the four calls priced
    assert "not estimated" in report.cost.basis


def test_the_report_says_by_what_the_servers_count_scaled_the_estimate(tmp_path: Path) -> None:
    """The server counted the last request 1.3× dsh's heuristic: ``/context`` and the web's
    panel measure what it has not counted alike, and say by what ratio; the status bar's
    figure, with the header the next request carries, is calibrated the same way."""
    session = new_session(JsonlStore(tmp_path))
    header = RequestHeaderBody(
        config=RequestConfig(provider="deepseek", model="deepseek-chat"), system=SYSTEM, tools=TOOLS
    )
    session.append(RequestHeader(header=header, reason="initial"))
    session.append(user_message("def f(x):\n    return {'x': x}\n" * 160))
    estimated = session.measure().total_tokens  # the heuristic of the request about to go
    counted = Usage(input_tokens=estimated * 13 // 10, output_tokens=2)
    reply = assistant_message("fine")
    session.append(AssistantMessage(turn=1, step=1, message=reply, usage=counted))
    session.append(user_message("and again " * 100))
    report = context_report(session, default_window=64_000)
    assert report.calibration is not None
    assert report.calibration.ratio == Fraction(estimated * 13 // 10, estimated)  # about 1.3
    assert report.used_tokens == session.measure().total_tokens > counted.request_tokens()
    assert report.public()["calibration"] == 1.3
    assert "; dsh's estimate ×1.30, as the server counted its last request." in render_context(
        report
    )
    web = session_figures(session, report.stats, default_window=64_000)  # the page's header
    assert web["contextTokens"] == report.used_tokens
    assert next_request_tokens(session, header) == report.used_tokens  # the TUI's status bar
    longer = msgspec.structs.replace(header, system=SYSTEM + "x" * 400)  # +100 heuristic tokens
    assert next_request_tokens(session, longer) == report.used_tokens + 130
