"""``/context`` and ``/cost`` figures (dsh.agent.context_report), checked against independent
computations over a real session: the keyless demo, which compacts and recalls."""

from __future__ import annotations

import pytest

from dsh.agent.context_report import (
    context_report,
    cost_report,
    price_of,
    render_context,
    render_cost,
)
from dsh.demo import DEMO_WINDOW, prepare_workspace, run_demo
from dsh.events import Usage, is_checkpoint_event
from dsh.llm.prices import DEFAULT_PRICES
from dsh.store import MemoryStore
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.transcript.stats import session_stats
from tests.helpers import append_chat_turn, new_session


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory):
    session, _ = run_demo(MemoryStore(), workspace=prepare_workspace(tmp_path_factory.mktemp("w")))
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
    assert parts["stubs"].items == 2 and parts["state"].items == 1  # the demo's pass
    nodes = sum(demo_session.node_tokens(seq) for seq in demo_session.nodes)
    assert report.total == parts["system"].tokens + parts["tools"].tokens + nodes
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
    assert price_of(bill.provider) is None
    assert f"no list price known for provider {bill.provider!r}" in render_cost(report)


def test_nothing_called_yet_says_so():
    session = new_session(MemoryStore())
    assert "no model call yet" in render_context(context_report(session, window=1000))
    assert "No billed tokens yet" in render_cost(cost_report(session.events))
