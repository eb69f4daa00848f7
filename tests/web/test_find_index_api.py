"""Find's kept index (``dsh.transcript.find.FindIndex``, kept per session by
``dsh.web.find_route``): the server folds a session's log once, then only what was appended to
it, and every answer equals a fresh ``find_in_transcript`` of the log as it is, whatever was
appended, cut back or loaded again in between."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from dsh.events import decode_event_line, encode_event
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.transcript import find_index as find_module
from dsh.transcript.find import find_in_transcript
from dsh.transcript.find_index import FindIndex
from dsh.web.find_route import FindIndexes
from tests.agent.log_ops import apply_op, log_ops
from tests.helpers import append_chat_turn, new_session
from tests.web.conftest import WebEnv


def counted_feeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every event a transcript projector is fed, counted (the find route's work)."""
    fed = [0]
    feed = find_module.TranscriptProjector.feed

    def counting(self: Any, event: Any) -> Any:
        fed[0] += 1
        return feed(self, event)

    monkeypatch.setattr(find_module.TranscriptProjector, "feed", counting)
    return fed


def test_find_folds_a_log_once_then_only_what_was_appended(
    client: TestClient, env: WebEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = Session(env.store.create(cwd=str(env.workspace)))
    for i in range(6):
        append_chat_turn(writer, f"question {i}", f"answer {i}")
    sid, logged = writer.id, len(writer.events)
    fed = counted_feeds(monkeypatch)

    def found(query: str) -> list[str]:
        body = client.get(f"/api/sessions/{sid}/find", params={"q": query}).json()
        return [hit["snippet"] for hit in body["hits"]]

    assert found("answer") == [f"answer {i}" for i in range(6)]
    assert fed[0] == logged  # the whole log, once
    assert found("question 3") == ["question 3"]
    assert fed[0] == logged  # the next query: nothing folded again
    append_chat_turn(writer, "question 6", "a new answer")  # another process appends
    writer.close()
    assert found("answer") == [*(f"answer {i}" for i in range(6)), "a new answer"]
    assert fed[0] == len(writer.events)  # the appended events alone were folded in


queries = st.sampled_from(
    ["ok", "o", "e", "re", "the", "a.txt", "done", "list", "summary", "state s", "zz", "e\x00o"]
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(log_ops, min_size=1, max_size=3)),
        st.tuples(st.just("find"), queries, st.integers(1, 6)),
        st.tuples(st.just("reload")),  # the log loaded again: the same events, new objects
        st.tuples(st.just("replace")),  # another log in its place (repaired, rewritten)
        st.tuples(st.just("cut"), st.integers(0, 60)),  # a log cut back
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps)
def test_the_kept_index_answers_as_a_fresh_search(steps: list[tuple[Any, ...]]) -> None:
    store = MemoryStore()
    session = new_session(store)
    applied: list[tuple[tuple[Any, ...], int]] = []
    index = FindIndex()
    shown: list[Any] = []  # the log as the server reads it now
    for number, step in enumerate(steps):
        if step[0] == "append":
            for op in step[1]:
                if op[0] != "reopen":
                    apply_op(session, op, number)
                    applied.append((op, number))
            shown = [*session.events]
        elif step[0] == "replace":  # a longer log, another turn first: nothing of it indexed
            session = new_session(store)
            append_chat_turn(session, "zz swapped in", "zz")
            for op, at in applied:
                apply_op(session, op, at)
            shown = [*session.events]
        elif step[0] == "reload":
            shown = [decode_event_line(encode_event(e), line=e.seq + 1) for e in shown]
        elif step[0] == "cut":
            shown = shown[: step[1]]
        for query in (step[1], "e") if step[0] == "find" else ("e",):
            limit = step[2] if step[0] == "find" else 500
            assert index.find(shown, query, limit=limit) == find_in_transcript(
                shown, query, limit=limit
            )


def test_the_indexes_kept_are_the_last_searched_within_their_budget() -> None:
    store = MemoryStore()
    session = new_session(store)
    append_chat_turn(session, "x" * 400, "y" * 400)
    indexes = FindIndexes(kept=2, chars=2_000)
    for name in ("a", "b", "c"):
        indexes.of(name).find(session.events, "x")
    assert "a" not in indexes and "b" in indexes and "c" in indexes  # two at most
    indexes.of("b")  # searched again: the newest
    assert "b" in indexes and "c" in indexes
    small = FindIndexes(kept=8, chars=1_000)  # each index holds about 800 folded characters
    for name in ("a", "b"):
        small.of(name).find(session.events, "x")
        small.trim()  # as the route does after each search
    assert "a" not in small and "b" in small
    small.of("c")  # the one asked for stays whatever it holds
    assert "c" in small
