"""The loop's log scan: turn count and latest route equal a fresh scan, and the first update
after opening a session reads the per-type index instead of the log."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent.log_scan import LogScan
from dsh.events import RequestContext, RequestContextEvent, TurnStart, TurnStartEvent
from dsh.store import MemoryStore
from dsh.surface import Session
from tests.compaction.test_log_index import _NoScan
from tests.helpers import new_session, user_message


def _context(model: str) -> RequestContext:
    return RequestContext(provider="scripted", model=model)


def _fresh(session: Session) -> tuple[int, RequestContext | None]:
    events = session.events
    contexts = [e.data for e in events if isinstance(e, RequestContextEvent)]
    return sum(isinstance(e, TurnStartEvent) for e in events), (contexts[-1] if contexts else None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["turn", "context-a", "context-b", "user"]), max_size=20))
def test_scan_equals_a_fresh_scan(ops):
    store = MemoryStore()
    with new_session(store) as session:
        live = LogScan()
        for op in ops:
            if op == "turn":
                session.append(TurnStart(turn=1))
            elif op == "user":
                session.append(user_message("hi"))
            else:
                session.append(_context(op))
            live.update(session)
            assert (
                (live.turns, live.route)
                == (LogScan().update(session).turns, LogScan().update(session).route)
                == _fresh(session)
            )


def test_the_first_update_after_opening_does_not_scan_the_log(monkeypatch):
    store = MemoryStore()
    with new_session(store) as session:
        for i in range(100):
            session.append(TurnStart(turn=i + 1))
        session.append(_context("m"))
    opened = Session.open(store, session.id)
    events = _NoScan(opened.events)
    monkeypatch.setattr(Session, "events", property(lambda self: events))
    scan = LogScan().update(opened)
    assert scan.turns == 100 and scan.route == _context("m")
