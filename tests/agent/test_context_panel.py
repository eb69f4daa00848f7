"""``context_report``: the next request by part (system, tools, stubs, state, tail) adds up to the
heuristic size of exactly what the model would be sent; the cost estimate prices logged usage."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.agent.context_panel import ModelPrice, context_report, cost_estimate, price_of
from dsh.compaction import CompactionEngine, make_backend, make_summarizer, run_compact_command
from dsh.config import CompactionSettings
from dsh.events import (
    RequestConfig,
    RequestContext,
    RequestHeader,
    RequestHeaderBody,
    Usage,
    surface_message,
)
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.surface.tokens import message_tokens, system_tokens, tools_tokens
from dsh.transcript.stats import session_stats
from tests.helpers import append_chat_turn, append_tool_turn, new_session
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
    report = context_report(session, window=1_000)
    assert (report.provider, report.model, report.window) == ("deepseek", "deepseek-chat", 64_000)
    assert report.parts["system"] == system_tokens(SYSTEM)
    assert report.parts["tools"] == tools_tokens(TOOLS)
    assert [name for name, _ in report.tools] == ["read_file", "bash"]
    assert [item.seq for item in report.items] == session.nodes
    messages = [surface_message(session.events[seq]) for seq in session.nodes]
    node_sum = sum(0 if m is None or not m.content else message_tokens(m) for m in messages)
    assert sum(report.parts[p] for p in ("stubs", "state", "tail")) == node_sum
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
    report = context_report(session, window=8_000, route=("scripted", "scripted"))
    assert (report.provider, report.model, report.window) == ("scripted", "scripted", 8_000)
    assert report.parts["system"] == report.parts["tools"] == 0
    assert report.cost.usd == 0.0
    assert context_report(session, window=8_000).cost.usd is None  # no route, no price


def test_the_cost_prices_each_kind_of_token_and_admits_an_unknown_model(tmp_path: Path) -> None:
    session = compacted_session(tmp_path)
    stats = session_stats(session.events)
    price = ModelPrice(input=2.0, cache_read=0.5, cache_write=3.0, output=10.0)
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
    assert price_of("somewhere", "unknown-model") is None
    assert cost_estimate(stats, None).usd is None
