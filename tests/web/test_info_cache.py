"""The session-info endpoint's stats of a stored session are counted once, when the log is
loaded (by the registry's ``ContextFold`` of it, from the per-type index), then only what other
processes append is folded in; they always equal a fresh ``session_stats`` of what is on disk."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from dsh.agent import context_fold
from dsh.store.appended import AppendedReader
from dsh.surface import Session
from dsh.transcript.stats import session_stats
from dsh.web.read_cache import ReadCache
from tests.helpers import append_chat_turn, new_session
from tests.web.builders import run_apart
from tests.web.conftest import make_env


def test_stored_info_stats_are_counted_once_then_folded_on_and_never_stale(tmp_path, monkeypatch):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "hello there", "hi")
    registry = env.registry()
    calls: list[int] = []
    real = context_fold.stats_by_type

    def counted(events, of_type):  # type: ignore[no-untyped-def]
        calls.append(events)
        return real(events, of_type)

    monkeypatch.setattr(context_fold, "stats_by_type", counted)
    first = run_apart(registry.info(writer.id))
    again = run_apart(registry.info(writer.id))
    assert first == again and len(calls) == 1  # the unchanged log is not counted again
    assert first["title"] == "hello there"
    assert (
        first["stats"]["events"] == session_stats(Session.open(env.store, writer.id).events).events
    )
    with Session.open(env.store, writer.id, writable=True) as more:
        append_chat_turn(more, "second", "reply")
    changed = run_apart(registry.info(writer.id))
    fresh = session_stats(Session.open(env.store, writer.id).events)
    assert changed["stats"]["events"] == fresh.events > first["stats"]["events"]
    assert changed["stats"]["turns"] == fresh.turns == 2
    assert changed["stats"]["inputTokens"] == fresh.input_tokens
    assert changed["stats"]["modelCalls"] == fresh.model_calls
    assert len(calls) == 1  # the appended turn was folded in: the log was not counted again


def test_two_askers_missing_the_read_cache_at_once_load_the_log_once(tmp_path, monkeypatch):
    """A page asks for the info and the newest history page together: the second asker waits
    for the first one's load instead of decoding the whole log a second time beside it."""
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "hello there", "hi")
    loaded: list[str] = []
    first_in_load = threading.Event()
    second_asked = threading.Event()
    second_loaded = threading.Event()
    real_load = AppendedReader.load

    def slow_load(self, session_id):  # type: ignore[no-untyped-def]
        loaded.append(session_id)
        if len(loaded) == 1:  # the first load: the second asker arrives meanwhile
            first_in_load.set()
            second_asked.wait(10)
            second_loaded.wait(1)  # set only if the second asker reads the log too
        else:
            second_loaded.set()
        return real_load(self, session_id)

    def held() -> object:
        with cache.held(writer.id) as session:
            return session

    def second_held() -> object:
        second_asked.set()
        return held()

    monkeypatch.setattr(AppendedReader, "load", slow_load)
    cache = ReadCache(env.store)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(held)
        assert first_in_load.wait(10)
        second = pool.submit(second_held)
        results = [first.result(), second.result()]
    assert loaded == [writer.id]
    assert results[0] is results[1]
