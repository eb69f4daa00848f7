"""The recall tools and their prompt section reach the model only once the log holds a
checkpoint, and the compaction engine counts what they add to the next request."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.agent import Agent, rebuild_requests
from dsh.agent.context_report import next_request_tokens
from dsh.agent.recall_offer import recall_offer
from dsh.agent.request_header import log_header_if_changed
from dsh.compaction import (
    CompactionEngine,
    CompactionRefused,
    ExtractiveSummarizer,
    RecallableBackend,
)
from dsh.config import RecallSettings
from dsh.events import (
    CompactionSummaryEvent,
    RequestConfig,
    RequestHeader,
    RequestHeaderBody,
    RequestHeaderEvent,
    encode_json,
)
from dsh.llm.scripted import ScriptedProvider
from dsh.recall import RECALL_PROMPT_SECTION
from dsh.store import MemoryStore
from dsh.surface import Session, system_tokens, tools_tokens
from tests.agent.conftest import run
from tests.compaction.test_recall_end_to_end import drive
from tests.compaction.test_recallable import SETTINGS as RECALLABLE
from tests.compaction.test_recallable import long_session
from tests.helpers import fixed_clock

RECALL = {"history_read", "history_search"}
PROMPTS = [f"note {i}: " + "filler " * 150 for i in range(6)]


def wired(workspace: Path, *, window: int) -> tuple[Session, CompactionEngine, Agent]:
    provider = ScriptedProvider([{"text": f"ok {i} " + "words " * 80} for i in range(20)])
    return drive(provider, workspace, window=window)


def _names(request_tools) -> set[str]:
    return {str(t["name"]) for t in request_tools or ()}


def _cost(header: RequestHeaderBody) -> int:
    return system_tokens(header.system) + tools_tokens(header.tools)


def test_the_recall_tools_and_section_reach_the_model_only_from_the_first_checkpoint_on(
    tmp_path: Path,
):
    session, _, agent = wired(tmp_path, window=3000)
    for prompt in PROMPTS:
        run(agent.run_turn(prompt))
    first_summary = min(e.seq for e in session.of_type(CompactionSummaryEvent))
    sent = agent.provider.requests  # type: ignore[attr-defined]
    rebuilt = list(rebuild_requests(session.events))
    assert len(rebuilt) == len(sent)
    before = [r for (seq, r) in rebuilt if seq < first_summary]
    after = [r for (seq, r) in rebuilt if seq > first_summary]
    assert before and after, "the small window must compact between turns"
    for request in before:
        assert not RECALL & _names(request.tools)
        assert RECALL_PROMPT_SECTION not in (request.system or "")
    offered = {(encode_json(list(r.tools or ())[-2:]), r.system) for r in after}
    assert len(offered) == 1, "once offered, the schemas and the section never change again"
    for request in after:
        assert [t["name"] for t in request.tools or ()][-2:] == ["history_read", "history_search"]
        assert (request.system or "").endswith("\n\n" + RECALL_PROMPT_SECTION)
    # what went out is what the log rebuilds: tools and system included
    for request, (_, again) in zip(sent, rebuilt, strict=True):
        assert encode_json(request.tools) == encode_json(again.tools)
        assert request.system == again.system


def test_tokens_to_come_are_what_the_offered_header_adds(tmp_path: Path):
    session, _, agent = wired(tmp_path, window=3000)
    for prompt in PROMPTS:
        run(agent.run_turn(prompt))
    headers = [e.data.header for e in session.of_type(RequestHeaderEvent)]
    plain = next(h for h in headers if not RECALL & _names(h.tools))
    offered = next(h for h in headers if _names(h.tools) >= RECALL)
    fresh = Session(MemoryStore().create(cwd=str(tmp_path)), clock=fixed_clock)
    _, offer = recall_offer(RecallSettings())
    assert offer.tokens_to_come(fresh) == 0  # no header logged yet
    fresh.append(RequestHeader(header=plain, reason="initial"))
    assert offer.tokens_to_come(fresh) == _cost(offered) - _cost(plain) > 250
    fresh.append(RequestHeader(header=offered, reason="change"))
    assert offer.tokens_to_come(fresh) == 0


def test_a_pass_figure_counts_the_recall_tools_the_next_request_will_carry(tmp_path: Path):
    session, engine, agent = wired(tmp_path, window=1_000_000)
    for prompt in PROMPTS:
        run(agent.run_turn(prompt))
    assert not session.of_type(CompactionSummaryEvent)
    result = run(engine.compact_now(window=1_000_000))
    assert result is not None
    # the figure the pass reports is the size of the request that goes out next
    log_header_if_changed(session, agent.current_header())
    assert _names(session.request_header.tools) >= RECALL  # type: ignore[union-attr]
    assert result.tokens_after == session.measure().total_tokens == engine.next_request_tokens()


def test_the_inflation_guard_refuses_a_pass_that_would_not_pay_for_what_it_brings():
    def guarded(to_come: int) -> CompactionEngine:
        session = long_session()
        session.append(
            RequestHeader(
                header=RequestHeaderBody(config=RequestConfig(provider="p", model="m")),
                reason="initial",
            )
        )
        return CompactionEngine(
            session,
            RecallableBackend(ExtractiveSummarizer(), RECALLABLE),
            RECALLABLE,
            standing_after_pass=lambda _: to_come,
        )

    assert run(guarded(0).compact_now(window=100_000)) is not None
    with pytest.raises(CompactionRefused, match="before any model call"):
        run(guarded(1_000_000).compact_now(window=100_000))


def test_a_status_figure_counts_the_recall_tools_an_idle_pass_brings(tmp_path: Path):
    """``next_request_tokens`` (the TUI's status bar) is the request the agent sends next: after
    a pass landed while idle it counts the recall tools the logged header lacks (the status
    bar said ~297 tokens less than ``/context`` until the next request was logged), and the
    engine's own figure agrees."""
    session, engine, agent = wired(tmp_path, window=1_000_000)
    for prompt in PROMPTS:
        run(agent.run_turn(prompt))
    assert next_request_tokens(session, agent.current_header()) == session.measure().total_tokens
    assert run(engine.compact_now(window=1_000_000)) is not None
    figure = next_request_tokens(session, agent.current_header())
    assert figure == session.measure().total_tokens + agent.config.recall.tokens_to_come(session)
    assert figure == engine.next_request_tokens() > session.measure().total_tokens
    log_header_if_changed(session, agent.current_header())  # what the next request logs
    assert next_request_tokens(session, agent.current_header()) == figure


def test_the_retry_after_an_overflow_pass_carries_the_recall_tools_its_stubs_point_to(
    tmp_path: Path,
):
    """The first checkpoint can come from overflow recovery, inside one model call: the retried
    request already shows stubs whose footers name ``history_read``, so it must carry the recall
    tools and section too (it was built from the header read before the pass)."""
    replies = [{"text": f"ok {i} " + "words " * 40} for i in range(3)]
    overflow = {"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}
    provider = ScriptedProvider([*replies, overflow, {"text": "recovered"}])
    session, _, agent = drive(provider, tmp_path, window=8000)
    for prompt in PROMPTS[:3]:
        run(agent.run_turn(prompt))
    assert not any(isinstance(e, CompactionSummaryEvent) for e in session.events)
    run(agent.run_turn(PROMPTS[3]))
    assert any(isinstance(e, CompactionSummaryEvent) for e in session.events)
    retried = provider.requests[-1]
    assert "recovered" in session.derive_messages()[-1].text()
    assert _names(retried.tools) >= RECALL
    assert RECALL_PROMPT_SECTION in (retried.system or "")
    _, rebuilt = list(rebuild_requests(session.events))[-1]  # the log holds what was sent
    assert encode_json(rebuilt.tools) == encode_json(retried.tools)
    assert rebuilt.system == retried.system
