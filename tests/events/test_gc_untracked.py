"""Logged values are invisible to the cyclic collector: opening a long log adds almost nothing
for a full collection to walk (the structs are ``gc=False``; reference counting frees them)."""

from __future__ import annotations

import gc

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session


def test_an_opened_log_adds_few_objects_for_the_collector(tmp_path):
    store = JsonlStore(tmp_path)
    with new_session(store) as session:
        for i in range(150):
            append_chat_turn(session, f"question {i}", f"answer {i}")
            append_tool_turn(session, f"look {i}", [("read_file", '{"path":"a"}', "text")], "ok")
    gc.collect()
    before = len(gc.get_objects())
    opened = Session.open(store, session.id)
    gc.collect()
    added = len(gc.get_objects()) - before
    events = opened.events
    assert len(events) > 2000
    assert not any(gc.is_tracked(e) for e in events)
    assert not gc.is_tracked(events[-3].data)  # nested values too
    assert added < len(events) // 20  # a few containers, not one object per event
    opened.close()
