"""The engine's log index and ``Session.of_type`` equal a fresh scan of the log, whether built
from a session just opened (the per-type index, no log scan) or kept up as events commit."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.engine import _LogIndex
from dsh.events import (
    CompactionEnd,
    CompactionPlan,
    CompactionStart,
    Event,
    TurnEnd,
    TurnEndReason,
    TurnStart,
)
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import new_session, user_message

OPS = ["turn-start", "turn-end", "start", "end", "plan", "user", "reopen"]
IDS = ["a", "b", "c"]


def _state(index: _LogIndex) -> tuple[object, ...]:
    starts = {k: v.seq for k, v in index.open_starts.items()}
    plan = index.last_plan.seq if index.last_plan is not None else None
    return starts, index.last_end_seed, plan, index.turn_open, index.scanned


def _scanned(session: Session, monkeypatch: pytest.MonkeyPatch) -> _LogIndex:
    """The reference: every event visited in order (the bootstrap switched off)."""
    with monkeypatch.context() as patch:
        patch.setattr(_LogIndex, "_bootstrap", lambda self, session: None)
        index = _LogIndex()
        index.update(session)
    return index


def _apply(session: Session, op: str, name: str) -> None:
    if op == "turn-start":
        session.append(TurnStart(turn=1))
    elif op == "turn-end":
        session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="completed")))
    elif op == "start":
        session.append(CompactionStart(compaction_id=name, turn=None))
    elif op == "end":
        session.append(CompactionEnd(compaction_id=name, turn=None))
    elif op == "plan":
        session.append(CompactionPlan(pass_id=name, regions=()))
    else:
        session.append(user_message(name))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(IDS)), max_size=25))
def test_index_equals_a_full_scan_however_it_was_built(ops):
    with pytest.MonkeyPatch.context() as monkeypatch, tempfile.TemporaryDirectory() as home:
        store = JsonlStore(Path(home))
        session = new_session(store)
        live = _LogIndex()
        for op, name in ops:
            if op == "reopen":  # the next append logs session/end-seed first
                session.close()
                session = Session.open(store, session.id, writable=True)
                live = _LogIndex()
            else:
                _apply(session, op, name)
            live.update(session)
            opened = _LogIndex()
            opened.update(session)
            assert _state(live) == _state(opened) == _state(_scanned(session, monkeypatch))
            for kind in {type(e) for e in session.events}:
                assert list(session.of_type(kind)) == [e for e in session.events if type(e) is kind]
        session.close()
        with Session.open(store, session.id) as reopened:
            fresh = _LogIndex()
            fresh.update(reopened)
            assert _state(fresh) == _state(_scanned(reopened, monkeypatch))


class _NoScan(Sequence[Event]):
    """A log that may be measured but not read: any scan of it fails the test."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice) and index.start == len(self._events):
            return []
        raise AssertionError("the log was scanned")


def test_the_first_update_after_opening_does_not_scan_the_log(tmp_path, monkeypatch):
    store = JsonlStore(tmp_path)
    session = new_session(store)
    for i in range(200):
        session.append(TurnStart(turn=i + 1))
        session.append(user_message(f"q{i}"))
    session.append(CompactionStart(compaction_id="x", turn=None))
    session.close()
    with Session.open(store, session.id) as opened:
        events = _NoScan(opened.events)
        monkeypatch.setattr(Session, "events", property(lambda self: events))
        index = _LogIndex()
        index.update(opened)
        assert list(index.open_starts) == ["x"] and index.turn_open
