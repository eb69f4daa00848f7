"""The session-info endpoint's stats of a stored session are computed once per load of the log
and always equal a fresh ``session_stats`` of what is on disk."""

from __future__ import annotations

from dsh.surface import Session
from dsh.web import sessions as web_sessions
from tests.helpers import append_chat_turn, new_session
from tests.web.builders import run_apart
from tests.web.conftest import make_env


def test_stored_info_stats_are_cached_per_load_and_never_stale(tmp_path, monkeypatch):
    env = make_env(tmp_path)
    with new_session(env.store) as writer:
        append_chat_turn(writer, "hello there", "hi")
    registry = env.registry()
    calls: list[int] = []
    real = web_sessions.session_stats

    def counted(events):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(events)

    monkeypatch.setattr(web_sessions, "session_stats", counted)
    first = run_apart(registry.info(writer.id))
    again = run_apart(registry.info(writer.id))
    assert first == again and len(calls) == 1  # the unchanged log is not summed again
    assert first["title"] == "hello there"
    with Session.open(env.store, writer.id, writable=True) as more:
        append_chat_turn(more, "second", "reply")
    changed = run_apart(registry.info(writer.id))
    fresh = real(Session.open(env.store, writer.id).events)
    assert changed["stats"]["events"] == fresh.events > first["stats"]["events"]
    assert changed["stats"]["turns"] == fresh.turns == 2
    assert len(calls) == 2
