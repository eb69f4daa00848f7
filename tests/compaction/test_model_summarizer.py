"""The shape of model summary calls: what sibling calls share, and what a failure is."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.compaction import ModelSummarizer, RecallableBackend
from dsh.compaction.basic import BasicBackend
from dsh.compaction.model_summarizer import as_transcript, build_summary_request
from dsh.compaction.prompts import SUMMARISER_SYSTEM
from dsh.compaction.summarizer import SummaryTask
from dsh.errors import ProviderError
from dsh.events import encode_json
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Finish, FinishReason, StreamEvent, TextDelta
from tests.agent.conftest import run
from tests.compaction.test_one_call import Sections, _summaries
from tests.compaction.test_recallable import SETTINGS, engine_for, long_session
from tests.helpers import append_tool_turn, assistant_message, user_message


def test_stub_calls_of_one_pass_share_a_byte_identical_prefix_before_their_slice():
    session = long_session()
    run(engine_for(session).compact_now(window=100_000))  # a state and stubs to share
    for i in range(8, 16):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    plan = RecallableBackend(ModelSummarizer(ScriptedProvider([]), "m"), SETTINGS).plan(
        session, retain_tokens=100, focus=None, reason="manual"
    )
    stubs = [r.task for r in plan.regions if r.kind == "index" and r.task is not None]
    assert len(stubs) >= 2
    requests = [build_summary_request(t, provider="p", model="m") for t in stubs]
    assert all(r.system == SUMMARISER_SYSTEM and r.tools == () for r in requests)
    shared = {encode_json(r.messages[0]) for r in requests}
    assert len(shared) == 1 and b"Background" in next(iter(shared))  # the shared context
    # then the slice itself, as transcript text
    assert requests[0].messages[1:-1] == tuple(map(as_transcript, stubs[0].messages))


def test_a_basic_summary_call_is_a_prefix_of_the_conversation_request():
    messages = (user_message("hi"), assistant_message("hello"))
    task = SummaryTask(
        kind="summary",
        messages=messages,
        max_tokens=100,
        system="sys",
        tools=({"name": "t", "description": "d", "parameters": {}},),
    )
    request = build_summary_request(task, provider="p", model="m")
    assert request.system == "sys" and request.tools == task.tools
    assert request.messages[:2] == messages and request.purpose == "compaction"


@pytest.mark.parametrize(
    ("summary", "match"),
    [({"text": "   "}, "no text"), ({"error": {"code": "AUTH", "message": "bad key"}}, "AUTH")],
)
def test_empty_or_failed_model_output_is_a_provider_error(summary, match):
    summarizer = ModelSummarizer(ScriptedProvider([], summaries=[summary]), "m")
    task = SummaryTask(kind="state", messages=(user_message("x"),), max_tokens=100)
    with pytest.raises(ProviderError, match=match):
        run(summarizer.summarize(task))


class _Stopped:
    """A provider whose reply streams some text, then finishes ``reason``."""

    name = "stopped"

    def __init__(self, reason: FinishReason) -> None:
        self.reason: FinishReason = reason

    async def stream(self, request, *, history=()) -> AsyncIterator[StreamEvent]:
        yield TextDelta("## Goal\nhalf a summ")
        yield Finish(self.reason)


@pytest.mark.parametrize(
    ("reason", "match"),
    [("max-tokens", "output limit"), ("filtered", "content filter")],
)
def test_a_summary_the_provider_stopped_early_is_a_provider_error_not_a_checkpoint(reason, match):
    summarizer = ModelSummarizer(_Stopped(reason), "m")
    task = SummaryTask(kind="state", messages=(user_message("x"),), max_tokens=100)
    with pytest.raises(ProviderError, match=match):
        run(summarizer.summarize(task))


def test_a_summary_call_never_asks_for_more_output_than_the_route_allows():
    """The slack a call asks beyond its budget stays within the route's max_output_tokens
    (a server refuses a larger max_tokens, or the model's limit cuts it)."""
    task = SummaryTask(kind="state", messages=(user_message("x"),), max_tokens=800)
    assert build_summary_request(task, provider="p", model="m").params["max_tokens"] == 1600
    provider = ScriptedProvider([], summaries=[{"text": "## Goal\nok"}])
    run(ModelSummarizer(provider, "m", max_output_tokens=1000).summarize(task))
    assert provider.requests[0].params["max_tokens"] == 1000


def test_a_basic_summary_budget_is_capped_at_the_summarisers_bound():
    session = long_session()
    summarizer = ModelSummarizer(ScriptedProvider([]), "m", max_output_tokens=200)
    plan = BasicBackend(summarizer, SETTINGS).plan(
        session, retain_tokens=100, focus=None, reason="manual"
    )
    (region,) = plan.regions
    assert region.task is not None and region.task.max_tokens == 200 < SETTINGS.state_max_tokens


def test_a_state_budget_above_the_output_bound_is_asked_within_it_in_the_fewest_calls():
    """state_max_tokens above what one summariser call may write: the state is asked for the
    bound (it could not write more), and the pass still takes the fewest calls that fit."""
    session = long_session()
    bound = SETTINGS.state_max_tokens - 1
    summarizer = Sections(max_output_tokens=bound)
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    tasks = summarizer.tasks
    assert all(t.max_tokens <= bound for t in tasks)
    # the first stubs share a call; a part that fits with no next one is asked on its own,
    # as are the parts after it (the state last)
    assert [t.kind for t in tasks] == ["pass", "stub", "state"] and tasks[-1].max_tokens == bound
    assert 1 < len(tasks) < len(result.checkpoints)
    assert all(s.degraded is None for s in _summaries(session, result))
