"""The scripted provider counts model calls incrementally; the count must equal a fresh one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import AssistantMessage, RequestError, TurnStart, Usage
from dsh.llm.scripted import _Counter, _is_model_call, count_model_calls
from dsh.store import MemoryStore
from tests.helpers import assistant_message, new_session

PAYLOADS = {
    "assistant": lambda: AssistantMessage(
        turn=1,
        step=1,
        message=assistant_message("hi"),
        usage=Usage(input_tokens=1, output_tokens=1),
    ),
    "error": lambda: RequestError(turn=1, step=1, code="X", message="m", retryable=False),
    "turn": lambda: TurnStart(turn=1),
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(sorted(PAYLOADS)), max_size=5), max_size=12))
def test_incremental_count_equals_a_fresh_count(batches):
    counter = _Counter(_is_model_call)
    with new_session(MemoryStore()) as session:
        for batch in batches:
            for name in batch:
                session.append(PAYLOADS[name]())
            assert counter(session.events) == count_model_calls(session.events)
        other = list(session.events)[: len(session.events) // 2]  # another log: starts over
        assert counter(other) == count_model_calls(other)


def test_a_call_looks_only_at_new_events():
    looked: list[object] = []
    counter = _Counter(lambda e: looked.append(e) or False)
    log = [object() for _ in range(50)]
    counter(log)  # type: ignore[arg-type]
    looked.clear()
    log.append(object())
    counter(log)  # type: ignore[arg-type]
    assert len(looked) == 1
